"""The window's flow, driven as a user drives it over a scripted model: Undo after a delete,
a message sent while the model loads, New chat, the shortcuts list, and conversations switched
or deleted while a reply streams."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support.flow_harness import WAIT_MS, FlowWindow, GatedScript

from app.engine.types import ReplyStatus
from app.ui.widgets.shortcuts import KEYS_WITHOUT_ACTIONS

MODEL_AFTER_SLOW = Path("/models/qwen.gguf")  # scripted: loads at once


@pytest.fixture
def flow(qtbot, gemma_info, tmp_path):
    window = FlowWindow(qtbot, GatedScript(gemma_info), tmp_path)
    yield window
    window.close()


def press_delete_in_the_list(flow, conversation_id):
    flow.click_conversation(conversation_id)
    QTest.keyClick(flow.window.conversations.list, Qt.Key.Key_Delete)


def test_delete_shows_undo_and_clicking_it_brings_the_conversation_back(flow):
    flow.send_and_wait("Delete me")
    conversation_id = flow.session.conversation_id
    press_delete_in_the_list(flow, conversation_id)
    bar = flow.window.undo_bar
    assert flow.window.conversations.conversation_ids() == [] and flow.session.conversation_id is None
    assert bar.isVisible() and bar.undo_button.isVisible() and "Delete me" in bar.message.text()
    assert flow.window.undo_action.isEnabled()
    bar.undo_button.click()
    assert flow.window.conversations.conversation_ids() == [conversation_id]
    assert flow.session.conversation_id == conversation_id  # it was open: it is open again
    assert not bar.isVisible() and not flow.window.undo_action.isEnabled()


def test_ctrl_z_undoes_the_delete_but_in_the_message_box_undoes_typing(flow):
    flow.send_and_wait("Keep me")
    conversation_id = flow.session.conversation_id
    press_delete_in_the_list(flow, conversation_id)
    edit = flow.window.composer.edit
    edit.setFocus()
    QTest.keyClicks(edit, "abc")
    QTest.keyClick(edit, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert edit.toPlainText() == "" and flow.window.undo_bar.isVisible()  # the typing was undone, not the delete
    flow.window.conversations.list.setFocus()
    QTest.keyClick(flow.window.conversations.list, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert flow.window.conversations.conversation_ids() == [conversation_id]


def test_the_undo_button_is_reached_with_tab_from_the_list(flow):
    flow.send_and_wait("Stays")
    flow.window.new_chat()
    flow.send_and_wait("Tab to undo")
    press_delete_in_the_list(flow, flow.session.conversation_id)
    window = flow.window
    assert window.conversations.list.hasFocus()
    visited = []
    for _ in range(3):
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        visited.append(QApplication.focusWidget())
        if window.undo_bar.undo_button.hasFocus():
            break
    assert window.undo_bar.undo_button.hasFocus(), visited


def test_a_message_sent_while_the_model_loads_waits_and_goes_when_it_has_loaded(flow, qtbot):
    flow.script.slow = {"slow.gguf"}
    flow.models.load(Path("/models/slow.gguf"))
    assert flow.window.chat_header.state.isVisible()  # "Loading…" above the chat
    flow.type_and_send("Are you there?")
    composer = flow.window.composer
    assert composer.waiting and composer.text() == "Are you there?"
    assert "Will send when" in composer.note.text() and composer.note.isVisible()
    assert flow.store.list_conversations() == []  # nothing sent, and no "No model" message
    assert "No model" not in flow.window.statusBar().currentMessage()
    with qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS):
        flow.models.load(MODEL_AFTER_SLOW)  # the slow load is replaced by one that succeeds
    assert [m.content for m in flow.session.messages()][0] == "Are you there?"
    assert composer.text() == "" and not composer.waiting and not composer.note.isVisible()


def test_a_waiting_message_stays_unsent_when_the_load_fails(flow, qtbot):
    flow.script.slow = {"slow.gguf"}
    flow.models.load(Path("/models/slow.gguf"))
    flow.type_and_send("Hello?")
    with qtbot.waitSignal(flow.models.loadFailed, timeout=WAIT_MS):
        flow.window.picker.cancel_button.click()
    composer = flow.window.composer
    assert not composer.waiting and composer.text() == "Hello?" and "Not sent" in composer.note.text()
    assert flow.store.list_conversations() == [] and composer.button.text() == "Send"


def test_cancel_keeps_a_waiting_message_unsent(flow, qtbot):
    flow.script.slow = {"slow.gguf"}
    flow.models.load(Path("/models/slow.gguf"))
    flow.type_and_send("Not yet")
    composer = flow.window.composer
    assert composer.button.text() == "Cancel"
    composer.button.click()
    assert not composer.waiting and composer.text() == "Not yet"
    with qtbot.waitSignal(flow.models.modelLoaded, timeout=WAIT_MS):
        flow.models.load(MODEL_AFTER_SLOW)
    assert flow.store.list_conversations() == []


def test_ctrl_n_reuses_an_empty_conversation_and_puts_the_focus_in_the_message_box(flow):
    window = flow.window
    window.conversations.search.setFocus()
    QTest.keyClick(window.conversations.search, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    first = flow.session.conversation_id
    assert first is not None and window.composer.edit.hasFocus()
    window.conversations.list.setFocus()
    QTest.keyClick(window.conversations.list, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert flow.session.conversation_id == first and len(flow.store.list_conversations()) == 1
    assert window.composer.edit.hasFocus()
    flow.send_and_wait("Now it has a message")
    QTest.keyClick(window.composer.edit, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert flow.session.conversation_id != first and len(flow.store.list_conversations()) == 2


def test_f1_lists_every_action_that_has_keys(flow, qtbot):
    window = flow.window
    seen = []

    def read_and_close():
        dialog = QApplication.activeModalWidget()
        seen.extend(dialog.rows())
        dialog.reject()

    QTimer.singleShot(0, read_and_close)
    QTest.keyClick(window.composer.edit, Qt.Key.Key_F1)
    assert seen, "F1 opened no dialog"
    keys = {row[0] for row in seen}
    with_keys = [action for menu in window.menuBar().actions() for action in menu.menu().actions()
                 if not action.shortcut().isEmpty()]
    assert len(with_keys) >= 10
    for action in with_keys:
        assert action.shortcut().toString(action.shortcut().SequenceFormat.NativeText) in keys, action.text()
    assert "Ctrl+Shift+G" in keys and all(row in seen for row in KEYS_WITHOUT_ACTIONS)


def test_a_reply_goes_on_in_its_conversation_while_another_is_open_and_shows_when_it_is_back(flow, qtbot):
    window = flow.window
    flow.send_and_wait("Conversation B")
    b = flow.session.conversation_id
    QTest.keyClick(window.composer.edit, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    flow.script.gated, flow.script.replies = True, ["one two three"]
    flow.type_and_send("Conversation A")
    a = flow.session.conversation_id
    flow.script.release()
    qtbot.waitUntil(lambda: window.chat.text_of_reply() == "one", timeout=WAIT_MS)
    flow.click_conversation(b)
    assert flow.session.busy and not window.chat.is_streaming()  # not stopped; not shown in B
    assert window.composer.button.text() == "Send"
    flow.script.release()
    qtbot.waitUntil(lambda: flow.session.reply_so_far().text == "one two", timeout=WAIT_MS)
    assert "two" not in window.chat.text_of_reply()
    flow.click_conversation(a)
    assert window.chat.is_streaming() and window.composer.button.text() == "Stop"
    qtbot.waitUntil(lambda: window.chat.text_of_reply() == "one two", timeout=WAIT_MS)  # as far as it got
    with qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS):
        flow.script.release()  # and it goes on
    assert window.chat.text_of_reply() == "one two three" and not window.chat.is_streaming()
    assert [m.status for m in flow.session.messages()] == ["complete", "complete"]


def test_a_reply_that_ends_while_another_conversation_is_open_is_shown_finished(flow, qtbot):
    window = flow.window
    flow.send_and_wait("B")
    b = flow.session.conversation_id
    window.new_chat()
    flow.script.replies = ["done in the background"]
    with qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS) as finished:
        flow.type_and_send("A")
        a = flow.session.conversation_id
        flow.click_conversation(b)  # before any of the reply arrived
    assert finished.args[0].conversation_id == a and "background" not in window.chat.text_of_reply()
    flow.click_conversation(a)
    assert window.chat.text_of_reply() == "done in the background" and not window.chat.is_streaming()


def test_deleting_the_conversation_whose_reply_streams_stops_it(flow, qtbot):
    window = flow.window
    a, b = flow.streaming_elsewhere()
    with qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS) as finished:
        window.delete_conversation(a)
    assert finished.args[0].status is ReplyStatus.CANCELLED and not flow.session.busy
    assert flow.session.conversation_id == b


def test_a_send_while_another_conversations_reply_streams_waits_for_it_and_goes(flow, qtbot):
    window = flow.window
    _, b = flow.streaming_elsewhere()
    flow.type_and_send("Another question for B")
    composer = window.composer
    assert composer.waiting and "is finished" in composer.note.text() and "Esc" in composer.note.text()
    flow.script.gated = False
    with qtbot.waitSignal(flow.session.replyStarted, timeout=WAIT_MS) as started:
        QTest.keyClick(composer.edit, Qt.Key.Key_Escape)  # stops A's reply; B's message goes
    assert started.args[0].conversation_id == b
    qtbot.waitUntil(lambda: not flow.session.busy, timeout=WAIT_MS)
    assert [m.content for m in flow.session.messages() if m.role == "user"] == ["B", "Another question for B"]
    assert composer.text() == ""


def test_a_waiting_send_is_not_sent_into_another_conversation(flow, qtbot):
    window = flow.window
    a, b = flow.streaming_elsewhere()
    flow.type_and_send("For B only")
    flow.click_conversation(a)
    assert not window.composer.waiting and window.composer.text() == "For B only"
    assert "Not sent" in window.composer.note.text()
