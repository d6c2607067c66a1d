"""The tool call card, driven as a user drives it: the keyboard on Allow once when it appears,
Tab and Alt+letter to the three answers, Space and Enter to press them, Stop while it runs, the
result shown by keyboard; what a screen reader hears; foreign names and results shown inert."""

from __future__ import annotations

import html
import struct
import time
import zlib

import pytest
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QColor, QImage, QPalette, QTextDocument
from PySide6.QtWidgets import QApplication
from support.widget_walk import unnamed_widgets
from tool_helpers import WEATHER, shown_card

from app.tool_servers.approval import Decision, PendingCall
from app.tool_servers.types import PartKind, ResultPart, ToolOutcome
from app.ui.chat import tool_card
from app.ui.chat.tool_card import CardState
from app.ui.widgets.badge import Badge
from app.ui.widgets.colors import MIN_CONTRAST, contrast, mix
from app.ui.widgets.plain_box import SHOWN_CHARS
from app.ui.widgets.tool_result import THUMB_PX, thumbnail
from app.ui.window.appearance import dark_palette, light_palette

HOSTILE = "<b>x</b>\u202eexe.txt\x07\x1b[31m"


def png(width: int, height: int) -> bytes:
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("#3a7bd5"))
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data)


def decisions(card) -> list[Decision]:
    got: list[Decision] = []
    card.decided.connect(got.append)
    return got


def focused():
    return QApplication.focusWidget()


def shown_text(label) -> str:
    """What a rich text label shows, as text."""
    document = QTextDocument()
    document.setHtml(label.text())
    return document.toPlainText()


# -- asking -------------------------------------------------------------------------------------


def test_allow_once_has_the_keyboard_and_enter_allows(qtbot, heard):
    card = shown_card(qtbot)
    got = decisions(card)
    assert focused() is card.allow_button
    assert heard == ["Hearth asks: run get_weather from weather?"]
    qtbot.keyClick(focused(), Qt.Key.Key_Return)
    assert got == [Decision.ALLOW_ONCE]
    assert card.state is CardState.RUNNING
    assert focused() is card.stop_button, "the keyboard stays in the card, on Stop"
    qtbot.keyClick(focused(), Qt.Key.Key_Return)  # a second press answers nothing more
    assert got == [Decision.ALLOW_ONCE]


def test_tab_reaches_the_three_answers_and_space_denies(qtbot):
    card = shown_card(qtbot)
    got = decisions(card)
    qtbot.keyClick(focused(), Qt.Key.Key_Tab)
    assert focused() is card.always_button
    qtbot.keyClick(focused(), Qt.Key.Key_Tab)
    assert focused() is card.deny_button
    qtbot.keyClick(focused(), Qt.Key.Key_Backtab)
    qtbot.keyClick(focused(), Qt.Key.Key_Backtab)
    qtbot.keyClick(focused(), Qt.Key.Key_Backtab)
    assert focused() is card.arguments, "Shift+Tab goes back to the arguments above the answers"
    qtbot.keyClick(focused(), Qt.Key.Key_Tab)
    qtbot.keyClick(focused(), Qt.Key.Key_Tab)
    qtbot.keyClick(focused(), Qt.Key.Key_Tab)
    qtbot.keyClick(focused(), Qt.Key.Key_Space)
    assert got == [Decision.DENY]
    assert card.state is CardState.DENIED and "Denied" in card.status.text()


def test_alt_and_a_letter_answer(qtbot):
    card = shown_card(qtbot)
    got = decisions(card)
    qtbot.keyClick(focused(), Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: got == [Decision.ALWAYS])  # a mnemonic clicks as the mouse would, animated
    assert card.state is CardState.RUNNING
    other = shown_card(qtbot, PendingCall("c2", "files", "delete", "{}"))
    got = decisions(other)
    qtbot.keyClick(focused(), Qt.Key.Key_D, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: got == [Decision.DENY])


def test_escape_denies_nothing(qtbot):
    card = shown_card(qtbot)
    got = decisions(card)
    qtbot.keyClick(focused(), Qt.Key.Key_Escape)
    assert got == [] and card.state is CardState.AWAITING


def test_a_key_pressed_before_the_card_had_been_seen_answers_nothing(qtbot, monkeypatch):
    monkeypatch.setattr(tool_card, "ARM_MS", 400)
    card = shown_card(qtbot)
    got = decisions(card)
    qtbot.keyClick(focused(), Qt.Key.Key_Space)  # meant for the message box a moment ago
    assert got == [] and card.state is CardState.AWAITING
    qtbot.wait(450)
    qtbot.keyClick(focused(), Qt.Key.Key_Space)
    assert got == [Decision.ALLOW_ONCE]


def test_the_servers_hints_are_badges_that_say_whose_word_they_are(qtbot):
    card = shown_card(qtbot, PendingCall("c", "files", "rm", "{}", read_only=False, destructive=True))
    names = sorted(label.accessibleName() for label in card.findChildren(Badge))
    assert names == ["Destructive, the server says"]
    card = shown_card(qtbot)
    assert [b.text() for b in card.findChildren(Badge)] == ["Read-only · the server says"]


# -- running and ending -------------------------------------------------------------------------


def test_stop_asks_once_and_the_outcome_ends_the_card(qtbot, heard):
    card = shown_card(qtbot, awaiting=False)
    assert card.state is CardState.RUNNING and heard == ["Running get_weather"]
    assert card.busy.isVisible() and card.elapsed.text().startswith("Running")
    with qtbot.waitSignal(card.stopRequested):
        qtbot.keyClick(focused(), Qt.Key.Key_S, Qt.KeyboardModifier.AltModifier)
    assert not card.stop_button.isEnabled()
    card.set_outcome(ToolOutcome("The user stopped this call before it finished.", error=True, elapsed_s=1.5))
    assert card.state is CardState.DONE
    assert card.status.text() == "Failed after 1.5 s: The user stopped this call before it finished."
    assert not card.busy.isVisible() and heard[-1].startswith("get_weather: Failed")
    card.set_denied()  # too late: nothing changes
    assert card.state is CardState.DONE


def test_the_result_is_shown_by_keyboard_with_its_text_images_and_json(qtbot):
    card = shown_card(qtbot, awaiting=False)
    parts = (ResultPart(PartKind.TEXT, "First line\nsecond line"),
             ResultPart(PartKind.IMAGE, data=png(400, 200), mime="image/png"),
             ResultPart(PartKind.IMAGE, data=b"not an image at all", mime="image/png"),
             ResultPart(PartKind.JSON, '{"a": 1}'),
             ResultPart(PartKind.OTHER, "An audio clip (audio/wav), not shown"))
    card.set_outcome(ToolOutcome("First line\nsecond line", parts=parts, elapsed_s=0.25))
    assert card.status.text() == "Done in 0.2 s: First line second line"
    assert focused() is card.result_toggle and card.result_view() is None, "collapsed, nothing made yet"
    folded = card.preferred_height()
    qtbot.keyClick(focused(), Qt.Key.Key_Space)
    view = card.result_view()
    assert view is not None and view.isVisible() and card.result_toggle.accessibleName() == "Hide result"
    assert [box.toPlainText() for box in view.boxes] == ["First line\nsecond line", '{"a": 1}']
    assert len(view.images) == 1 and max(view.images[0].pixmap().width(), view.images[0].pixmap().height()) == THUMB_PX
    lines = [label.text() for label in view.findChildren(type(card.status)) if label not in view.images]
    assert any("could not be shown" in line for line in lines) and any("audio" in line for line in lines)
    assert card.preferred_height() > folded
    qtbot.keyClick(focused(), Qt.Key.Key_Space)
    assert not view.isVisible() and card.preferred_height() == folded


def test_an_error_outcome_is_red(qtbot):
    from app.ui.widgets.colors import Tone, tone_of

    card = shown_card(qtbot, awaiting=False)
    card.set_outcome(ToolOutcome("The call timed out after 60 s.", error=True))
    assert tone_of(card.status) is Tone.ERROR


def test_an_image_claiming_a_giant_size_is_not_decoded():
    ihdr = struct.pack(">IIBBBBB", 60_000, 60_000, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    started = time.perf_counter()
    assert thumbnail(header + b"\0" * 1000) is None
    assert time.perf_counter() - started < 0.5
    assert thumbnail(png(20, 10)).size().width() == 20


# -- foreign text --------------------------------------------------------------------------------


def test_names_and_arguments_with_html_bidi_and_control_characters_stay_inert(qtbot):
    card = shown_card(qtbot, PendingCall("c", HOSTILE, HOSTILE, '{"a": "' + HOSTILE + '"}\n\t<script>'))
    title = shown_text(card.title)
    assert "<b>x</b>" in title, "the tag is shown as text, not made bold"
    assert html.escape("<b>x</b>") in card.title.text()
    for text in (title, card.accessibleName(), card.arguments.toPlainText(), card.allow_button.accessibleDescription()):
        assert not any(char in text for char in "\u202e\x07\x1b"), text
    assert "<script>" in card.arguments.toPlainText()
    card.set_running()
    card.set_outcome(ToolOutcome(HOSTILE + "\nmore", parts=(ResultPart(PartKind.TEXT, HOSTILE + "\nmore"),)))
    card.result_toggle.click()
    (box,) = card.result_view().boxes
    assert box.toPlainText().startswith("<b>x</b>\ufffdexe.txt\ufffd\ufffd[31m")
    assert "\u202e" not in card.status.text() and card.status.textFormat() == Qt.TextFormat.PlainText


def test_a_32_kb_result_shows_at_once_and_a_huge_one_is_cut(qtbot):
    card = shown_card(qtbot, awaiting=False)
    text = "x" * (32 * 1024)  # one run: the slowest kind of text to lay out
    card.set_outcome(ToolOutcome(text, cut=True))
    started = time.perf_counter()
    card.result_toggle.click()
    card.grab()  # laid out and painted
    assert time.perf_counter() - started < 0.5
    huge = shown_card(qtbot, awaiting=False)
    lines = "".join(f"line {i} of a result far beyond its cap\n" for i in range(200_000))  # 8 MB
    huge.set_outcome(ToolOutcome(lines[:1000], parts=(ResultPart(PartKind.TEXT, lines),)))
    started = time.perf_counter()
    huge.result_toggle.click()
    huge.grab()
    assert time.perf_counter() - started < 1.0
    (box,) = huge.result_view().boxes
    assert len(box.toPlainText()) < SHOWN_CHARS + 100 and box.toPlainText().endswith("more characters not shown")


def test_every_control_has_a_name_and_a_description(qtbot):
    card = shown_card(qtbot, WEATHER)
    assert unnamed_widgets(card.window()) == []
    for button in (card.allow_button, card.always_button, card.deny_button):
        assert button.accessibleDescription()
    card.set_running()
    assert unnamed_widgets(card.window()) == []
    card.set_outcome(ToolOutcome("ok", parts=(ResultPart(PartKind.IMAGE, data=png(10, 10), mime="image/png"),)))
    card.result_toggle.click()
    assert unnamed_widgets(card.window()) == []
    assert card.result_toggle.accessibleDescription() == card.status.text()
    assert card.result_view().images[0].accessibleName() == "Image 1 of the result"


@pytest.mark.parametrize("dark", [False, True])
def test_the_cards_words_read_in_both_appearances(qtbot, qapp, dark):
    palette = qapp.palette()
    qapp.setPalette(dark_palette() if dark else light_palette())
    try:
        card = shown_card(qtbot, PendingCall("c", "files", "rm", "{}", read_only=True, destructive=True))
        base, text = card.palette().color(QPalette.ColorRole.Base), card.palette().color(QPalette.ColorRole.Text)
        page = mix(base, text, 0.035)  # the card's own background
        badges = card.findChildren(Badge)
        card.set_running()
        card.set_outcome(ToolOutcome("boom", error=True))
        denied = shown_card(qtbot)
        denied.set_denied()
        for label in (*badges, card.status, denied.status):
            colour = label.palette().color(QPalette.ColorRole.WindowText)
            assert contrast(colour, page) >= MIN_CONTRAST, label.text()
    finally:
        qapp.setPalette(palette)
