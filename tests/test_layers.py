"""The walls between the rooms (docs/architecture.md), checked in fresh interpreters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_after(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(result.stdout.split())


def test_the_window_does_not_load_llama_cpp():
    assert "llama_cpp" not in imported_after("app.ui.window.main_window")


@pytest.mark.parametrize("module", ["app.engine.types", "app.engine.backend", "app.engine.llama.load_checks", "app.store", "app.common.newest"])
def test_value_types_and_the_store_import_neither_llama_cpp_nor_qt(module):
    loaded = imported_after(module)
    assert "llama_cpp" not in loaded and "PySide6" not in loaded
