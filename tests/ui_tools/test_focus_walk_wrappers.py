"""Tab's walk round the focus chain (ui/window/focus_order.py) leaves Python's wrappers as they
were (#27). PySide makes what nextInFocusChain() returns a Python child of the widget it was
asked from; the walk left every wrapper the child of the one before it in the chain, so
deleting a live tool card invalidated the chat pane's scroll bar and document wrappers while
the pane lived ("Internal C++ object (QScrollBar) already deleted" from the pane's queued
scroll to the bottom)."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtWidgets import QApplication, QLineEdit, QPushButton, QTextBrowser, QVBoxLayout, QWidget
from support.chat_helpers import stream

from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.tool_servers.approval import PendingCall
from app.tool_servers.types import ToolOutcome
from app.ui.chat.tool_card import CardState
from app.ui.chat.view import ChatView, MessageView
from app.ui.window.focus_order import focusable_in, next_in_order

CALLED = ReplyStats(completion_tokens=12, stop_reason=StopReason.TOOL_CALLS)
ENDED = ReplyStats(completion_tokens=5, stop_reason=StopReason.END_OF_TURN)


class RegionWindow(QWidget):
    """A message box over a chat pane, Tab going round them as the main window's does."""

    def __init__(self) -> None:
        super().__init__()
        self.chat = ChatView()
        self.composer = QLineEdit()
        layout = QVBoxLayout(self)
        layout.addWidget(self.chat)
        layout.addWidget(self.composer)
        self.regions = [self.composer, self.chat]

    def focusNextPrevChild(self, next: bool) -> bool:
        target = next_in_order(self.regions, QApplication.focusWidget(), next)
        if target is None:
            return super().focusNextPrevChild(next)
        target.setFocus(Qt.FocusReason.TabFocusReason if next else Qt.FocusReason.BacktabFocusReason)
        return True


def deleted_later() -> None:
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def test_deleting_a_widget_the_walk_passed_leaves_the_wrappers_after_it_valid(qtbot):
    window = QWidget()
    qtbot.addWidget(window)
    early = QPushButton("Early", window)  # first in the chain
    text = QTextBrowser(window)  # after it
    bar, document = text.verticalScrollBar(), text.document()
    window.show()
    assert text in focusable_in(window)
    early.deleteLater()
    deleted_later()
    assert shiboken6.isValid(bar) and shiboken6.isValid(document) and shiboken6.isValid(text)
    bar.setValue(bar.maximum())  # usable, not "already deleted"
    assert focusable_in(window) == [text]


def test_a_card_answered_by_keyboard_then_cleared_leaves_the_pane_working(qtbot):
    window = RegionWindow()
    window.resize(700, 500)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    chat = window.chat
    chat.set_messages([MessageView(1, "user", "Weather?")])
    chat.begin_reply(2)
    stream(qtbot, chat, ["Let me look that up."])
    chat.finish_reply("Let me look that up.", CALLED, ReplyStatus.COMPLETE)
    bar, document = chat._browser.verticalScrollBar(), chat._browser.document()

    card = chat.show_tool_call(PendingCall("call_1", "weather", "get_weather", '{"city": "Paris"}'))
    assert QApplication.focusWidget() is card.allow_button
    qtbot.keyClick(card.allow_button, Qt.Key.Key_Space)  # Allow once: its row hides, and the focus walks on
    assert card.state is CardState.RUNNING and card.isAncestorOf(QApplication.focusWidget())
    card.set_outcome(ToolOutcome("Sunny, 21 °C.", elapsed_s=0.2))
    qtbot.keyClick(card.result_toggle, Qt.Key.Key_Tab)  # on round the regions
    chat.clear_tool_cards()
    deleted_later()

    assert shiboken6.isValid(bar) and shiboken6.isValid(document)
    assert chat._follower._bar is bar
    reply = "\n\n".join(f"Paragraph {i}: sunny." for i in range(40))
    chat.begin_reply(3)  # the pane follows the growing reply down (BottomFollower's queued scroll)
    stream(qtbot, chat, [reply])
    chat.finish_reply(reply, ENDED, ReplyStatus.COMPLETE)
    qtbot.waitUntil(lambda: bar.value() == bar.maximum() > 0)
