"""A reply's stored tool calls and their results, written into the transcript.

A reply that ended with calls shows, under its text, a small framed block per call: the tool's
name and its arguments as monospace JSON, the first CALL_LINES lines of them. A message with
role "tool" is a call's result: a framed block of the same kind under the call (never a bubble
of its own), its first RESULT_LINES lines, "Error" in red when the tool failed or was refused,
and a "Show all" link that writes the whole of it in place (link_routing: expand-result).

Nothing here is Markdown or HTML: names, arguments and results are the server's and the
model's, so every piece is inserted as text through the cursor (common/text.py and
foreign_text.inert_lines first: a bidi override or a control character shows as "�"), and
long runs get the transcript's break opportunities (markdown_render.break_long_runs).
"""

from __future__ import annotations

from PySide6.QtGui import (
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
)

from ....common.text import shorten
from ....engine.tools.types import ToolCall
from ....store import ToolResult
from ....tool_servers.approval import NOT_RUN
from ...widgets.foreign_text import formatted_json, head_lines, inert_lines
from ..document import box_caption, open_box
from ..markdown_render import break_long_runs
from ..message_footer import action_href
from ..theme import ChatTheme

CALL_LINES, CALL_CHARS = 8, 600  # of a call's arguments, shown
RESULT_LINES, RESULT_CHARS = 6, 600  # of a result, until "Show all"
WHOLE_RESULT_CHARS = 100_000  # of a result shown whole (they are capped at 32 KB when stored)
NAME_CHARS = 60
_LINE = "\u2028"  # a line break inside one block


def result_lines(content: str) -> int:
    return content.count("\n") + 1


class ToolBlocks:
    """Writes call and result blocks in `theme`'s colours, in the transcript's code font."""

    def __init__(self, theme: ChatTheme) -> None:
        self._theme = theme
        self._caption = box_caption(theme)
        self._error_caption = QTextCharFormat(self._caption)
        self._error_caption.setForeground(theme.error)
        self._mono = QTextCharFormat()
        self._mono.setFontFamilies([theme.render.mono_family, "monospace"])
        self._note = QTextCharFormat()
        self._note.setForeground(theme.muted)
        self._note.setProperty(QTextFormat.Property.FontSizeAdjustment, -1)
        self._problem = QTextCharFormat(self._note)
        self._problem.setForeground(theme.error)
        self._link = QTextCharFormat(self._note)
        self._link.setForeground(theme.link)
        self._link.setAnchor(True)

    def call(self, cursor: QTextCursor, call: ToolCall) -> None:
        """One call a reply ended with: its tool and its arguments, the first lines of them."""
        open_box(cursor, self._theme, error=False)
        cursor.insertText(f"Tool call · {shorten(call.name, NAME_CHARS)}", self._caption)
        shown, cut = head_lines(formatted_json(call.arguments), CALL_LINES, CALL_CHARS)
        self._text_block(cursor, shown + ("\n…" if cut else ""))
        if call.problem:
            cursor.insertBlock(QTextBlockFormat(), self._problem)
            cursor.insertText(f"Not run: {shorten(call.problem, 200)}", self._problem)
        cursor.movePosition(QTextCursor.MoveOperation.End)  # out of the frame

    def result(self, cursor: QTextCursor, message_id: int | None, result: ToolResult, whole: bool) -> None:
        """A call's result, marked as the message `message_id`'s start: its first lines, or with
        `whole` all of it; a link shows all of it, or less again."""
        failed = result.error and not result.content.startswith(NOT_RUN)  # refused is not failed
        open_box(cursor, self._theme, error=failed, message_id=message_id)
        caption = "Error" if failed else "Not run" if result.error else "Result"
        cursor.insertText(f"{caption} · {shorten(result.name, NAME_CHARS)}",
                          self._error_caption if failed else self._caption)
        content = result.content
        shown, long = head_lines(content, RESULT_LINES, RESULT_CHARS)
        if whole and long:
            shown = inert_lines(content, WHOLE_RESULT_CHARS)
        if not content.strip():
            cursor.insertBlock(QTextBlockFormat(), self._note)
            cursor.insertText("(no text)", self._note)
        else:
            self._text_block(cursor, shown)
        if message_id is not None and long:
            lines = result_lines(content)
            words = "Show less" if whole else f"Show all ({lines:,} line{'s' if lines != 1 else ''})"
            link = QTextCharFormat(self._link)
            link.setAnchorHref(action_href("expand-result", message_id))
            link.setToolTip("Show only the first lines of this result" if whole
                            else "Show all of this result, here in the conversation")
            cursor.insertBlock(QTextBlockFormat(), self._note)
            cursor.insertText(words, link)
        cursor.movePosition(QTextCursor.MoveOperation.End)

    def _text_block(self, cursor: QTextCursor, text: str) -> None:
        shown, _run = break_long_runs(text.replace("\n", _LINE))
        cursor.insertBlock(QTextBlockFormat(), self._mono)
        cursor.insertText(shown, self._mono)

