"""Going round the main window with Tab or Shift+Tab, from the message box back to it, and
naming the region each stop is in."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from support.widget_walk import describe

MAX_PRESSES = 60  # far more than the window's controls: more means a trap


def regions(window) -> dict[str, QWidget]:
    """The window's regions, in the Tab order issue #11 asks for."""
    return {
        "the message box": window.composer.edit,
        "Send": window.composer.button,
        "the chat transcript": window.chat,
        "the side panel": window.side_panel,
        "the conversations": window.conversations,
    }


def region_of(widget: QWidget, window) -> str | None:
    for name, region in regions(window).items():
        if widget is region or region.isAncestorOf(widget):
            return name
    return None


def go_round(window, key: Qt.Key) -> list[QWidget]:
    """Press key from the message box until the focus is back in it; the widgets it visited.
    Fails the test, naming the last stops, if it does not come back."""
    window.activateWindow()
    window.composer.edit.setFocus()
    visited = []
    focused = QApplication.focusWidget()
    for _ in range(MAX_PRESSES):
        if focused is None:  # QTest would abort the process on a key sent to no widget
            pytest.fail(f"after {describe(visited[-1]) if visited else 'the message box'}, no widget had the focus")
        QTest.keyClick(focused, key)
        focused = QApplication.focusWidget()
        if focused is window.composer.edit:
            return visited
        visited.append(focused)
    stuck = "\n  ".join(describe(w) if w is not None else "(nothing)" for w in visited[-8:])
    pytest.fail(f"{key.name} from the message box did not come back to it in {MAX_PRESSES} presses; "
                f"the last places it went:\n  {stuck}")
