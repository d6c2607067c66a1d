"""A reply's sources, written into the transcript under it: the passages of the user's documents
its question was given (StoredMessage.sources), numbered as the reply cites them.

A framed block like a tool call's: "Sources", then a line per source, "[1] notes.pdf · page 3",
a link that opens the file (at its page, for a PDF: link_routing's source action, answered by
the window), and under it the start of the passage in the muted colour, so the user sees what the
reply read without opening anything. File names and passages are the user's files' text: inserted
as text through the cursor (shorten: control and bidi characters shown as "�"), never as HTML.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QTextBlockFormat, QTextCharFormat, QTextCursor, QTextFormat

from ....common.text import printable, shorten
from ....store import Source
from ...widgets.tooltips import plain_tooltip
from ..document import box_caption, open_box
from ..message_footer import ACTION_SCHEME
from ..theme import ChatTheme

EXCERPT_CHARS = 160  # of a passage, shown under its source
NAME_CHARS = 80


def source_href(question_id: int, number: int) -> str:
    """hearth:open-source/12-3: source 3 of the question with id 12 (link_routing reads it)."""
    return f"{ACTION_SCHEME}:open-source/{question_id}-{number}"


def source_words(source: Source) -> str:
    """"notes.pdf · page 3" (the file's name; the full path is the link's tooltip)."""
    return shorten(Path(source.path).name, NAME_CHARS) + (f" · page {source.page}" if source.page else "")


class SourcesBlock:
    """Writes a reply's sources in `theme`'s colours."""

    def __init__(self, theme: ChatTheme) -> None:
        self._theme = theme
        self._caption = box_caption(theme)
        self._excerpt = QTextCharFormat()
        self._excerpt.setForeground(theme.muted)
        self._excerpt.setProperty(QTextFormat.Property.FontSizeAdjustment, -1)
        self._link = QTextCharFormat()
        self._link.setForeground(theme.link)
        self._link.setAnchor(True)

    def write(self, cursor: QTextCursor, question_id: int, sources: tuple[Source, ...]) -> None:
        """The sources of the question `question_id`, numbered from 1, under the reply at the cursor."""
        if not sources:
            return
        open_box(cursor, self._theme)
        cursor.insertText("Sources", self._caption)
        for number, source in enumerate(sources, start=1):
            link = QTextCharFormat(self._link)
            link.setAnchorHref(source_href(question_id, number))
            link.setToolTip(plain_tooltip(f"Open {printable(source.path, limit=None)}"
                                          + (f" at page {source.page}" if source.page else "")))
            line = QTextBlockFormat()
            line.setTopMargin(4)
            cursor.insertBlock(line, QTextCharFormat())
            cursor.insertText(f"[{number}] {source_words(source)}", link)
            cursor.insertBlock(QTextBlockFormat(), self._excerpt)
            cursor.insertText(f"“{shorten(source.text, EXCERPT_CHARS)}”", self._excerpt)
        cursor.movePosition(QTextCursor.MoveOperation.End)  # out of the frame
