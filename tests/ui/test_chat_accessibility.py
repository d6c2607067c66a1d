"""The chat pane to assistive technology and at a glance (offscreen, real widgets): the
transcript's name and text as Qt's accessibility interface exposes them, the announcements
at the end of a reply and for errors, and the "Generating" line while a reply streams."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QAccessible
from support.chat_helpers import browser, shown_view, stream

from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.ui.chat.generating_indicator import FRAME_MS, GeneratingIndicator
from app.ui.chat.view import ChatView, MessageView

STATS = ReplyStats(completion_tokens=12, tokens_per_s=20.0, stop_reason=StopReason.END_OF_TURN)
# Characters Qt or the renderer put in the document that are not the text.
MARKERS = ("\u200b", "\u2028", "\u2029", "\ufffc", "\ufdd0", "\ufdd1")


@pytest.fixture
def view(qtbot):
    return shown_view(qtbot, 800, 600)


@pytest.fixture
def announcements(monkeypatch):
    """What reaches Qt's accessibility update: (message, politeness, source object) of each
    announcement event."""
    heard = []

    def update(event):
        if event.type() == QAccessible.Event.Announcement:
            heard.append((event.message(), event.politeness(), event.object()))

    monkeypatch.setattr(QAccessible, "updateAccessibility", update)
    return heard


def accessible(widget):
    return QAccessible.queryAccessibleInterface(widget)


# -- the transcript -----------------------------------------------------------------------------


def test_the_transcript_is_named_and_described(view):
    transcript = accessible(browser(view))
    assert transcript.text(QAccessible.Text.Name) == "Conversation"
    assert "Copy" in transcript.text(QAccessible.Text.Description)


def test_the_transcript_reads_as_the_messages_with_their_actions_on_lines_of_their_own(view):
    view.set_messages([
        MessageView(1, "user", "First line\nsecond line"),
        MessageView(2, "assistant", "Some **bold** text.\nA line break.\n\n```python\nx = 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |",
                    STATS),
    ])
    text = accessible(browser(view)).text(QAccessible.Text.Value)
    assert not any(marker in text for marker in MARKERS), [m for m in MARKERS if m in text]
    lines = text.split("\n")
    assert "First line" in lines and "second line" in lines and "Some bold text." in lines
    # The links under a message are a line of their own, never inside the message's lines.
    for line in lines:
        assert ("Copy" in line) == line.startswith(("Copy", "python")), line


# -- announcements ------------------------------------------------------------------------------


def test_the_end_of_a_reply_is_announced_politely_with_its_stats(view, qtbot, announcements):
    view.begin_reply(1)
    stream(qtbot, view, ["Hello"])
    assert announcements == []
    view.finish_reply("Hello", STATS, ReplyStatus.COMPLETE)
    assert announcements == [
        ("Reply finished. 12 tokens · 20.0 tok/s · end of turn.", QAccessible.AnnouncementPoliteness.Polite, browser(view)),
    ]

    view.begin_reply(2)
    view.finish_reply("Hel", ReplyStats(completion_tokens=1, stop_reason=StopReason.CANCELLED), ReplyStatus.CANCELLED)
    assert announcements[-1][0] == "Reply stopped. 1 token."
    view.begin_reply(3)
    view.finish_reply("", None, ReplyStatus.ERROR)
    assert announcements[-1][0] == "Reply ended with an error."


def test_a_reply_left_by_switching_conversations_is_not_announced(view, announcements):
    view.begin_reply(1)
    view.set_messages([MessageView(5, "user", "another conversation")])
    view.finish_reply("late", STATS, ReplyStatus.COMPLETE)  # no reply streams here: ignored
    assert announcements == []


def test_an_error_is_announced_at_once(view, announcements):
    view.announce_error("The model could not be loaded")
    assert announcements == [
        ("The model could not be loaded", QAccessible.AnnouncementPoliteness.Assertive, browser(view)),
    ]


# -- the "Generating" line ----------------------------------------------------------------------


def indicator(view: ChatView) -> GeneratingIndicator:
    return view.findChild(GeneratingIndicator)


def last_line_bottom(view: ChatView) -> float:
    """The bottom of the document's last line of text, in the viewport."""
    text_browser = browser(view)
    document = text_browser.document()
    area = document.documentLayout().blockBoundingRect(document.lastBlock())
    return area.bottom() - text_browser.verticalScrollBar().value()


def test_a_generating_line_moves_under_the_streaming_reply_until_it_ends(view, qtbot):
    line = indicator(view)
    view.set_messages([MessageView(1, "user", "Tell me about rivers.")])
    assert not line.isVisible()

    view.begin_reply(2)
    assert line.isVisible() and line.text().startswith("Generating")
    assert accessible(line).text(QAccessible.Text.Name) == "Generating a reply"
    frames = {line.text()}
    qtbot.waitUntil(lambda: frames.add(line.text()) or len(frames) >= 3, timeout=FRAME_MS * 6)  # the dots move
    assert accessible(line).text(QAccessible.Text.Name) == "Generating a reply"  # but not its name

    stream(qtbot, view, ["Rivers carry water ", "to the sea."])
    # Right under the reply's last line, not over it, and lined up with the text.
    assert 0 <= line.y() - last_line_bottom(view) <= 12
    assert line.x() == browser(view).side_margin()
    stream(qtbot, view, ["\n\n".join(f"Paragraph {i}." for i in range(60))])  # past the bottom of the pane
    qtbot.waitUntil(lambda: browser(view).verticalScrollBar().value() == browser(view).verticalScrollBar().maximum())
    assert 0 <= line.y() - last_line_bottom(view) <= 12
    assert line.geometry().bottom() <= browser(view).viewport().height()  # room was kept for it

    view.finish_reply("Rivers carry water to the sea.", STATS, ReplyStatus.COMPLETE)
    assert not line.isVisible()


def test_the_generating_line_goes_when_the_conversation_is_switched(view):
    view.begin_reply(1)
    assert indicator(view).isVisible()
    view.set_messages([MessageView(5, "user", "another conversation")])
    assert not indicator(view).isVisible()
