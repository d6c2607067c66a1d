"""Whatever has the keyboard focus is ringed, in both appearances: Fusion's own mark is a
one-pixel line, and on the default button (Send) and the transcript there is none."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support.flow_harness import FlowWindow, GatedScript

from app.ui.widgets.colors import contrast
from app.ui.widgets.focus_ring import RING_CONTRAST, RING_PX, ring_colour, shown_part
from app.ui.window.appearance import dark_palette, light_palette

PRESSES = 40


@pytest.fixture
def flow(qtbot, gemma_info, tmp_path):
    window = FlowWindow(qtbot, GatedScript(gemma_info), tmp_path)
    window.send_and_wait("Hello")
    yield window
    window.close()


def test_tab_rings_each_control_it_stops_on(flow):
    window = flow.window
    ring = window.focus_ring
    window.composer.edit.setFocus()
    ringed = set()
    for _ in range(PRESSES):
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        focused = QApplication.focusWidget()
        assert ring.target is focused and ring.isVisible()
        assert ring.geometry().adjusted(RING_PX, RING_PX, -RING_PX, -RING_PX) == shown_part(focused, window)
        ringed.add(focused)
        if focused is window.composer.edit:
            break
    assert {window.composer.button, window.chat_header.combo, window.conversations.list} <= ringed


def test_a_click_does_not_ring_what_it_focuses(flow):
    window = flow.window
    window.composer.edit.setFocus()
    QTest.mouseClick(window.conversations.search, Qt.MouseButton.LeftButton)
    assert window.conversations.search.hasFocus() and window.focus_ring.target is None


@pytest.mark.parametrize("palette", [light_palette, dark_palette], ids=["light", "dark"])
def test_the_ring_stands_out_in_both_appearances(palette):
    colours = palette()
    ring = ring_colour(colours)
    for role in (colours.ColorRole.Window, colours.ColorRole.Base):
        assert contrast(ring, colours.color(colours.ColorGroup.Active, role)) >= RING_CONTRAST
