"""Fixtures for the family conformance suite: the model files, and one engine per model.

The tiny models are generated on first use into tests/.cache/tiny-models/<key>/ (see
support/model_files/tiny_models.py); Gemma 3 is the real 270M model, shared with the rest of the suite.
Engines are loaded once per session and kept, so every test of a family reuses one load.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.model_files import tiny_models as tiny

from app.engine.llama.generator import Engine
from app.engine.types import LoadOptions

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture(scope="session")
def references() -> dict:
    return json.loads((DATA / "reference_renderings.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def model_files(gemma_path) -> dict[str, tuple[Path, Path]]:
    """family -> (model file, the same file without a chat template)."""
    files = dict(tiny.ensure_tiny_models())
    gemma = Path(gemma_path)
    if tiny.read_metadata(gemma, frozenset({"tokenizer.chat_template"})):  # today's file has none
        bare = tiny.CACHE_ROOT / f"{gemma.stem}.{gemma.stat().st_size}.no-template.gguf"
        if not bare.exists():
            partial = bare.with_suffix(".partial")
            tiny.copy_without_chat_template(gemma, partial)
            partial.replace(bare)
    else:
        bare = gemma
    files[tiny.GEMMA_FAMILY] = (gemma, bare)
    return files


@pytest.fixture(scope="session")
def engines(model_files):
    """family -> loaded Engine, created on first use and closed at the end of the session."""
    loaded: dict[str, Engine] = {}

    class _Engines:
        def __getitem__(self, family: str) -> Engine:
            if family not in loaded:
                loaded[family] = Engine(model_files[family][0], LoadOptions(n_ctx=tiny.TEST_N_CTX))
            return loaded[family]

    yield _Engines()
    for engine in loaded.values():
        engine.close()
