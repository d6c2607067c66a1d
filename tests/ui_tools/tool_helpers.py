"""Helpers for the tool widgets' tests."""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.tool_servers.approval import PendingCall
from app.ui.chat.tool_card import ToolCallCard

WEATHER = PendingCall("call_w", "weather", "get_weather", '{\n  "city": "Zürich"\n}', read_only=True)


def active_window(qtbot, widget: QWidget, width: int = 600, height: int = 400) -> QWidget:
    """`widget` in a shown, active window of its own (the keyboard reaches it); the caller keeps
    the window (qtbot holds it weakly)."""
    window = QWidget()
    qtbot.addWidget(window)
    QVBoxLayout(window).addWidget(widget)
    window.resize(width, height)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    return window


def shown_card(qtbot, pending: PendingCall = WEATHER, awaiting: bool = True) -> ToolCallCard:
    """A card in a shown, active window, as wide as a chat column, the keyboard on it."""
    card = ToolCallCard(pending, awaiting)
    card.holder = active_window(qtbot, card)  # qtbot keeps only a weak reference to the window
    card.take_focus()
    return card
