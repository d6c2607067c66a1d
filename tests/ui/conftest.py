"""Fixtures for the UI tests."""

from __future__ import annotations

import os
import sys

import pytest
from support.hearth_process import HearthLauncher


@pytest.fixture
def hearth(tmp_path):
    not_a_model = tmp_path / "not-a-model.gguf"
    not_a_model.write_bytes(b"no weights to load: the window alone is being tested")
    home = tmp_path / "home"
    launcher = HearthLauncher(
        home, [sys.executable, "-m", "app", "--model", str(not_a_model)],
        dict(os.environ, QT_QPA_PLATFORM="offscreen", HEARTH_HOME=str(home)),
    )
    yield launcher
    for process in launcher.processes:
        if process.poll() is None:
            process.kill()
            process.wait()
