"""The real default embedding model for the tests: all-MiniLM-L6-v2 from its installed package,
converted by app/engine/embedding/ into tests/.cache/embedding-model/<key>/ (the key hashes the
converter's source, so a change to it converts again), with the Hugging Face folder unpacked
beside it for the numpy reference (support/bert_reference.py)."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from app.engine.embedding import convert, default_model
from app.engine.embedding.default_model import ensure_default_embedding_model, source_zip
from support.model_files import tiny_models as tiny

CACHE_ROOT = tiny.TESTS / ".cache" / "embedding-model"


@dataclass(frozen=True)
class MiniLM:
    gguf: Path
    tokenizer_json: Path
    source_dir: Path  # the Hugging Face folder: config.json, model.safetensors, tokenizer.json


def _key() -> str:
    digest = hashlib.sha256()
    for module in (convert, default_model):
        digest.update(Path(module.__file__).read_bytes())
    digest.update(default_model.sha256_of(source_zip()).encode())
    return digest.hexdigest()[:16]


def _build(directory: Path) -> None:
    ensure_default_embedding_model(directory / "converted")
    with zipfile.ZipFile(source_zip()) as archive:
        archive.extractall(directory / "source")


def ensure_minilm() -> MiniLM:
    folder = tiny.cached_build(CACHE_ROOT, _key(), _build)
    model = ensure_default_embedding_model(folder / "converted")  # checked; converts again if damaged
    return MiniLM(model.gguf, model.tokenizer_json, folder / "source")
