"""How the chat pane lays text out (offscreen, real widgets): code lines that wrap inside their
block instead of widening the pane, quotes that look like quotes, room around headings and
tables, and a reading column that follows the window's width."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QGuiApplication, QTextCursor
from PySide6.QtWidgets import QApplication
from support.chat_helpers import WAIT_MS, browser, click_anchor, hrefs, shown_view, stream

from app.engine.types import ReplyStatus
from app.ui.chat.browser import DOCUMENT_MARGIN
from app.ui.chat.markdown_render import CODE_HANG_PX, ZERO_WIDTH_SPACE
from app.ui.chat.view import ChatView, MessageView

LONG_LINE = "values = [" + ", ".join(f"'item {i}'" for i in range(200)) + "]"  # 2,000+ characters
UNBROKEN = "x" * 2_000


@pytest.fixture
def view(qtbot):
    return shown_view(qtbot, 1024, 640)


def blocks(view: ChatView):
    block = browser(view).document().begin()
    while block.isValid():
        yield block
        block = block.next()


def block_with(view: ChatView, text: str):
    return next(block for block in blocks(view) if text in block.text().replace(ZERO_WIDTH_SPACE, ""))


def settle() -> None:
    for _ in range(3):
        QApplication.processEvents()


# -- code blocks --------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1024, 420])
@pytest.mark.parametrize("line", [LONG_LINE, UNBROKEN], ids=["words", "unbroken"])
def test_a_long_code_line_wraps_in_its_block_and_the_pane_never_scrolls_sideways(view, qtbot, width, line):
    assert len(line) >= 2_000
    code = f"def f():\n    {line}\n    return values"
    view.resize(width, 500)
    view.set_messages([MessageView(1, "assistant", f"Here:\n\n```python\n{code}\n```\n\nDone.")])
    settle()

    assert browser(view).horizontalScrollBar().maximum() == 0
    wrapped = block_with(view, line[:40])
    assert wrapped.layout().lineCount() > 3  # it wraps inside the block
    assert wrapped.text().replace(ZERO_WIDTH_SPACE, "") == "    " + line  # shown whole
    # Copy gives the code exactly as written, with no break opportunities in it.
    copy = next(href for href in hrefs(view) if href.startswith("hearth:copy-code/"))
    with qtbot.waitSignal(view.copied, timeout=WAIT_MS):
        click_anchor(qtbot, view, copy)
    assert QGuiApplication.clipboard().text() == code
    # ... and so does a selection of the line.
    cursor = QTextCursor(wrapped)
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
    browser(view).setTextCursor(cursor)
    assert browser(view).createMimeDataFromSelection().text() == "    " + line


def test_a_streamed_long_code_line_never_widens_the_pane(view, qtbot):
    reply = f"```\n{UNBROKEN}\n{LONG_LINE}\n```\n"
    view.begin_reply(1)
    stream(qtbot, view, [reply[i:i + 50] for i in range(0, 1_200, 50)])  # inside the fence, unrendered
    settle()
    assert browser(view).horizontalScrollBar().maximum() == 0
    stream(qtbot, view, [reply[1_200:]])
    view.finish_reply(reply, None, ReplyStatus.COMPLETE)
    settle()
    assert browser(view).horizontalScrollBar().maximum() == 0


def test_a_wrapped_code_line_hangs_under_its_own_indentation(view):
    view.set_messages([MessageView(1, "assistant", f"```python\nif True:\n        {LONG_LINE}\n```")])
    settle()
    line = block_with(view, LONG_LINE[:40]).layout()
    space = browser(view).fontMetrics().horizontalAdvance(" ")  # about; the code font's is close
    first, second = line.lineAt(0).x(), line.lineAt(1).x()
    # The continuation starts past the line's 8 spaces of indentation, by the hang.
    assert second - first > CODE_HANG_PX + 4 * space
    unindented = block_with(view, "if True:").blockFormat()
    assert unindented.leftMargin() == CODE_HANG_PX and unindented.textIndent() == -CODE_HANG_PX


# -- quotes, headings, tables -------------------------------------------------------------------


def test_a_quote_has_a_rule_down_its_side_and_reads_muted_and_italic(view):
    view.set_messages([MessageView(1, "assistant", "Before.\n\n> Quoted words\n\nAfter.")])
    quoted = block_with(view, "Quoted words")
    cursor = QTextCursor(quoted)
    cell = cursor.currentTable().cellAt(cursor)
    assert cell.format().toTableCellFormat().leftBorder() >= 2
    assert cell.format().toTableCellFormat().leftPadding() >= 8
    quote_format = quoted.begin().fragment().charFormat()
    body_format = block_with(view, "Before.").begin().fragment().charFormat()
    assert quote_format.fontItalic() and not body_format.fontItalic()
    assert quote_format.foreground().color() != body_format.foreground().color()


def test_reasoning_is_ruled_like_a_quote_but_upright(view):
    view.set_messages([MessageView(1, "assistant", "<think>\nLet me see.\n</think>\n\nThe answer.")])
    reasoning = block_with(view, "Let me see.")
    cursor = QTextCursor(reasoning)
    assert cursor.currentTable().cellAt(cursor).format().toTableCellFormat().leftBorder() >= 2
    assert not reasoning.begin().fragment().charFormat().fontItalic()


def test_headings_and_tables_have_room_around_them(view):
    view.set_messages([MessageView(1, "assistant", "Intro.\n\n## Heading\n\nText.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nAfter.")])
    heading = block_with(view, "Heading").blockFormat()
    assert heading.topMargin() >= 12 and heading.bottomMargin() >= 4
    cursor = QTextCursor(block_with(view, "1"))
    table = cursor.currentTable().format()
    assert table.cellPadding() >= 6
    assert table.topMargin() >= 4 and table.bottomMargin() >= 4


# -- the reading column -------------------------------------------------------------------------


PARAGRAPH = "A sentence that goes on for a while, so that the paragraph fills a line. " * 30


def text_span(view: ChatView) -> tuple[float, float]:
    """Left and right edges of the long paragraph, in the viewport."""
    area = browser(view).document().documentLayout().blockBoundingRect(block_with(view, PARAGRAPH[:30]))
    return area.left(), area.right()


def even_beside(width: int, column: int) -> int:
    """`width`, or one pixel wider, so that what the column leaves splits into two equal side
    margins. The column is measured from the fonts (591 px on one run of the suite, 594 on
    another) and the margins are whole pixels: with an odd remainder the text is laid out one
    pixel wider than the column, whichever width the fonts gave."""
    return width + (width - column) % 2


def test_on_a_large_window_the_text_keeps_to_a_centred_column_and_follows_resizes(view, qtbot):
    text_browser = browser(view)
    view.set_messages([MessageView(1, "assistant", PARAGRAPH)])
    column = text_browser.reading_width()
    assert 500 <= column <= 900

    view.resize(even_beside(1920, column), 1080)
    settle()
    left, right = text_span(view)
    viewport = text_browser.viewport().width()
    assert right - left <= column
    assert abs(left - (viewport - right)) <= 2  # centred
    assert left > 300

    view.resize(column, 500)  # a small window: the whole width, less the usual margin
    settle()
    left, right = text_span(view)
    assert left == DOCUMENT_MARGIN
    assert right >= text_browser.viewport().width() - DOCUMENT_MARGIN - 1

    view.set_messages([MessageView(1, "assistant", PARAGRAPH)])  # a new document keeps the column
    view.resize(even_beside(1600, column), 900)
    settle()
    left, right = text_span(view)
    assert left > DOCUMENT_MARGIN and right - left <= column
