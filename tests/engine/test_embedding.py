"""The embedding model: all-MiniLM-L6-v2 converted to GGUF (app/engine/embedding/convert.py) and
run by llama.cpp (app/engine/llama/embedder.py) gives the embeddings the original weights give
(a numpy forward pass from the safetensors, support/bert_reference.py), and the cache of the
conversion survives damage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.bert_reference import BertReference
from support.model_files.embedding_model import MiniLM, ensure_minilm

from app.engine.embedding.convert import ConversionError, convert_bert
from app.engine.embedding.default_model import ensure_default_embedding_model, source_zip
from app.engine.gguf.reading import inspect_model
from app.engine.llama.embedder import LlamaEmbedder

SENTENCES = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Quarterly earnings fell short of the analysts' forecasts.",
    "Résumé of a naïve café owner in São Paulo!",
    "def square(x): return x ** 2  # a Python function",
]


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    return ensure_minilm()


@pytest.fixture(scope="module")
def embedder(minilm):
    model = LlamaEmbedder(minilm.gguf)
    yield model
    model.close()


def test_the_gguf_says_what_llama_cpp_needs(minilm, embedder):
    info = inspect_model(minilm.gguf)
    assert info.architecture == "bert"
    assert info.context_length == 512
    assert (embedder.dims, embedder.max_tokens) == (384, 512)
    assert minilm.gguf.stat().st_size < 50_000_000  # f16


def test_llama_cpp_embeds_as_the_original_weights_do(minilm, embedder):
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(minilm.tokenizer_json))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    reference = BertReference(minilm.source_dir)
    vectors = embedder.embed(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for sentence, vector in zip(SENTENCES, vectors):
        ids = tokenizer.encode(sentence).ids
        # The same tokens as the model's own tokenizer (the special ones aside).
        assert embedder.count_tokens(sentence) == len(ids) - 2
        cosine = float(vector @ reference.embed(ids))
        assert cosine >= 0.999, (sentence, cosine)


def test_similar_sentences_score_higher_than_unrelated_ones(embedder):
    cat, kitten, earnings, *_ = embedder.embed(SENTENCES)
    assert cat @ kitten > cat @ earnings + 0.3
    assert cat @ kitten > kitten @ earnings + 0.3


def test_a_batch_embeds_as_texts_one_by_one(embedder):
    together = embedder.embed(SENTENCES * 3)
    alone = np.stack([embedder.embed([s])[0] for s in SENTENCES])
    np.testing.assert_allclose(together, np.concatenate([alone] * 3), atol=1e-4)
    assert embedder.embed([]).shape == (0, 384)


def test_a_text_longer_than_the_context_is_truncated(embedder):
    long_text = "the index of documents grows with every folder " * 120
    assert embedder.count_tokens(long_text) > embedder.max_tokens
    (vector,) = embedder.embed([long_text])
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_a_damaged_cached_gguf_is_converted_again(minilm, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(minilm.gguf.parent, cache)
    damaged = cache / minilm.gguf.name
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    model = ensure_default_embedding_model(cache)
    assert model.gguf == damaged
    assert model.gguf.read_bytes() == minilm.gguf.read_bytes()
    # A truncated one too, and a missing checksum.
    damaged.write_bytes(bytes(data[:1000]))
    assert ensure_default_embedding_model(cache).gguf.stat().st_size == minilm.gguf.stat().st_size
    (cache / (minilm.gguf.name + ".sha256")).unlink()
    assert ensure_default_embedding_model(cache).gguf.read_bytes() == minilm.gguf.read_bytes()


def test_another_package_version_is_converted_again_and_the_old_one_removed(minilm, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(minilm.gguf.parent, cache)
    changed = tmp_path / "model.zip"
    shutil.copyfile(source_zip(), changed)
    with changed.open("ab") as f:
        f.write(b"\0")  # a zip with trailing bytes still opens; its sha256 differs
    model = ensure_default_embedding_model(cache, source=changed)
    assert model.gguf != cache / minilm.gguf.name and model.gguf.exists()
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [model.gguf.name, model.gguf.name + ".sha256", model.tokenizer_json.name])


def test_convert_refuses_a_model_that_is_not_bert(minilm, tmp_path):
    config = json.loads((minilm.source_dir / "config.json").read_text())
    config.update(model_type="llama", architectures=["LlamaForCausalLM"])
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="not a BERT embedding model.*LlamaForCausalLM"):
        convert_bert(tmp_path, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


def test_convert_refuses_truncated_weights(minilm, tmp_path: Path):
    for name in ("config.json", "tokenizer.json"):
        shutil.copyfile(minilm.source_dir / name, tmp_path / name)
    weights = (minilm.source_dir / "model.safetensors").read_bytes()
    (tmp_path / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    with pytest.raises(ConversionError, match="outside the file"):
        convert_bert(tmp_path, tmp_path / "out.gguf")
    assert list(tmp_path.glob("out.gguf*")) == []
