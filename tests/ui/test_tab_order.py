"""Tab takes the main window's regions in the order issue #11 asks for: the message box, Send,
then the transcript above them, the model and its parameters, and the conversations: what a
user is doing first, the rest after."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.focus_round import go_round, region_of, regions
from support.scripted_window import ScriptedWindow


@pytest.fixture
def opened(qtbot, scripted_models, tmp_path, gemma_path):
    window = ScriptedWindow(qtbot, scripted_models, tmp_path, gemma_path)
    window.send("Hello")
    yield window
    window.close()


@pytest.mark.parametrize("key", [Qt.Key.Key_Tab, Qt.Key.Key_Backtab], ids=["Tab", "Shift+Tab"])
def test_tab_takes_the_regions_in_reading_order(opened, key):
    window = opened.window
    entered = ["the message box"]
    for widget in go_round(window, key):
        region = region_of(widget, window)
        if region is not None and region not in entered:
            entered.append(region)
    wanted = list(regions(window))
    if key == Qt.Key.Key_Backtab:
        wanted = wanted[:1] + wanted[:0:-1]  # the same round, backwards
    assert entered == wanted
