"""Live tool cards in the chat pane: laid over gaps below the reply that wrote the calls, kept
there as the pane scrolls, resizes and is written afresh, above the reply that follows them,
the keyboard on the first card that asks, and gone without a trace when cleared."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication
from support.chat_helpers import WAIT_MS, browser, plain_text, shown_view, stream

from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.tool_servers.approval import Decision, PendingCall
from app.tool_servers.types import ToolOutcome
from app.ui.chat.document import find_block
from app.ui.chat.markdown_render import ZERO_WIDTH_SPACE
from app.ui.chat.tool_calls.live import TOOL_GAP
from app.ui.chat.tool_card import CardState
from app.ui.chat.view import MessageView

CALLED = ReplyStats(completion_tokens=12, stop_reason=StopReason.TOOL_CALLS)
ENDED = ReplyStats(completion_tokens=5, stop_reason=StopReason.END_OF_TURN)


def call(n: int, tool: str = "get_weather") -> PendingCall:
    return PendingCall(f"call_{n}", "weather", tool, '{\n  "city": "Zürich"\n}')


@pytest.fixture
def view(qtbot):
    """A conversation whose last reply ended with calls, in a shown, active pane."""
    view = shown_view(qtbot, 700, 500, exposed=True)
    qtbot.waitUntil(view.isActiveWindow)
    words = "\n\n".join(f"Paragraph {i} of an earlier answer." for i in range(30))
    view.set_messages([MessageView(1, "user", "Weather?"), MessageView(2, "assistant", words, ENDED),
                       MessageView(3, "user", "And now in Zürich?")])
    view.begin_reply(4)
    stream(qtbot, view, ["Let me look that up."])
    view.finish_reply("Let me look that up.", CALLED, ReplyStatus.COMPLETE)
    return view


def gap_top(view, call_id: str) -> float:
    """Where the card's gap is in the viewport."""
    text = browser(view)
    block = find_block(text.document(), TOOL_GAP, call_id)
    assert block.isValid()
    top = text.document().documentLayout().blockBoundingRect(block).top()
    return top - text.verticalScrollBar().value()


def top_of(view, words: str) -> float:
    text = browser(view)
    cursor = text.document().find(words)
    assert not cursor.isNull(), words
    return text.document().documentLayout().blockBoundingRect(cursor.block()).top() - text.verticalScrollBar().value()


def settle(qtbot) -> None:
    qtbot.wait(30)  # the layout's queued update places the cards


def test_a_card_lies_below_its_reply_with_the_keyboard_on_allow_once(view, qtbot):
    card = view.show_tool_call(call(1))
    settle(qtbot)
    assert view.tool_card("call_1") is card and view.tool_card("nope") is None
    assert QApplication.focusWidget() is card.allow_button
    assert card.isVisible() and abs(card.y() - gap_top(view, "call_1")) <= 10
    assert card.y() > top_of(view, "Let me look that up.")
    column = browser(view).viewport().width() - 2 * browser(view).side_margin()
    assert abs(card.width() - column) <= 2
    assert card.geometry().bottom() <= browser(view).viewport().height(), "scrolled into view"
    assert "Regenerate" not in plain_text(view), "a reply whose calls are under way is not regenerated"


def test_cards_follow_the_pane_as_it_scrolls_and_resizes(view, qtbot):
    card = view.show_tool_call(call(1))
    settle(qtbot)
    bar = browser(view).verticalScrollBar()
    bar.setValue(bar.value() - 120)
    settle(qtbot)
    assert abs(card.y() - gap_top(view, "call_1")) <= 10
    view.resize(520, 500)
    text = browser(view)
    qtbot.waitUntil(lambda: abs(card.width() - (text.viewport().width() - 2 * text.side_margin())) <= 2)
    settle(qtbot)
    assert abs(card.y() - gap_top(view, "call_1")) <= 10


def test_the_next_reply_comes_below_the_cards_and_a_taller_card_moves_it(view, qtbot):
    first, second = view.show_tool_call(call(1)), view.show_tool_call(call(2, "local_time"))
    settle(qtbot)
    assert first.y() < second.y()
    first.decided.emit(Decision.ALLOW_ONCE)  # as the card does, once answered
    first.set_running()
    first.set_outcome(ToolOutcome("21 °C\n" * 20, elapsed_s=0.3))
    second.set_running()
    second.set_outcome(ToolOutcome("12:00", elapsed_s=0.1))
    view.begin_reply(5)
    stream(qtbot, view, ["It is 21 °C at noon."])
    view.finish_reply("It is 21 °C at noon.", ENDED, ReplyStatus.COMPLETE)
    settle(qtbot)
    below = top_of(view, "It is 21 °C at noon.")
    assert below > second.geometry().bottom()
    first.result_toggle.click()
    qtbot.waitUntil(lambda: top_of(view, "It is 21 °C at noon.") > below + 100, timeout=WAIT_MS)
    settle(qtbot)
    assert second.y() > first.geometry().bottom() and top_of(view, "It is 21 °C at noon.") > second.geometry().bottom()
    assert "Regenerate" in plain_text(view), "the reply after the calls is the last, and offers it"


def test_the_keyboard_goes_on_to_the_next_card_that_asks(view, qtbot):
    first, second = view.show_tool_call(call(1)), view.show_tool_call(call(2))
    settle(qtbot)
    assert QApplication.focusWidget() is first.allow_button
    qtbot.keyClick(first.deny_button, Qt.Key.Key_Space)
    assert first.state is CardState.DENIED and QApplication.focusWidget() is second.allow_button


def test_cards_keep_their_place_when_the_pane_is_written_afresh(view, qtbot):
    card = view.show_tool_call(call(1))
    view.begin_reply(5)
    stream(qtbot, view, ["The next step."])
    palette = QPalette(view.palette())
    palette.setColor(QPalette.ColorRole.Base, Qt.GlobalColor.black)
    palette.setColor(QPalette.ColorRole.Text, Qt.GlobalColor.white)
    view.setPalette(palette)  # everything is rendered again
    stream(qtbot, view, [" More of it."])
    settle(qtbot)
    assert top_of(view, "Let me look that up.") < card.y() < top_of(view, "The next step. More of it.")
    assert abs(card.y() - gap_top(view, "call_1")) <= 10
    view.finish_reply("The next step. More of it.", ENDED, ReplyStatus.COMPLETE)
    assert view.text_of_reply() == "The next step. More of it."


def test_clearing_takes_cards_and_gaps_away(view, qtbot):
    before = plain_text(view)
    cards = [view.show_tool_call(call(1)), view.show_tool_call(call(2))]
    assert plain_text(view).count(ZERO_WIDTH_SPACE) == 2
    view.clear_tool_cards()
    qtbot.waitUntil(lambda: not any(card.isVisible() for card in cards))
    assert view.tool_card("call_1") is None
    assert plain_text(view) == before.replace("Copy  ·  Regenerate  ·  ", "Copy  ·  ")
    view.begin_reply(9)  # positions kept by the transcript still hold
    stream(qtbot, view, ["After."])
    view.finish_reply("After.", ENDED, ReplyStatus.COMPLETE)
    assert view.text_of_reply() == "After."


def test_a_reply_still_streaming_shows_no_card(view, qtbot):
    view.begin_reply(5)
    with pytest.raises(RuntimeError):
        view.show_tool_call(call(1))


def test_a_tool_the_user_always_allows_comes_running_and_leaves_the_keyboard_alone(view, qtbot):
    view.findChild(type(browser(view))).setFocus()
    card = view.show_tool_call(call(1), awaiting=False)
    assert card.state is CardState.RUNNING and QApplication.focusWidget() is browser(view)


def test_tab_into_a_card_scrolled_away_brings_it_into_view(view, qtbot):
    card = view.show_tool_call(call(1))
    settle(qtbot)
    bar = browser(view).verticalScrollBar()
    bar.setValue(0)
    settle(qtbot)
    assert card.geometry().top() > browser(view).viewport().height()
    card.deny_button.setFocus(Qt.FocusReason.TabFocusReason)
    settle(qtbot)
    assert 0 <= card.geometry().top() and card.geometry().bottom() <= browser(view).viewport().height()


def test_tab_goes_through_the_cards_answers_not_the_transcripts_links(view, qtbot):
    """Qt asks a control's parents where Tab goes, and the transcript answered by moving its
    link mark while the keyboard stayed on Allow once."""
    card = view.show_tool_call(call(1))
    settle(qtbot)
    visited = []
    for _ in range(2):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        visited.append(QApplication.focusWidget())
    assert visited == [card.always_button, card.deny_button]
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)
    assert QApplication.focusWidget() is card.always_button
