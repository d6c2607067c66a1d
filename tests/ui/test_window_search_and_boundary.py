"""Two things the window shows of a conversation's tree, used as a user uses them over a
scripted model and a real SQLite file: a search opens a conversation on the version that
matched, scrolled to it (also one far above the newest page, and the open conversation when
its row is clicked again), and the line above which the model saw nothing in the last reply,
which follows the branch shown."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QTextBrowser
from support.chat_helpers import click_anchor, plain_text
from support.flow_harness import WAIT_MS, FlowWindow, GatedScript, edit, regenerate, shown

from app.ui.window import main_window

LONG = " ".join(["Rivers carry sediment to the sea."] * 40)  # several lines at 1024 wide


@pytest.fixture
def flow(qtbot, gemma_info, tmp_path):
    window = FlowWindow(qtbot, GatedScript(gemma_info), tmp_path)
    yield window
    window.close()


def in_view(flow, text: str) -> bool:
    """Whether the block holding text is inside the chat's viewport."""
    browser = flow.window.chat.findChild(QTextBrowser)
    document = browser.document()
    block = document.begin()
    while block.isValid() and text not in block.text():
        block = block.next()
    assert block.isValid(), f"{text!r} is not in the chat"
    top = document.documentLayout().blockBoundingRect(block).top() - browser.verticalScrollBar().value()
    return 0 <= top < browser.viewport().height()


def search(flow, qtbot, words: str, expected: list[int]) -> None:
    """Type into the search box, as a user does, and wait for the list to show what matched."""
    box = flow.window.conversations.search
    box.setFocus()
    QTest.keyClicks(box, words)
    qtbot.waitUntil(lambda: flow.window.conversations.conversation_ids() == expected, timeout=WAIT_MS)


def test_a_search_opens_the_conversation_on_the_version_that_matched_scrolled_to_it(flow, qtbot, monkeypatch):
    monkeypatch.setattr(main_window, "MESSAGES_LOADED", 4)  # the hit is far above the newest page
    flow.script.replies = ["Zebras have stripes."] + [f"Later {n}. {LONG}" for n in range(1, 5)] + ["Birds have wings."]
    flow.send_and_wait("Tell me about an animal")
    for n in range(1, 5):
        flow.send_and_wait(f"More {n}")
    edit(flow, flow.session.messages()[0].id, "Tell me about a bird")
    found = flow.session.conversation_id
    assert shown(flow) == ["Tell me about a bird", "Birds have wings."]  # the version with the word is not shown
    flow.window.new_chat()
    flow.send_and_wait("Something else")
    other = flow.session.conversation_id

    search(flow, qtbot, "zebras", [found])
    flow.click_conversation(found)
    messages = shown(flow)
    assert messages[:2] == ["Tell me about an animal", "Zebras have stripes."] and len(messages) == 10
    assert "Zebras have stripes." in plain_text(flow.window.chat) and in_view(flow, "Zebras have stripes.")
    assert not in_view(flow, "Later 4.")

    # The open conversation's row clicked again goes back to the hit.
    browser = flow.window.chat.findChild(QTextBrowser)
    browser.verticalScrollBar().setValue(browser.verticalScrollBar().maximum())
    assert not in_view(flow, "Zebras have stripes.")
    flow.click_conversation(found)
    assert in_view(flow, "Zebras have stripes.")

    # Without a search, a conversation opens as it was last viewed, at its end.
    flow.window.conversations.search.clear()
    qtbot.waitUntil(lambda: len(flow.window.conversations.conversation_ids()) == 2, timeout=WAIT_MS)
    flow.click_conversation(other)
    flow.click_conversation(found)
    assert shown(flow)[1] == "Zebras have stripes."  # the branch last viewed, at its newest page
    assert "Zebras have stripes." not in plain_text(flow.window.chat) and in_view(flow, "Later 4.")


def test_a_search_matching_only_the_title_opens_the_conversation_at_its_end(flow, qtbot):
    flow.script.replies = [f"Answer. {LONG}"] * 3
    flow.send_and_wait("Quokkas")
    flow.send_and_wait("Go on")
    found = flow.session.conversation_id
    listing = flow.window.conversations.list
    listing.setFocus()
    QTest.keyClick(listing, Qt.Key.Key_F2)  # renamed: the title, not a message, holds the word
    title = QApplication.focusWidget()
    title.selectAll()
    QTest.keyClicks(title, "Marsupials")
    QTest.keyClick(title, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: flow.store.get_conversation(found).title == "Marsupials", timeout=WAIT_MS)
    flow.window.new_chat()
    flow.send_and_wait("Something else")
    search(flow, qtbot, "marsupials", [found])
    flow.click_conversation(found)
    assert shown(flow)[0] == "Quokkas" and not in_view(flow, "Quokkas")


def test_the_line_where_the_models_view_began_follows_the_branch_shown(flow, qtbot):
    flow.script.replies = ["Reply 1.", "Reply 2.", "Reply 3.", "Reply 4."]
    flow.send_and_wait("One")
    flow.send_and_wait("Two")
    assert "did not see" not in plain_text(flow.window.chat)
    flow.script.dropped_messages = 2  # "One" and "Reply 1." did not fit in the context window
    flow.send_and_wait("Three")
    text = plain_text(flow.window.chat)
    line = "The model did not see the 2 messages above this line"
    assert line in text and text.index("Reply 1.") < text.index(line) < text.index("Two")
    assert "did not fit the context window" in flow.window.statusBar().currentMessage()

    conversation = flow.session.conversation_id
    flow.window.new_chat()
    assert line not in plain_text(flow.window.chat)
    flow.click_conversation(conversation)
    assert line in plain_text(flow.window.chat)  # where it was, after opening it again

    flow.script.dropped_messages = 0
    regenerate(flow)  # this reply saw all of it
    assert "did not see" not in plain_text(flow.window.chat)
    click_anchor(qtbot, flow.window.chat, f"hearth:previous-version/{flow.session.messages()[-1].id}")
    assert shown(flow)[-1] == "Reply 3." and line in plain_text(flow.window.chat)
