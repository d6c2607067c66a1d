"""Writing messages into the chat pane's document, and the workarounds Qt's rich text needs.

A message is written in parts (a label, a Markdown body, a footer of small links), each in a
block of its own. Qt's HTML import and fragment insertion leave an empty line after every table
(code blocks and quotes are tables), drop the format of a fragment's first block, and draw a
rule that directly follows a table beside it; the helpers after the writer put these right.
A wrapped line of code hangs under its own indentation (CSS has no way to say that).

A message's label and footer blocks carry its id (MESSAGE_START, MESSAGE_END), and the context
divider's blocks a mark of their own (DIVIDER), so the view can find them again in the document
without keeping positions that every edit before them would move.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
    QTextFrameFormat,
    QTextLength,
)

from .markdown_render import CODE_HANG_PX, ZERO_WIDTH_SPACE, MarkdownRenderer
from .theme import ChatTheme

# Block properties marking what a block is: the label (start) or footer (end) of the message
# with this id, or a part of the context divider.
MESSAGE_START = QTextFormat.Property.UserProperty + 1
MESSAGE_END = QTextFormat.Property.UserProperty + 2
DIVIDER = QTextFormat.Property.UserProperty + 3

_DIVIDER_LINE_PX = 8  # the height of the divider's line's block: the line is drawn across its middle


@dataclass(frozen=True)
class FooterPart:
    """A piece of a footer line: a link when href is set, else muted text. `name` is what the
    piece is called in full, as its tooltip (and to a screen reader, for a link) when its text
    is not enough, e.g. an arrow."""

    text: str
    href: str | None = None
    name: str | None = None
    large: bool = False  # at the text's size, in bold (an arrow: a small one is hard to hit)


class DocumentWriter:
    """Writes the parts of a message (label, Markdown body, footer) into the document.

    Every part starts in an empty block: the one at the cursor if it is empty (the document's
    first block, the block Qt leaves after a table or a frame), otherwise a new one.
    """

    BUBBLE_INDENT = 48  # user messages sit to the right, as in most chat apps

    def __init__(self, theme: ChatTheme, renderer: MarkdownRenderer, code_space_px: float) -> None:
        """code_space_px: the width of a space in the pane's code font."""
        self.theme = theme
        self._code_space_px = code_space_px
        self._renderer = renderer
        self._style_sheet = renderer.style_sheet()
        self._muted = _small(QTextCharFormat())
        self._muted.setForeground(theme.muted)
        self._label = QTextCharFormat(self._muted)
        self._label.setFontWeight(QFont.Weight.Bold)
        self._mono = QTextCharFormat()
        self._mono.setFontFamilies([theme.render.mono_family, "monospace"])
        self._reasoning = QTextCharFormat()
        self._reasoning.setForeground(theme.muted)

    def bubble(self, cursor: QTextCursor) -> None:
        """Open the frame a user message sits in; the cursor ends inside it."""
        frame = QTextFrameFormat()
        frame.setBackground(self.theme.bubble)
        frame.setPadding(10)
        frame.setTopMargin(14)
        frame.setLeftMargin(self.BUBBLE_INDENT)
        frame.setBorder(0)
        cursor.insertFrame(frame)

    def label(self, cursor: QTextCursor, text: str, top_margin: int, message_id: int | None = None) -> None:
        """The name above a message (its author); marked with the message's id."""
        block = QTextBlockFormat()
        block.setTopMargin(top_margin)
        block.setBottomMargin(2)
        if message_id is not None:
            block.setProperty(MESSAGE_START, message_id)
        self.new_block(cursor, block, self._label)
        cursor.insertText(text, self._label)

    def markdown(self, cursor: QTextCursor, text: str) -> int:
        """Render text in a new block at the cursor; return where it starts."""
        self.new_block(cursor, QTextBlockFormat(), QTextCharFormat())
        fragment = QTextDocument()
        fragment.setDefaultStyleSheet(self._style_sheet)
        fragment.setHtml(self._renderer.render(text))
        _tidy_after_tables(fragment)
        _hang_code_lines(fragment, self._code_space_px)
        first = fragment.begin()
        start = cursor.position()
        cursor.insertFragment(QTextDocumentFragment(fragment))
        # Qt merges the fragment's first block into the block at the cursor and drops its
        # format; put it back, or for a first list drop the empty block Qt leaves before it.
        fix = QTextCursor(cursor.document())
        fix.setPosition(start)
        if first.textList() is not None:
            fix.deleteChar()
        elif first.length() == 1 and _in_table(first.next()):
            fix.setBlockFormat(_spacer())  # a table must follow some block: keep that one thin
        else:
            fix.setBlockFormat(first.blockFormat())
            if _is_rule(first) and _in_table(fix.block().previous()):
                _stand_rule_on_spacer(fix)
        return start

    def plain_block(self, cursor: QTextCursor) -> None:
        self.new_block(cursor, QTextBlockFormat(), QTextCharFormat())

    def note_format(self) -> QTextCharFormat:
        """A note about the reply rather than its text, such as how far the prompt was read."""
        return QTextCharFormat(self._muted)

    def plain_format(self, code: bool, thinking: bool) -> QTextCharFormat:
        """The format of streamed text not yet rendered: monospace inside a code fence, muted
        in a reasoning section (as it will be rendered)."""
        if thinking:
            return self._reasoning
        return self._mono if code else QTextCharFormat()

    def footer(
        self, cursor: QTextCursor, parts: list[FooterPart], note: str, indent: bool, message_id: int | None = None,
    ) -> None:
        """A small line of links and muted text, then a muted note such as reply stats;
        indented to line up with a user's bubble, and marked with the message's id."""
        block = QTextBlockFormat()
        block.setLeftMargin(self.BUBBLE_INDENT if indent else 0)
        block.setTopMargin(2)
        block.setBottomMargin(4)
        if message_id is not None:
            block.setProperty(MESSAGE_END, message_id)
        self.new_block(cursor, block, self._muted)
        for part in parts:
            piece = QTextCharFormat(self._muted)
            if part.href is not None:
                piece.setForeground(self.theme.link)
                piece.setAnchor(True)
                piece.setAnchorHref(part.href)
            if part.name:
                piece.setToolTip(part.name)
            if part.large:
                piece.setProperty(QTextFormat.Property.FontSizeAdjustment, 0)
                piece.setFontWeight(QFont.Weight.Bold)
            cursor.insertText(part.text, piece)
        if note:
            cursor.insertText("\u2003\u2003" + note, self._muted)

    def divider(self, cursor: QTextCursor, text: str) -> None:
        """A line across the column with a muted caption under it (the context boundary).

        The line is Qt's horizontal rule, which takes its colour from the block's background
        brush; a brush with no fill style gives the colour without filling the block.
        """
        line = QTextBlockFormat()
        line.setProperty(DIVIDER, True)
        line.setProperty(QTextFormat.Property.BlockTrailingHorizontalRulerWidth,
                         QTextLength(QTextLength.Type.PercentageLength, 100))
        line.setBackground(QBrush(self.theme.muted, Qt.BrushStyle.NoBrush))
        line.setTopMargin(6)
        line.setLineHeight(_DIVIDER_LINE_PX, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
        self.new_block(cursor, line, QTextCharFormat())
        caption = QTextBlockFormat()
        caption.setProperty(DIVIDER, True)
        caption.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        caption.setBottomMargin(6)
        cursor.insertBlock(caption, self._muted)
        cursor.insertText(text, self._muted)

    @staticmethod
    def new_block(cursor: QTextCursor, block: QTextBlockFormat, chars: QTextCharFormat) -> None:
        if cursor.block().length() == 1:
            cursor.setBlockFormat(block)
            cursor.setBlockCharFormat(chars)
        else:
            cursor.insertBlock(block, chars)


def _tidy_after_tables(document: QTextDocument) -> None:
    """Qt's HTML import leaves an empty line after every table (code blocks are tables): drop
    it where a block follows, as streaming does by writing the tail into it. Before a rule it
    stays, thin: Qt draws a rule that directly follows a table beside it, at the right edge."""
    empty = []
    block = document.begin()
    while block.isValid():
        after = block.next()
        if (
            block.length() == 1
            and not _is_rule(block)
            and _in_table(block.previous())
            and not _in_table(block)
            and after.isValid()
            and not _in_table(after)
        ):
            empty.append((block.position(), _is_rule(after)))
        block = after
    cursor = QTextCursor(document)
    for position, before_rule in reversed(empty):
        cursor.setPosition(position)
        if before_rule:
            cursor.setBlockFormat(_spacer())
        else:
            cursor.deleteChar()  # the next block moves up, keeping its own format


def _hang_code_lines(document: QTextDocument, space_px: float) -> None:
    """A code line that wraps goes on CODE_HANG_PX further in than the line's own indentation,
    so that it reads as the same line. The renderer gives every code line a negative text
    indent (no other block has one) hanging from a margin of CODE_HANG_PX; an indented line's
    margin grows by its leading spaces (tabs were made spaces)."""
    block = document.begin()
    while block.isValid():
        text = block.text()
        if text.startswith(" ") and block.blockFormat().textIndent() < 0:
            hang = CODE_HANG_PX + (len(text) - len(text.lstrip(" "))) * space_px
            cursor = QTextCursor(block)
            hanging = block.blockFormat()
            hanging.setLeftMargin(hang)
            hanging.setTextIndent(-hang)
            cursor.setBlockFormat(hanging)
        block = block.next()


def _stand_rule_on_spacer(cursor: QTextCursor) -> None:
    """Split the rule's block at the cursor: a thin block, then the rule."""
    rule = cursor.blockFormat()
    cursor.setBlockFormat(_spacer())
    cursor.insertBlock(rule)


def _spacer() -> QTextBlockFormat:
    spacer = QTextBlockFormat()
    spacer.setLineHeight(4, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
    return spacer


def _is_rule(block) -> bool:
    return block.blockFormat().hasProperty(QTextFormat.Property.BlockTrailingHorizontalRulerWidth)


def _in_table(block) -> bool:
    return block.isValid() and QTextCursor(block).currentTable() is not None


def find_block(document: QTextDocument, mark: int, value: object = True, backwards: bool = False) -> QTextBlock:
    """The first (or last) block whose format has `mark` set to `value`; invalid if none."""
    block = document.lastBlock() if backwards else document.begin()
    while block.isValid():
        if block.blockFormat().property(mark) == value:
            return block
        block = block.previous() if backwards else block.next()
    return block


def remove_divider(document: QTextDocument) -> tuple[int, int] | None:
    """Take the context divider out of the document: (where it was, characters removed), or
    None when there is none."""
    first = find_block(document, DIVIDER)
    if not first.isValid():
        return None
    last = first
    while last.next().isValid() and last.next().blockFormat().property(DIVIDER):
        last = last.next()
    cursor = QTextCursor(document)
    # From the end of the block before it to the end of its caption: the divider's blocks and
    # the break before them (the document's first block cannot be a divider's).
    cursor.setPosition(first.position() - 1)
    cursor.setPosition(last.position() + last.length() - 1, QTextCursor.MoveMode.KeepAnchor)
    start, removed = cursor.selectionStart(), cursor.selectionEnd() - cursor.selectionStart()
    cursor.removeSelectedText()
    return start, removed


def text_between(document: QTextDocument, start: int, end: int) -> str:
    """The text of the blocks from position `start` to `end` as it reads: a line break within a
    block as a new line, non-breaking spaces as plain ones, without the zero-width spaces
    added to break long runs."""
    lines = []
    block = document.findBlock(start)
    while block.isValid() and block.position() <= end:
        lines.append(block.text())
        block = block.next()
    return "\n".join(lines).replace("\u2028", "\n").replace("\xa0", " ").replace(ZERO_WIDTH_SPACE, "")


def end_of(document: QTextDocument) -> QTextCursor:
    """A cursor at the end of the document."""
    cursor = QTextCursor(document)
    cursor.movePosition(QTextCursor.MoveOperation.End)
    return cursor


def _small(fmt: QTextCharFormat) -> QTextCharFormat:
    fmt.setProperty(QTextFormat.Property.FontSizeAdjustment, -1)
    return fmt


def box_caption(theme: ChatTheme) -> QTextCharFormat:
    """A box's caption ("Tool call · …", "Sources"): small, bold, in the muted colour."""
    caption = QTextCharFormat()
    caption.setForeground(theme.muted)
    caption.setFontWeight(QFont.Weight.Bold)
    caption.setProperty(QTextFormat.Property.FontSizeAdjustment, -1)
    return caption


def open_box(cursor: QTextCursor, theme: ChatTheme, error: bool = False, message_id: int | None = None) -> None:
    """Open a thin framed box a shade off the page under a message (a tool call or result, a
    reply's sources); the cursor ends in its first block, marked as message `message_id`'s
    start where given. Leave it with cursor.movePosition(End)."""
    frame = QTextFrameFormat()
    frame.setBorder(1.5 if error else 1)
    frame.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
    frame.setBorderBrush(QBrush(theme.error) if error else QBrush(QColor(theme.render.rule)))
    frame.setBackground(QColor(theme.render.inline_code_background))
    frame.setPadding(8)
    frame.setTopMargin(6)
    frame.setBottomMargin(4)
    if cursor.block().length() == 1:  # the empty line Qt keeps after the frame before: thin
        thin = QTextBlockFormat()
        thin.setLineHeight(1, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
        cursor.setBlockFormat(thin)
    cursor.insertFrame(frame)
    first = QTextBlockFormat()
    first.setBottomMargin(2)
    if message_id is not None:
        first.setProperty(MESSAGE_START, message_id)
    cursor.setBlockFormat(first)
