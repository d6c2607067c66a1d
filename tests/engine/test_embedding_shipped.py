"""The default embedding model without its package, as a bundle has it: `make bundle` ships the
conversion (GGUF, tokenizer.json, sha256) and app/owners/paths.py points at it when frozen. It is
used as it is, never converted (there is no zip to convert from), and a damaged one is an error
rather than a model loaded. tests/test_bundle.py proves the same with the frozen app itself."""

from __future__ import annotations

import shutil

import pytest
from support.model_files.embedding_model import MiniLM, ensure_minilm

from app.engine.embedding import default_model
from app.engine.embedding.default_model import EmbeddingModelUnavailable, ensure_default_embedding_model


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    return ensure_minilm()


@pytest.fixture
def no_package(monkeypatch):
    """As in a bundle: the package (and its zip) cannot be found."""

    def missing():
        raise EmbeddingModelUnavailable("The default embedding model is not installed.")

    monkeypatch.setattr(default_model, "source_zip", missing)


def _shipped(minilm: MiniLM, tmp_path):
    folder = tmp_path / "embedding-models"
    shutil.copytree(minilm.gguf.parent, folder)
    return folder, sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir())


def test_the_shipped_conversion_is_used_as_it_is(minilm, no_package, tmp_path):
    folder, before = _shipped(minilm, tmp_path)
    model = ensure_default_embedding_model(folder)
    assert (model.gguf, model.tokenizer_json) == (folder / minilm.gguf.name, folder / minilm.tokenizer_json.name)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir()) == before  # nothing converted
    assert default_model.default_embedding_model(folder) == model.gguf


def test_a_damaged_shipped_conversion_is_an_error_not_a_model(minilm, no_package, tmp_path):
    folder, _ = _shipped(minilm, tmp_path)
    damaged = folder / minilm.gguf.name
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(EmbeddingModelUnavailable, match="damaged or incomplete"):
        ensure_default_embedding_model(folder)
    damaged.write_bytes(minilm.gguf.read_bytes())
    (folder / minilm.tokenizer_json.name).unlink()  # an incomplete set is no better
    with pytest.raises(EmbeddingModelUnavailable, match="damaged or incomplete"):
        ensure_default_embedding_model(folder)


def test_without_package_or_conversion_it_says_the_package_is_missing(no_package, tmp_path):
    with pytest.raises(EmbeddingModelUnavailable, match="not installed"):
        ensure_default_embedding_model(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_another_converters_conversion_is_not_taken_for_this_ones(minilm, no_package, tmp_path):
    folder, _ = _shipped(minilm, tmp_path)
    for path in list(folder.iterdir()):
        path.rename(folder / path.name.replace(f"-c{default_model.CONVERTER_VERSION}.",
                                               f"-c{default_model.CONVERTER_VERSION + 1}."))
    with pytest.raises(EmbeddingModelUnavailable, match="not installed"):
        ensure_default_embedding_model(folder)


def test_a_frozen_hearth_looks_beside_its_executable_not_in_the_cache(monkeypatch, tmp_path):
    import sys

    from app.owners import paths

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "hearth"))
    assert paths.embedding_models_dir() == tmp_path / "embedding-models"
    homes = paths.model_homes()
    assert paths.embedding_models_dir() not in (homes.shipped, homes.user)  # the model picker's folders
