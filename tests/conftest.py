"""Suite-wide set-up: headless Qt, a throwaway profile, and the real default model."""

from __future__ import annotations

import os
import tempfile

# Before anything imports Qt or reads a path: tests never touch the user's own profile.
os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ["HEARTH_HOME"] = tempfile.mkdtemp(prefix="hearth-test-home-")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def gemma_path():
    """The real Gemma 3 270M (the embedded default), assembled from its package on first use."""
    from app.library.default_model import ensure_default_model

    path = ensure_default_model()
    assert path is not None and path.exists(), "the default model package is a dependency"
    return path
