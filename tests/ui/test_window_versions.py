"""The versions of messages through the window, used as a user uses them over a scripted model
and a real SQLite file: the tree of versions survives closing and reopening, ‹ › under a
message change the branch shown, Delete takes a version away until Undo, Branch opens a new
conversation, the Chat menu's version actions and their keys, and a change refused (not lost)
while the open conversation's reply is written."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from support.chat_helpers import click_anchor, plain_text
from support.flow_harness import WAIT_MS, FlowWindow, GatedScript, edit, regenerate, shown

from app.ui.widgets.shortcuts import shortcut_rows


@pytest.fixture
def windows(qtbot, gemma_info, tmp_path):
    """Opens windows over one folder (one database file), one at a time; `close(window)` ends
    one as quitting does, and whatever is still open is closed afterwards."""
    opened: list[FlowWindow] = []

    class Windows:
        def open(self, replies: list[str]) -> FlowWindow:
            window = FlowWindow(qtbot, GatedScript(gemma_info), tmp_path)
            window.script.replies = list(replies)
            opened.append(window)
            return window

        def close(self, window: FlowWindow) -> None:
            opened.remove(window)
            window.close()

    yield Windows()
    for window in opened:
        window.close()


@pytest.fixture
def flow(windows):
    return windows.open([f"Reply {n}." for n in range(1, 20)])


def versions_of(flow, message_id: int) -> list[str]:
    """Every live version of a message, oldest first, from the store."""
    store = flow.store
    first = message_id
    while (before := store.sibling(first, -1)) is not None:
        first = before
    found = [first]
    while (after := store.sibling(found[-1], 1)) is not None:
        found.append(after)
    return [store.message(version).content for version in found]


def test_the_tree_of_versions_survives_closing_and_reopening(windows, qtbot):
    flow = windows.open([f"Reply {n}." for n in range(1, 10)])
    flow.send_and_wait("Question")
    regenerate(flow)
    regenerate(flow)  # three replies to "Question"
    question = flow.session.messages()[0].id
    edit(flow, question, "Question, edited")
    edit(flow, flow.session.messages()[0].id, "Question, edited again")  # three versions of it
    assert shown(flow) == ["Question, edited again", "Reply 5."]
    # Back to the first question (the chat's ‹, twice), and there to its second reply.
    newest_question = flow.session.messages()[0].id
    click_anchor(qtbot, flow.window.chat, f"hearth:previous-version/{newest_question}")
    click_anchor(qtbot, flow.window.chat, f"hearth:previous-version/{flow.session.messages()[0].id}")
    assert shown(flow) == ["Question", "Reply 3."]  # the reply last seen under it
    click_anchor(qtbot, flow.window.chat, f"hearth:previous-version/{flow.session.messages()[1].id}")
    assert shown(flow) == ["Question", "Reply 2."]
    conversation_id = flow.session.conversation_id
    windows.close(flow)

    flow = windows.open(["Not asked for."])
    flow.click_conversation(conversation_id)
    question, reply = flow.session.messages()
    assert (question.content, reply.content) == ("Question", "Reply 2.")  # the branch last viewed
    assert versions_of(flow, question.id) == ["Question", "Question, edited", "Question, edited again"]
    assert versions_of(flow, reply.id) == ["Reply 1.", "Reply 2.", "Reply 3."]
    text = plain_text(flow.window.chat)
    assert "1/3" in text and "2/3" in text  # each message's switcher counts its versions
    # The other branches are there too, each with what followed it.
    click_anchor(qtbot, flow.window.chat, f"hearth:next-version/{question.id}")
    assert shown(flow) == ["Question, edited", "Reply 4."]
    click_anchor(qtbot, flow.window.chat, f"hearth:next-version/{flow.session.messages()[0].id}")
    assert shown(flow) == ["Question, edited again", "Reply 5."]


def test_the_arrows_under_a_reply_show_its_other_versions(flow, qtbot):
    flow.send_and_wait("Question")
    regenerate(flow)
    chat = flow.window.chat
    second = flow.session.messages()[1].id
    assert "Reply 2." in plain_text(chat) and "Reply 1." not in plain_text(chat) and "2/2" in plain_text(chat)
    click_anchor(qtbot, chat, f"hearth:previous-version/{second}")
    assert "Reply 1." in plain_text(chat) and "Reply 2." not in plain_text(chat) and "1/2" in plain_text(chat)
    first = flow.session.messages()[1].id
    click_anchor(qtbot, chat, f"hearth:next-version/{first}")
    assert "Reply 2." in plain_text(chat) and shown(flow) == ["Question", "Reply 2."]


def test_deleting_a_version_offers_undo_and_undo_brings_it_back(flow, qtbot):
    flow.send_and_wait("Question")
    regenerate(flow)
    second = flow.session.messages()[1].id
    click_anchor(qtbot, flow.window.chat, f"hearth:delete-version/{second}")
    bar = flow.window.undo_bar
    assert bar.isVisible() and bar.message.text() == "Deleted a version (1 message)."
    assert shown(flow) == ["Question", "Reply 1."] and "Reply 2." not in plain_text(flow.window.chat)
    assert flow.window.undo_action.isEnabled()
    bar.undo_button.click()
    assert shown(flow) == ["Question", "Reply 2."] and "2/2" in plain_text(flow.window.chat)
    assert not bar.isVisible()


def test_deleting_a_question_takes_what_followed_it_and_says_how_much(flow, qtbot):
    flow.send_and_wait("Question")
    flow.send_and_wait("Follow-up")
    edit(flow, flow.session.messages()[0].id, "Question, edited")
    click_anchor(qtbot, flow.window.chat, f"hearth:previous-version/{flow.session.messages()[0].id}")
    old = flow.session.messages()[0].id
    assert shown(flow) == ["Question", "Reply 1.", "Follow-up", "Reply 2."]
    click_anchor(qtbot, flow.window.chat, f"hearth:delete-version/{old}")
    assert flow.window.undo_bar.message.text() == "Deleted a version (4 messages)."
    assert shown(flow) == ["Question, edited", "Reply 3."]
    QTest.keyClick(flow.window.conversations.list, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert shown(flow) == ["Question", "Reply 1.", "Follow-up", "Reply 2."]


def test_branch_from_here_opens_a_new_conversation_with_the_messages_up_to_there(flow, qtbot):
    flow.send_and_wait("First")
    flow.send_and_wait("Second")
    original = flow.session.conversation_id
    first_reply = flow.session.messages()[1].id
    click_anchor(qtbot, flow.window.chat, f"hearth:branch/{first_reply}")
    branch = flow.session.conversation_id
    assert branch != original and shown(flow) == ["First", "Reply 1."]
    assert "Reply 2." not in plain_text(flow.window.chat)
    assert "(branch)" in flow.window.statusBar().currentMessage()
    assert flow.window.conversations.conversation_ids() == [branch, original]
    assert [m.content for m in flow.store.messages(original)] == ["First", "Reply 1.", "Second", "Reply 2."]
    assert flow.window.composer.edit.hasFocus()  # ready to go on from there


def test_the_chat_menu_acts_on_the_last_reply_with_its_keys(flow, qtbot):
    window = flow.window
    actions = (window.previous_version_action, window.next_version_action, window.delete_version_action,
               window.branch_action)
    assert not any(action.isEnabled() for action in actions)  # nothing is open
    flow.send_and_wait("Question")
    assert window.branch_action.isEnabled()
    assert not any(action.isEnabled() for action in actions[:3])  # one reply: no other version
    regenerate(flow)
    assert window.previous_version_action.isEnabled() and not window.next_version_action.isEnabled()
    assert window.delete_version_action.isEnabled()
    QTest.keyClick(window.composer.edit, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert shown(flow) == ["Question", "Reply 1."]
    assert window.next_version_action.isEnabled() and not window.previous_version_action.isEnabled()
    QTest.keyClick(window.chat, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    assert shown(flow) == ["Question", "Reply 2."]
    window.delete_version_action.trigger()
    assert shown(flow) == ["Question", "Reply 1."] and window.undo_bar.isVisible()
    original = flow.session.conversation_id
    QTest.keyClick(window.composer.edit, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert flow.session.conversation_id != original and shown(flow) == ["Question", "Reply 1."]
    keys = dict((what, keys) for keys, what in shortcut_rows(window.actions_with_keys))
    assert set(keys) >= {"Previous version of the reply", "Next version of the reply", "Branch from the last message"}
    assert len(set(keys.values())) == len(keys), "two actions share keys"


def test_while_the_reply_is_written_versions_wait_and_nothing_is_lost(flow, qtbot):
    flow.send_and_wait("Question")
    regenerate(flow)
    window = flow.window
    reply = flow.session.messages()[1].id
    flow.script.gated = True
    flow.type_and_send("Follow-up")
    qtbot.waitUntil(lambda: window.chat.is_streaming(), timeout=WAIT_MS)
    actions = (window.previous_version_action, window.next_version_action, window.delete_version_action,
               window.branch_action)
    assert not any(action.isEnabled() for action in actions)
    click_anchor(qtbot, window.chat, f"hearth:previous-version/{reply}")
    assert "stop it (Esc) or let it finish" in window.statusBar().currentMessage()
    click_anchor(qtbot, window.chat, f"hearth:delete-version/{reply}")
    assert not window.undo_bar.isVisible()
    assert [m.content for m in flow.session.messages()][:3] == ["Question", "Reply 2.", "Follow-up"]
    with qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS):
        flow.script.gated = False
        flow.script.release()
    assert shown(flow) == ["Question", "Reply 2.", "Follow-up", "Reply 3."]
    assert not window.previous_version_action.isEnabled() and window.branch_action.isEnabled()
    flow.script.gated = True
    window.regenerate_action.trigger()  # a second version of "Reply 3." is written
    qtbot.waitUntil(lambda: window.chat.is_streaming(), timeout=WAIT_MS)
    assert not any(action.isEnabled() for action in actions)
    with qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS):
        flow.script.gated = False
        flow.script.release()
    assert window.previous_version_action.isEnabled()


def test_undo_of_a_deleted_version_waits_while_its_conversation_has_a_reply_written(flow, qtbot):
    flow.send_and_wait("Question")
    regenerate(flow)
    click_anchor(qtbot, flow.window.chat, f"hearth:delete-version/{flow.session.messages()[1].id}")
    flow.script.gated = True
    flow.type_and_send("Follow-up")  # answered under "Reply 1.", shown in the deleted one's place
    qtbot.waitUntil(lambda: flow.window.chat.is_streaming(), timeout=WAIT_MS)
    bar = flow.window.undo_bar
    bar.undo_button.click()
    assert "when it has ended" in flow.window.statusBar().currentMessage()
    assert bar.isVisible() and bar.message.text() == "Deleted a version (1 message)."  # offered again
    assert [m.content for m in flow.session.messages()][:3] == ["Question", "Reply 1.", "Follow-up"]
    with qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS):
        flow.script.gated = False
        flow.script.release()
    bar.undo_button.click()
    assert shown(flow) == ["Question", "Reply 2."] and not bar.isVisible()
