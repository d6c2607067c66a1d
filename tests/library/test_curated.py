"""The suggested-models data file: the shipped one reads as typed entries; a bad one says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.library.curated import CuratedListError, CuratedModel, load_curated

GOOD = {
    "name": "Tiny", "repo_id": "someone/Tiny-GGUF", "file": "Tiny-Q4_K_M.gguf", "quant": "Q4_K_M",
    "size_bytes": 1000, "parameters_billions": 0.5, "context_length": 2048, "licence": "MIT",
    "summary": "A test model.",
}


def write(tmp_path, document) -> Path:
    path = tmp_path / "curated.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return path


def test_the_shipped_list_names_small_instruct_models_with_what_each_needs():
    models = load_curated()
    names = {model.name for model in models}
    assert {"Qwen3 0.6B", "Qwen3 1.7B", "Qwen3 4B", "Llama 3.2 1B Instruct", "Llama 3.2 3B Instruct",
            "Gemma 3 1B", "Gemma 3 4B", "Phi-4-mini-instruct", "SmolLM2 1.7B Instruct"} <= names
    for model in models:
        assert model.file.endswith(".gguf") and model.quant in model.file
        assert 100e6 < model.size_bytes < 5e9, model  # small models: they run on an ordinary computer
        assert model.parameters_billions < 5 and model.context_length >= 2048 and model.licence and model.summary
    assert len({model.repo_id for model in models}) == len(models)


def test_a_good_entry_is_typed(tmp_path):
    (model,) = load_curated(write(tmp_path, {"models": [GOOD]}))
    assert model == CuratedModel(**GOOD) and model.parameters == "0.5B"


@pytest.mark.parametrize("document, message", [
    ("{not json", "is not valid JSON"),
    ({"entries": []}, "has no \"models\" list"),
    ({"models": ["Qwen"]}, "Suggested model 1 in"),
    ({"models": [GOOD, {k: v for k, v in GOOD.items() if k != "file"}]}, "Suggested model 2 in"),
    ({"models": [dict(GOOD, size_bytes="1 GB")]}, "size_bytes should be a whole number"),
    ({"models": [dict(GOOD, size_bytes=True)]}, "size_bytes should be a whole number"),
    ({"models": [dict(GOOD, colour="red")]}, "has unknown fields colour"),
    ({"models": [dict(GOOD, repo_id="no-owner")]}, "is not owner/name"),
    ({"models": [dict(GOOD, file="weights.bin")]}, "is not the name of a .gguf file"),
    ({"models": [dict(GOOD, size_bytes=0)]}, "must be above zero"),
])
def test_a_bad_file_is_a_clear_error(tmp_path, document, message):
    with pytest.raises(CuratedListError, match=message.replace("(", r"\(").replace(".", r"\.")):
        load_curated(write(tmp_path, document))


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CuratedListError, match="can't be read"):
        load_curated(tmp_path / "nowhere.json")

