"""Versions, branches, the context boundary and reveal in the chat pane (offscreen, real
widgets): the links are clicked with the mouse or reached with Tab and activated with Enter,
as a user does; the window's side is a slot that answers as the window would."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAccessible, QPalette, QTextCursor
from PySide6.QtWidgets import QApplication
from support.chat_helpers import WAIT_MS, browser, click_anchor, fragments, hrefs, plain_text, shown_view, stream

from app.engine.types import ReplyStatus
from app.ui.chat.inline_editor import InlineEditor
from app.ui.chat.theme import ChatTheme
from app.ui.chat.view import ChatView, MessageView
from app.ui.widgets.colors import MIN_CONTRAST, contrast
from app.ui.window import appearance

CONVERSATION = [
    MessageView(1, "user", "What is a delta?"),
    MessageView(2, "assistant", "A landform at a river's mouth."),
    MessageView(3, "user", "And an estuary?", version=2, versions=3),
    MessageView(4, "assistant", "Where a river meets the sea.", version=1, versions=2),
]
DIVIDER_2 = "The model did not see the 2 messages above this line"


@pytest.fixture
def view(qtbot):
    return shown_view(qtbot, 800, 600, exposed=True)


@pytest.fixture
def announcements(monkeypatch):
    """The texts announced to assistive technology."""
    heard = []

    def update(event):
        if event.type() == QAccessible.Event.Announcement:
            heard.append(event.message())

    monkeypatch.setattr(QAccessible, "updateAccessibility", update)
    return heard


def long_conversation(pairs: int) -> list[MessageView]:
    messages = []
    for i in range(pairs):
        messages.append(MessageView(2 * i + 1, "user", f"Question number {i}?", version=1, versions=2))
        messages.append(MessageView(2 * i + 2, "assistant", f"Answer number {i}. " + "Words and more words. " * 40))
    return messages


def marked_href(view: ChatView) -> str | None:
    """The link the keyboard's mark is on (Tab selects it), or None."""
    cursor = browser(view).textCursor()
    if not cursor.hasSelection():
        return None
    inside = QTextCursor(cursor)
    inside.setPosition(cursor.selectionStart() + 1)
    return inside.charFormat().anchorHref() or None


def tab_to(qtbot, view: ChatView, href: str) -> None:
    """Tab through the pane's links, as a keyboard user does, until `href` is marked."""
    browser(view).setFocus()
    qtbot.waitUntil(browser(view).hasFocus, timeout=WAIT_MS)
    for _ in range(len(hrefs(view))):
        qtbot.keyClick(browser(view), Qt.Key.Key_Tab)
        if marked_href(view) == href:
            return
    raise AssertionError(f"Tab never reached {href}")


def top_in_viewport(view: ChatView, text: str) -> float:
    """Where the first line reading `text` is, in the viewport."""
    found = browser(view).document().find(text)
    assert not found.isNull(), text
    return browser(view).cursorRect(found).top()


def lines(view: ChatView) -> list[str]:
    return plain_text(view).split("\n")


# -- the version switcher -----------------------------------------------------------------------


def test_a_message_with_versions_shows_where_it_stands_and_steps_by_its_id(view, qtbot):
    view.set_messages(CONVERSATION)
    assert "‹ 2/3 ›" in plain_text(view) and "‹ 1/2 ›" in plain_text(view)
    switchers = [line for line in lines(view) if "/" in line and "Copy" in line]
    assert len(switchers) == 2  # none under a message with one version
    assert not any(href.endswith(("version/1", "version/2")) for href in hrefs(view))

    stepped = []
    view.versionStepped.connect(lambda message_id, step: stepped.append((message_id, step)))
    click_anchor(qtbot, view, "hearth:previous-version/3")
    click_anchor(qtbot, view, "hearth:next-version/3")
    click_anchor(qtbot, view, "hearth:next-version/4")
    assert stepped == [(3, -1), (3, 1), (4, 1)]


def test_an_arrow_at_an_end_is_dimmed_text_and_does_nothing(view, qtbot):
    view.set_messages(CONVERSATION)
    assert "hearth:previous-version/4" not in hrefs(view)  # 1 of 2: nothing before it
    assert "hearth:next-version/4" in hrefs(view)
    link = next(fmt for text, fmt in fragments(view) if fmt.anchorHref() == "hearth:next-version/4")
    dimmed = next(fmt for text, fmt in fragments(view) if text.startswith("‹") and not fmt.isAnchor())
    assert dimmed.foreground().color() != link.foreground().color()

    stepped = []
    view.versionStepped.connect(lambda message_id, step: stepped.append((message_id, step)))
    text_browser = browser(view)
    found = text_browser.document().find("‹ 1/2")
    found.setPosition(found.selectionStart() + 1)
    rect = text_browser.cursorRect(found)
    qtbot.mouseClick(text_browser.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.left() - 3, rect.center().y()))
    assert stepped == []


def test_the_switcher_is_reached_from_the_keyboard_says_what_it_does_and_keeps_the_keyboard(
        view, qtbot, announcements):
    view.set_messages(CONVERSATION)
    tab_to(qtbot, view, "hearth:next-version/3")
    qtbot.waitUntil(lambda: bool(announcements), timeout=WAIT_MS)
    assert announcements[-1] == "Next version (Version 2 of 3 is shown), link"

    def show_version(message_id: int, step: int) -> None:  # as the window does
        assert (message_id, step) == (3, 1)
        view.set_messages(CONVERSATION[:2] + [MessageView(30, "user", "And a lagoon?", version=3, versions=3)])

    view.versionStepped.connect(show_version)
    qtbot.keyClick(browser(view), Qt.Key.Key_Return)
    assert "And a lagoon?" in plain_text(view) and "‹ 3/3 ›" in plain_text(view)
    assert announcements[-1] == "Version 3 of 3"
    # The same place: the new version's arrow back (the last one, no longer a link, ahead).
    assert marked_href(view) == "hearth:previous-version/30"
    qtbot.keyClick(browser(view), Qt.Key.Key_Tab)  # and Tab goes on from there
    assert marked_href(view) == "hearth:copy-message/2"


def test_copy_is_announced_by_its_full_name_when_the_keyboard_reaches_it(view, qtbot, announcements):
    view.set_messages(CONVERSATION[:1])
    tab_to(qtbot, view, "hearth:copy-message/0")
    qtbot.waitUntil(lambda: bool(announcements), timeout=WAIT_MS)
    assert announcements == ["Copy this message, link"]


def test_a_step_keeps_the_message_where_it_was_instead_of_jumping_to_the_end(view, qtbot):
    messages = long_conversation(10)
    view.set_messages(messages)
    bar = browser(view).verticalScrollBar()
    bar.setValue(bar.value() + int(top_in_viewport(view, "Question number 2?")) - 150)  # the user scrolls up
    before = top_in_viewport(view, "Question number 2?")
    assert 140 <= before <= 160

    def show_version(message_id: int, step: int) -> None:
        replaced = messages[:4] + [MessageView(50, "user", "Question number 2, again?", version=2, versions=2)]
        view.set_messages(replaced + long_conversation(10)[5:])  # the branch below it, as long

    view.versionStepped.connect(show_version)
    click_anchor(qtbot, view, "hearth:next-version/5")
    assert abs(top_in_viewport(view, "Question number 2, again?") - before) <= 2
    assert bar.value() < bar.maximum() and not view.is_following()


def test_a_step_the_window_refuses_leaves_the_next_conversation_shown_as_usual(view, qtbot):
    view.set_messages(long_conversation(10))
    click_anchor(qtbot, view, "hearth:next-version/5")  # no one answers: a reply is being written
    view.set_messages(long_conversation(10))
    bar = browser(view).verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() == bar.maximum(), timeout=WAIT_MS)
    assert view.is_following()


def test_a_regenerated_reply_offers_its_versions_when_it_finishes(view, qtbot):
    view.set_messages(CONVERSATION[:3])
    view.begin_reply(7, "Model", version=2, versions=2)
    stream(qtbot, view, ["Another answer"])
    assert not any(href.endswith("/7") for href in hrefs(view))  # nothing under a reply being written
    view.finish_reply("Another answer", None, ReplyStatus.COMPLETE)
    assert "hearth:previous-version/7" in hrefs(view) and "‹ 2/2 ›" in plain_text(view)
    assert {"hearth:branch/7", "hearth:delete-version/7", "hearth:regenerate"} <= set(hrefs(view))


# -- branch and delete --------------------------------------------------------------------------


def test_branch_is_under_every_message_and_delete_under_those_with_versions(view, qtbot):
    view.set_messages(CONVERSATION)
    assert [h for h in hrefs(view) if h.startswith("hearth:branch/")] == [f"hearth:branch/{i}" for i in (1, 2, 3, 4)]
    assert [h for h in hrefs(view) if h.startswith("hearth:delete-version/")] == [
        "hearth:delete-version/3", "hearth:delete-version/4"]

    with qtbot.waitSignal(view.branchRequested, timeout=WAIT_MS) as branch:
        click_anchor(qtbot, view, "hearth:branch/2")
    assert branch.args == [2]
    with qtbot.waitSignal(view.deleteVersionRequested, timeout=WAIT_MS) as delete:
        click_anchor(qtbot, view, "hearth:delete-version/3")
    assert delete.args == [3]


def test_branch_works_from_the_keyboard(view, qtbot):
    view.set_messages(CONVERSATION)
    tab_to(qtbot, view, "hearth:branch/4")
    with qtbot.waitSignal(view.branchRequested, timeout=WAIT_MS) as branch:
        qtbot.keyClick(browser(view), Qt.Key.Key_Return)
    assert branch.args == [4]


# -- the context boundary -----------------------------------------------------------------------


def dividers(view: ChatView) -> list[int]:
    """For each divider caption, the index of the line it is on."""
    return [i for i, line in enumerate(lines(view)) if line.startswith("The model did not see")]


def test_the_boundary_is_drawn_after_its_message_and_moves_and_clears(view):
    view.set_messages(CONVERSATION)
    view.set_context_boundary(2, 2)
    text = plain_text(view)
    assert text.count(DIVIDER_2) == 1
    assert text.index("A landform at a river's mouth.") < text.index(DIVIDER_2) < text.index("And an estuary?")

    view.set_context_boundary(3, 3)
    text = plain_text(view)
    assert "did not see the 2" not in text and text.count("The model did not see") == 1
    assert text.index("And an estuary?") < text.index("did not see the 3 messages") < text.index("Where a river")
    view.set_context_boundary(1, 1)
    assert "The model did not see the message above this line" in plain_text(view)

    view.set_context_boundary(None)
    assert dividers(view) == []
    view.set_context_boundary(2, 2)
    view.set_messages(CONVERSATION)
    assert dividers(view) == []  # a conversation shown afresh has none until the window says


def test_the_divider_is_a_muted_line_readable_in_either_palette(view, qtbot):
    view.set_messages(CONVERSATION)
    view.set_context_boundary(2, 2)
    original = QPalette(QApplication.palette())
    try:
        for palette in (appearance.light_palette(), appearance.dark_palette()):
            QApplication.setPalette(palette)
            muted = ChatTheme.from_palette(palette).muted
            qtbot.waitUntil(lambda: caption_colour(view) == muted, timeout=WAIT_MS)  # drawn again in the new colours
            assert plain_text(view).count(DIVIDER_2) == 1
            caption = caption_colour(view)
            base = palette.color(QPalette.ColorRole.Base)
            assert contrast(caption, base) >= MIN_CONTRAST
            assert caption != palette.color(QPalette.ColorRole.Text)  # muted, not the text colour
    finally:
        QApplication.setPalette(original)


def caption_colour(view: ChatView):
    return next(fmt for text, fmt in fragments(view) if text == DIVIDER_2).foreground().color()


def test_a_boundary_behind_show_earlier_is_drawn_once_its_message_is(view, qtbot):
    messages = long_conversation(30)
    view.set_messages(messages)
    hidden = view.hidden_count()
    view.set_context_boundary(2, 2)  # the first reply, on a page not rendered yet
    assert dividers(view) == []
    while view.hidden_count():
        click_anchor(qtbot, view, "hearth:show-earlier")
    assert hidden > 0 and len(dividers(view)) == 1
    text = plain_text(view)
    assert text.index("Answer number 0.") < text.index(DIVIDER_2) < text.index("Question number 1?")


def test_the_divider_stays_through_the_editor(view, qtbot):
    view.set_messages(CONVERSATION)
    view.set_context_boundary(2, 2)
    click_anchor(qtbot, view, "hearth:edit/3")
    editor = view.findChild(InlineEditor)
    assert len(dividers(view)) == 1
    qtbot.mouseClick(editor.cancel_button, Qt.MouseButton.LeftButton)
    assert len(dividers(view)) == 1 and "And an estuary?" in plain_text(view)


def test_a_reply_goes_on_streaming_below_a_divider_drawn_and_taken_away_above_it(view, qtbot):
    view.set_messages(CONVERSATION)
    view.begin_reply(5)
    stream(qtbot, view, ["The first half\n\n"])
    view.set_context_boundary(3, 3)
    stream(qtbot, view, ["and the second "])
    assert view.text_of_reply() == "The first half\nand the second "
    view.set_context_boundary(None)
    stream(qtbot, view, ["and the rest."])
    assert view.text_of_reply() == "The first half\nand the second and the rest."
    view.set_context_boundary(4, 4)
    view.finish_reply("The first half\n\nand the second and the rest.", None, ReplyStatus.COMPLETE)
    assert view.text_of_reply() == "The first half\nand the second and the rest."
    text = plain_text(view)
    assert text.count("The model did not see") == 1
    assert text.index("Where a river") < text.index("did not see the 4") < text.index("The first half")
    assert "hearth:regenerate" in hrefs(view)

    view.set_context_boundary(1, 1)  # moved above the finished reply: a shorter caption
    assert view.text_of_reply() == "The first half\nand the second and the rest."
    view.add_message(MessageView(6, "user", "Thanks"))  # Regenerate leaves the reply's footer
    assert "hearth:regenerate" not in hrefs(view)
    assert plain_text(view).endswith("and the rest.\nCopy  ·  Branch\nYou\nThanks\nCopy  ·  Edit  ·  Branch")


def test_a_boundary_drawn_above_the_pane_does_not_move_what_is_read(view, qtbot):
    view.set_messages(long_conversation(10))
    click_anchor(qtbot, view, "hearth:copy-message/14")
    before = top_in_viewport(view, "Question number 7?")
    view.set_context_boundary(4, 4)
    assert abs(top_in_viewport(view, "Question number 7?") - before) <= 1


# -- reveal -------------------------------------------------------------------------------------


def test_reveal_renders_scrolls_to_and_marks_a_hidden_message(view, qtbot, announcements, monkeypatch):
    monkeypatch.setattr("app.ui.chat.reveal_mark.MARK_MS", 100)
    fast = ChatView()  # made after the patch: its mark lasts 100 ms
    fast.resize(800, 600)
    qtbot.addWidget(fast)
    fast.show()
    messages = long_conversation(40)
    fast.set_messages(messages)
    hidden = fast.hidden_count()
    assert "Question number 3?" not in plain_text(fast)

    assert fast.reveal(7)  # "Question number 3?"
    assert 0 < fast.hidden_count() < hidden
    y = top_in_viewport(fast, "Question number 3?")
    assert 0 <= y < browser(fast).viewport().height() // 2
    marks = browser(fast).extraSelections()
    assert len(marks) == 1 and marks[0].cursor.selectedText().replace("\u2029", "\n") == "You\nQuestion number 3?"
    assert announcements[-1] == "Found in your message: Question number 3?"
    qtbot.waitUntil(lambda: not browser(fast).extraSelections(), timeout=WAIT_MS)  # briefly

    assert not fast.reveal(999)
    assert view.reveal(1) is False  # nothing handed over


def test_the_mark_is_readable_in_either_palette(qapp):
    for palette in (appearance.light_palette(), appearance.dark_palette()):
        marked = palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.HighlightedText)
        assert contrast(marked, palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Highlight)) >= MIN_CONTRAST
