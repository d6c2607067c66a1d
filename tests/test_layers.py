"""The walls between the rooms (docs/architecture.md), checked in fresh interpreters: what
importing a module really loads. tests/test_walls.py checks the same from the source, for every
module and every import statement; this is the proof that the two agree where it matters most."""

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


def test_the_window_loads_neither_llama_cpp_nor_the_servers_starlette():
    loaded = imported_after("app.ui.window.main_window")
    assert "llama_cpp" not in loaded
    assert not {"starlette", "uvicorn"} & loaded  # until it serves: the Serve dialog checks origins as text


@pytest.mark.parametrize("module", [
    "app.engine.types", "app.engine.backend", "app.engine.opening", "app.engine.load_checks",
    "app.engine.memory_plan", "app.store", "app.common.newest", "app.library.scan", "app.library.default_model",
    "app.conversation.history", "app.serve.app", "app.serve.queue", "app.tool_servers.supervisor",
    "app.tool_servers.catalog", "app.tool_servers.runner",
])
def test_the_rooms_below_the_owners_import_neither_llama_cpp_nor_qt(module):
    loaded = imported_after(module)
    assert "llama_cpp" not in loaded and "PySide6" not in loaded


@pytest.mark.parametrize("module", ["app.cli.main", "app.cli.conversation_chat"])
def test_the_command_line_loads_no_widgets_nor_the_windows_owner_objects(module):
    loaded = imported_after(module)
    assert not {"PySide6.QtWidgets", "PySide6.QtGui", "app.owners.bridge", "app.owners.chat_session"} & loaded
    assert "llama_cpp" not in loaded


def test_the_tool_servers_load_the_mcp_sdk_only_on_their_own_thread():
    """The SDK takes most of a second to import: making ToolServers, reading its statuses and
    building a catalog (the window's part) leave it to the servers' thread."""
    loaded = imported_after("app.tool_servers.supervisor")
    assert not {"mcp", "mcp_types", "httpx2"} & loaded
    assert "mcp" not in imported_after("app.tool_servers.catalog")
