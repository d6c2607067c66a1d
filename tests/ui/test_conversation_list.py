"""The conversation list as a user meets it: days as headings the keyboard skips, "No results",
the words a search found under each hit, its menu from the keyboard, and names a screen reader
can say."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support.flow_harness import FlowWindow, GatedScript

from app.store import Conversation
from app.ui.window.conversation_list import ConversationList, no_results
from app.ui.window.conversation_rows import SNIPPET, date_group

NOW = datetime.now(timezone.utc)


def conversation(conversation_id: int, title: str, updated: datetime) -> Conversation:
    stamp = updated.isoformat(timespec="microseconds")
    return Conversation(conversation_id, title, stamp, stamp, None, "", None)


@pytest.fixture
def listing(qtbot):
    widget = ConversationList()
    qtbot.addWidget(widget)
    widget.show()
    return widget


def test_days_group_conversations_as_people_say_them():
    wednesday = date(2024, 3, 13)
    at = lambda day, hour=12: datetime(day.year, day.month, day.day, hour).astimezone().isoformat()  # noqa: E731
    assert date_group(at(wednesday), wednesday) == "Today"
    assert date_group(at(wednesday - timedelta(days=1)), wednesday) == "Yesterday"
    assert date_group(at(wednesday - timedelta(days=2)), wednesday) == "Earlier this week"  # Monday
    assert date_group(at(wednesday - timedelta(days=3)), wednesday) == "Earlier this month"
    assert date_group(at(date(2024, 2, 28)), wednesday) == "February 2024"
    assert date_group("not a time", wednesday) == "Undated"


def test_headings_are_shown_and_the_arrow_keys_skip_them(listing, qtbot):
    listing.set_conversations([conversation(1, "Recent", NOW), conversation(2, "Old", datetime(2020, 3, 2, tzinfo=timezone.utc))], 1)
    assert listing.headings() == ["Today", "March 2020"] and listing.conversation_ids() == [1, 2]
    assert listing.list.count() == 4
    listing.list.setFocus()
    with qtbot.waitSignal(listing.opened) as opened:
        QTest.keyClick(listing.list, Qt.Key.Key_Down)
    assert opened.args == [2]  # past the "March 2020" heading
    QTest.keyClick(listing.list, Qt.Key.Key_Up)
    assert listing.list.currentItem().text() == "Recent"
    QTest.keyClick(listing.list, Qt.Key.Key_Up)  # the "Today" heading above is not a stop
    assert listing.list.currentItem().text() == "Recent"


def test_an_empty_search_says_so_in_place_of_the_list(listing):
    listing.set_conversations([], None, {}, "zebra")
    assert listing.empty_label.isVisible() and not listing.list.isVisible()
    assert listing.empty_label.text() == no_results("zebra") == "No conversations match “zebra”."
    listing.set_conversations([conversation(1, "Back", NOW)], None)
    assert listing.list.isVisible() and not listing.empty_label.isVisible()


def test_the_search_box_list_and_button_have_names(listing):
    assert listing.search.accessibleName() == "Search conversations"
    assert listing.list.accessibleName() == "Conversations"
    assert listing.new_button.accessibleName() == "New chat" and "Ctrl+N" in listing.new_button.accessibleDescription()


def menu_opened_by(qtbot, press) -> list[str]:
    """Press keys, read the menu that opens, close it: its action texts."""
    seen = []

    def read_and_close():
        menu = QApplication.activePopupWidget()
        if menu is not None:
            seen.extend(action.text() for action in menu.actions() if action.text())
            menu.close()

    QTimer.singleShot(50, read_and_close)
    press()
    qtbot.waitUntil(lambda: bool(seen), timeout=2_000)
    return seen


@pytest.mark.parametrize("key, modifier", [(Qt.Key.Key_Menu, Qt.KeyboardModifier.NoModifier),
                                           (Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)],
                         ids=["Menu", "Shift+F10"])
def test_the_menu_key_and_shift_f10_open_the_selected_conversations_menu(listing, qtbot, key, modifier):
    listing.set_conversations([conversation(7, "Mine", NOW)], 7)
    listing.list.setFocus()
    texts = menu_opened_by(qtbot, lambda: QTest.keyClick(listing.list, key, modifier))
    assert texts == ["Rename", "Export as Markdown…", "Export as JSON…", "Delete"]


@pytest.fixture
def flow(qtbot, gemma_info, tmp_path):
    window = FlowWindow(qtbot, GatedScript(gemma_info), tmp_path)
    yield window
    window.close()


def test_a_search_hit_shows_the_words_it_found_and_no_hit_says_so(flow, qtbot):
    flow.script.replies = ["Pineapples grow on a small plant, not on trees, in warm places.", "Fine."]
    flow.send_and_wait("Where do they grow?")
    found_in = flow.session.conversation_id
    flow.window.new_chat()
    flow.send_and_wait("Something else")
    listing = flow.window.conversations
    QTest.keyClicks(listing.search, "pineapple")
    qtbot.waitUntil(lambda: listing.conversation_ids() == [found_in], timeout=3_000)
    item = listing.item_of(found_in)
    assert "Pineapples grow on a small plant" in item.data(SNIPPET)
    assert item.data(Qt.ItemDataRole.AccessibleTextRole).startswith("Where do they grow?: ")
    assert listing.list.visualItemRect(item).height() > listing.list.fontMetrics().lineSpacing() * 2  # two lines
    listing.search.clear()
    QTest.keyClicks(listing.search, "zebra")
    qtbot.waitUntil(listing.empty_label.isVisible, timeout=3_000)
    assert listing.empty_label.text() == no_results("zebra")


def test_a_hit_in_a_markdown_reply_shows_its_words_not_its_marks(flow, qtbot):
    flow.script.replies = ["## Reversing a list\n\nUse **slicing**: `items[::-1]` makes a new list."]
    flow.send_and_wait("How do I reverse one?")
    listing = flow.window.conversations
    QTest.keyClicks(listing.search, "slicing")
    item = lambda: listing.item_of(flow.session.conversation_id)  # noqa: E731 (the list is refilled)
    qtbot.waitUntil(lambda: item() is not None and item().data(SNIPPET) is not None, timeout=3_000)
    snippet = item().data(SNIPPET)
    assert snippet.startswith("Reversing a list Use slicing: items[::-1] makes a new")
    assert not any(mark in snippet for mark in ("##", "**", "`"))
