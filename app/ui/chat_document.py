"""Writing messages into the chat pane's document, and the workarounds Qt's rich text needs.

A message is written in parts (a label, a Markdown body, a footer of small links), each in a
block of its own. Qt's HTML import and fragment insertion leave an empty line after every table
(code blocks and quotes are tables), drop the format of a fragment's first block, and draw a
rule that directly follows a table beside it; the helpers after the writer put these right.
A wrapped line of code hangs under its own indentation (CSS has no way to say that).
"""

from __future__ import annotations

from PySide6.QtGui import (
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
    QTextFrameFormat,
)

from .markdown_render import CODE_HANG_PX, MarkdownRenderer
from .theme import ChatTheme


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

    def label(self, cursor: QTextCursor, text: str, top_margin: int) -> None:
        block = QTextBlockFormat()
        block.setTopMargin(top_margin)
        block.setBottomMargin(2)
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

    def footer(self, cursor: QTextCursor, links: list[tuple[str, str]], note: str, indent: bool) -> None:
        """A small line of action links (text, href), then a grey note such as reply stats;
        indented to line up with a user's bubble."""
        block = QTextBlockFormat()
        block.setLeftMargin(self.BUBBLE_INDENT if indent else 0)
        block.setTopMargin(2)
        block.setBottomMargin(4)
        self.new_block(cursor, block, self._muted)
        for i, (text, href) in enumerate(links):
            link = QTextCharFormat(self._muted)
            link.setForeground(self.theme.link)
            link.setAnchor(True)
            link.setAnchorHref(href)
            cursor.insertText(text, link)
            if i < len(links) - 1:
                cursor.insertText("  ·  ", self._muted)
        if note:
            cursor.insertText("\u2003\u2003" + note, self._muted)

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


def end_of(document: QTextDocument) -> QTextCursor:
    """A cursor at the end of the document."""
    cursor = QTextCursor(document)
    cursor.movePosition(QTextCursor.MoveOperation.End)
    return cursor


def _small(fmt: QTextCharFormat) -> QTextCharFormat:
    fmt.setProperty(QTextFormat.Property.FontSizeAdjustment, -1)
    return fmt
