"""Which messages the chat pane renders (paging.Pages), without a widget: the newest page, a
page more per "Show earlier messages", whole pages back to a message asked for."""

from __future__ import annotations

from app.ui.chat.message_view import MessageView
from app.ui.chat.paging import HISTORY_SHOWN_CHARS, HISTORY_SHOWN_MESSAGES, Pages


def short_messages(count: int, first_id: int = 0) -> list[MessageView]:
    return [MessageView(first_id + i, "user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(count)]


def test_a_conversation_opens_on_its_newest_page_and_turns_back_a_page_at_a_time():
    pages = Pages()
    pages.replace(short_messages(100), earlier=7)
    assert pages.first_shown == 100 - HISTORY_SHOWN_MESSAGES
    assert pages.hidden_count() == 100 - HISTORY_SHOWN_MESSAGES + 7
    assert pages.turn_back() == 100 - HISTORY_SHOWN_MESSAGES  # the oldest rendered before
    assert pages.first_shown == 100 - 2 * HISTORY_SHOWN_MESSAGES
    assert pages.turn_back() == 100 - 2 * HISTORY_SHOWN_MESSAGES
    assert pages.first_shown == 0
    assert pages.turn_back() is None  # every message handed over is rendered: the window is asked
    assert pages.hidden_count() == 7


def test_a_page_holds_at_least_two_messages_however_long():
    pages = Pages()
    pages.replace([MessageView(i, "user", "x" * (2 * HISTORY_SHOWN_CHARS)) for i in range(5)], earlier=0)
    assert pages.shown() == pages.messages[3:]


def test_older_messages_handed_over_go_first_and_what_is_rendered_stays():
    pages = Pages()
    pages.replace(short_messages(10, first_id=100), earlier=50)
    assert pages.first_shown == 0 and pages.oldest_id() == 100
    pages.prepend(short_messages(50), earlier=0)
    assert pages.first_shown == 50 and [m.id for m in pages.shown()] == list(range(100, 110))
    assert pages.oldest_id() == 0 and pages.index_of(100) == 50 and pages.index_of(999) is None


def test_showing_a_message_renders_whole_pages_back_to_it():
    pages = Pages()
    pages.replace(short_messages(200), earlier=0)
    pages.show_back_to(170)  # already rendered: nothing changes
    assert pages.first_shown == 200 - HISTORY_SHOWN_MESSAGES
    pages.show_back_to(100)
    assert pages.first_shown == 200 - 3 * HISTORY_SHOWN_MESSAGES  # the newest page and two more, as two clicks render them
