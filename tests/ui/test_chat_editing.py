"""Editing a sent message in place, in the transcript (offscreen, real widgets, real keys)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QAction, QKeySequence
from PySide6.QtWidgets import QVBoxLayout, QWidget
from support.chat_helpers import WAIT_MS, browser, click_anchor, plain_text

from app.engine.types import ReplyStatus
from app.ui.chat.inline_editor import InlineEditor
from app.ui.chat.view import ChatView, MessageView

CONVERSATION = [
    MessageView(11, "user", "What is a delta?"),
    MessageView(12, "assistant", "A landform at a river's mouth."),
    MessageView(13, "user", "And an estuary?"),
    MessageView(14, "assistant", "Where a river meets the sea."),
]


class Window(QWidget):
    """The chat pane in a window with the main window's Esc shortcut (Stop), which must not
    take Esc from the editor."""

    def __init__(self) -> None:
        super().__init__()
        self.view = ChatView(self)
        QVBoxLayout(self).addWidget(self.view)
        self.stops = 0
        stop = QAction("Stop", self)
        stop.setShortcut(QKeySequence("Esc"))
        stop.triggered.connect(self._stop)
        self.addAction(stop)

    def _stop(self) -> None:
        self.stops += 1


@pytest.fixture
def window(qtbot):
    widget = Window()
    widget.resize(900, 640)
    qtbot.addWidget(widget)
    widget.show()
    qtbot.waitExposed(widget)
    widget.activateWindow()
    widget.view.set_messages(CONVERSATION)
    return widget


def open_editor(qtbot, view: ChatView, message_id: int) -> InlineEditor:
    click_anchor(qtbot, view, f"hearth:edit/{message_id}")
    editor = view.findChild(InlineEditor)
    assert editor is not None and editor.isVisible()
    return editor


def label_top(view: ChatView, text: str) -> float:
    """Where the first block reading `text` starts, in the viewport."""
    document = browser(view).document()
    block = document.begin()
    while block.text() != text:
        block = block.next()
    return document.documentLayout().blockBoundingRect(block).top() - browser(view).verticalScrollBar().value()


def test_edit_opens_an_editor_in_place_of_the_message_with_the_focus_in_it(window, qtbot):
    view = window.view
    before = label_top(view, "A landform at a river's mouth.")
    editor = open_editor(qtbot, view, 11)

    assert editor.text() == "What is a delta?"
    qtbot.waitUntil(editor.box.hasFocus, timeout=WAIT_MS)
    assert "What is a delta?" not in plain_text(view)  # the editor stands where the text was
    assert editor.parent() is browser(view).viewport()
    # Over the message: below the top of the pane, above the reply that follows it, which
    # moved down to make room.
    after = label_top(view, "A landform at a river's mouth.")
    assert after > before
    assert 0 < editor.geometry().top() and editor.geometry().bottom() < after
    for widget, name in ((editor.box, "Edit message"), (editor.send_button, "Send the edited message"),
                         (editor.cancel_button, "Cancel editing")):
        assert QAccessible.queryAccessibleInterface(widget).text(QAccessible.Text.Name) == name


def test_typing_and_enter_send_the_changed_text_and_the_editor_stays_until_the_conversation_is_shown(window, qtbot):
    view = window.view
    editor = open_editor(qtbot, view, 13)
    qtbot.keyClicks(editor.box, " Briefly.")
    with qtbot.waitSignal(view.editSubmitted, timeout=WAIT_MS) as sent:
        qtbot.keyClick(editor.box, Qt.Key.Key_Return)
    assert sent.args == [13, "And an estuary? Briefly."]
    # An edit refused (a reply still streaming) loses nothing: the editor waits.
    assert editor.isVisible() and editor.text() == "And an estuary? Briefly."

    view.set_messages(CONVERSATION[:2] + [MessageView(13, "user", "And an estuary? Briefly.")])  # as ChatSession.edit does
    assert view.findChild(InlineEditor) is None or not view.findChild(InlineEditor).isVisible()
    assert "And an estuary? Briefly." in plain_text(view)


def test_shift_enter_makes_a_new_line_and_the_editor_grows_pushing_what_follows_down(window, qtbot):
    view = window.view
    editor = open_editor(qtbot, view, 11)
    height, reply_top = editor.height(), label_top(view, "A landform at a river's mouth.")
    for line in range(4):
        qtbot.keyClick(editor.box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        qtbot.keyClicks(editor.box, f"line {line}")
    assert editor.text() == "What is a delta?\nline 0\nline 1\nline 2\nline 3"
    qtbot.waitUntil(lambda: editor.height() > height, timeout=WAIT_MS)  # the editor grows as it lays out
    qtbot.waitUntil(lambda: label_top(view, "A landform at a river's mouth.") > reply_top + editor.height() - height - 2,
                    timeout=WAIT_MS)
    assert editor.geometry().bottom() < label_top(view, "A landform at a river's mouth.")

    with qtbot.waitSignal(view.editSubmitted, timeout=WAIT_MS) as sent:
        qtbot.keyClick(editor.box, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)  # Ctrl+Enter sends too
    assert sent.args == [11, "What is a delta?\nline 0\nline 1\nline 2\nline 3"]


def test_esc_cancels_and_puts_the_message_back_without_stopping_anything(window, qtbot):
    view = window.view
    editor = open_editor(qtbot, view, 11)
    qtbot.waitUntil(editor.box.hasFocus, timeout=WAIT_MS)
    qtbot.keyClicks(editor.box, " never sent")
    sent = []
    view.editSubmitted.connect(lambda *args: sent.append(args))
    qtbot.keyClick(editor.box, Qt.Key.Key_Escape)

    assert not editor.isVisible()
    qtbot.waitUntil(lambda: view.findChild(InlineEditor) is None, timeout=WAIT_MS)
    assert sent == [] and window.stops == 0  # the window's Esc (Stop) did not get the key
    assert plain_text(view).count("What is a delta?") == 1 and "never sent" not in plain_text(view)
    assert "hearth:edit/11" in browser(view).document().toHtml()  # its Copy · Edit are back
    assert browser(view).hasFocus()


def test_the_buttons_send_and_cancel_and_send_waits_for_some_text(window, qtbot):
    view = window.view
    editor = open_editor(qtbot, view, 13)
    editor.box.selectAll()
    qtbot.keyClick(editor.box, Qt.Key.Key_Delete)
    qtbot.keyClicks(editor.box, "   ")
    assert not editor.send_button.isEnabled()
    sent = []
    view.editSubmitted.connect(lambda *args: sent.append(args))
    qtbot.keyClick(editor.box, Qt.Key.Key_Return)  # nothing to send
    assert sent == []

    qtbot.keyClicks(editor.box, "Rephrased")
    qtbot.mouseClick(editor.send_button, Qt.MouseButton.LeftButton)
    assert sent == [(13, "   Rephrased")]
    qtbot.mouseClick(editor.cancel_button, Qt.MouseButton.LeftButton)
    assert not editor.isVisible() and "And an estuary?" in plain_text(view)


def test_the_editor_stays_over_its_message_as_the_pane_scrolls(window, qtbot):
    view = window.view
    long_reply = "\n\n".join(f"Paragraph {i}." for i in range(80))
    view.set_messages(CONVERSATION + [MessageView(15, "user", "More?"), MessageView(16, "assistant", long_reply)])
    editor = open_editor(qtbot, view, 15)
    bar = browser(view).verticalScrollBar()
    assert 0 <= editor.geometry().top() and editor.geometry().bottom() <= browser(view).viewport().height()
    top = editor.geometry().top()
    bar.setValue(bar.value() + 40)
    assert editor.geometry().top() == top - 40


def test_a_reply_streaming_below_an_open_editor_leaves_it_in_place(window, qtbot):
    view = window.view
    editor = open_editor(qtbot, view, 11)
    top = editor.geometry().top()
    view.begin_reply(15)
    view.append_text("More words")
    view.flush_now()
    view.finish_reply("More words", None, ReplyStatus.COMPLETE)
    qtbot.waitUntil(lambda: "More words" in plain_text(view)  # the finished reply laid out below the editor
                    and label_top(view, "More words") > editor.geometry().bottom(), timeout=WAIT_MS)
    assert editor.isVisible() and editor.geometry().top() == top
    assert editor.text() == "What is a delta?"


def test_edit_opens_from_the_keyboard_and_esc_gives_the_focus_back_to_the_transcript(window, qtbot):
    view = window.view
    transcript = browser(view)
    transcript.setFocus()
    qtbot.waitUntil(transcript.hasFocus, timeout=WAIT_MS)
    for _ in range(8):  # Tab moves from link to link: Copy, Edit, Copy, …
        qtbot.keyClick(transcript, Qt.Key.Key_Tab)
        if transcript.textCursor().selectedText() == "Edit":
            break
    assert transcript.textCursor().selectedText() == "Edit"
    qtbot.keyClick(transcript, Qt.Key.Key_Return)
    editor = view.findChild(InlineEditor)
    assert editor is not None and editor.text() == "What is a delta?"
    qtbot.waitUntil(editor.box.hasFocus, timeout=WAIT_MS)
    qtbot.keyClick(editor.box, Qt.Key.Key_Escape)
    assert transcript.hasFocus() and not editor.isVisible()


def test_esc_on_the_editors_buttons_cancels_too(window, qtbot):
    editor = open_editor(qtbot, window.view, 11)
    editor.send_button.setFocus()
    qtbot.waitUntil(editor.send_button.hasFocus, timeout=WAIT_MS)
    qtbot.keyClick(editor.send_button, Qt.Key.Key_Escape)
    assert not editor.isVisible() and window.stops == 0
