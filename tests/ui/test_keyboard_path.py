"""Tab from the message box goes round the whole window and comes back to it: it visits every
region (the message box, Send, the chat transcript, the side panel, the conversations) and no
control keeps it (the model table once cycled through its cells forever). Shift+Tab goes round
the other way."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.focus_round import go_round, region_of, regions
from support.scripted_window import ScriptedWindow
from support.widget_walk import describe


@pytest.fixture
def opened(qtbot, scripted_models, tmp_path, gemma_path):
    window = ScriptedWindow(qtbot, scripted_models, tmp_path, gemma_path)
    window.send("Hello")  # a reply in the transcript, a conversation in the list
    yield window
    window.close()


@pytest.mark.parametrize("key", [Qt.Key.Key_Tab, Qt.Key.Key_Backtab], ids=["Tab", "Shift+Tab"])
def test_tab_goes_round_every_region_and_back(opened, key):
    window = opened.window
    visited = go_round(window, key)
    seen = {region_of(widget, window) for widget in visited} | {"the message box"}
    missing = [name for name in regions(window) if name not in seen]
    assert not missing, f"{key.name} never reached {missing}; it went to:\n  " + "\n  ".join(
        describe(w) for w in visited)
