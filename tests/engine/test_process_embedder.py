"""The embedding model in a process of its own (#29): the window's documents and `hearth serve`'s
/v1/embeddings run it there, so a crash in llama.cpp costs the child, never the window or the
server. The real all-MiniLM-L6-v2 GGUF, in the child and in process, side by side."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.model_files.embedding_model import ensure_minilm

from app.engine.gguf.modelfile import ModelFileError
from app.engine.llama.embedder import LlamaEmbedder
from app.engine.process.embedder import ProcessEmbedder

TEXTS = ["Prune roses in late winter.", "The lighthouse keeper climbed the stairs.", "Élan, naïve café: ünïcode."]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def minilm() -> Path:
    return ensure_minilm().gguf


def test_the_child_gives_the_same_vectors_and_token_counts_as_llama_cpp_in_process(minilm):
    child, here = ProcessEmbedder(minilm), LlamaEmbedder(minilm)
    try:
        assert (child.name, child.dims, child.max_tokens) == (here.name, here.dims, here.max_tokens)
        vectors = child.embed(TEXTS)
        assert vectors.dtype == np.float32 and vectors.shape == (3, here.dims)
        np.testing.assert_array_equal(vectors, here.embed(TEXTS))
        assert [child.count_tokens(text) for text in TEXTS] == [here.count_tokens(text) for text in TEXTS]
        assert child.embed([]).shape == (0, here.dims)
    finally:
        child.close()
        here.close()


def test_a_child_killed_between_calls_is_started_again_for_the_next(minilm):
    embedder = ProcessEmbedder(minilm)
    try:
        before = embedder.embed(TEXTS[:1])
        first = embedder.pid
        os.kill(first, signal.SIGKILL)
        np.testing.assert_array_equal(embedder.embed(TEXTS[:1]), before)
        assert embedder.pid != first
    finally:
        embedder.close()


def test_a_file_that_is_no_model_is_refused_as_in_process(tmp_path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(ModelFileError):
        ProcessEmbedder(fake)


def test_a_process_that_embeds_through_the_child_never_loads_llama_cpp(minilm):
    """What the window and the server rely on: asking the child leaves libllama out of the asker."""
    script = (
        "import sys; from pathlib import Path\n"
        "from app.engine.process.embedder import ProcessEmbedder\n"
        f"e = ProcessEmbedder(Path({str(minilm)!r})); e.embed(['hello']); e.close()\n"
        "maps = Path('/proc/self/maps').read_text()\n"
        "print('llama_cpp' in sys.modules, 'libllama' in maps)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False False", out.stderr
