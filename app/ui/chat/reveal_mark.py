"""A brief mark over a message the pane was asked to show (a search hit), so the eye finds it.

The mark looks like a selection (the palette's highlight colours, which the palette keeps
readable) and is one of the browser's extra selections: drawn over the document without
changing it, so nothing written in the document moves. It goes after MARK_MS, or when the
document is written afresh (clear()).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QPalette, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextBrowser, QTextEdit

MARK_MS = 2_500


class RevealMark(QObject):
    """Marks a span of a browser's document for a moment."""

    def __init__(self, browser: QTextBrowser) -> None:
        super().__init__(browser)
        self._browser = browser
        self._timer = QTimer(self, singleShot=True, interval=MARK_MS)
        self._timer.timeout.connect(self.clear)

    def show(self, start: int, end: int) -> None:
        """Mark the document from `start` to `end` until MARK_MS have passed."""
        palette = self._browser.palette()
        selection = QTextEdit.ExtraSelection()
        selection.cursor = QTextCursor(self._browser.document())
        selection.cursor.setPosition(start)
        selection.cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        selection.format = QTextCharFormat()
        # Active colours even when the pane has no focus: the inactive ones may be faint.
        selection.format.setBackground(palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Highlight))
        selection.format.setForeground(palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.HighlightedText))
        self._browser.setExtraSelections([selection])
        self._timer.start()

    def span(self) -> tuple[int, int] | None:
        """What is marked now (start, end), or None."""
        selections = self._browser.extraSelections()
        if not selections:
            return None
        return selections[0].cursor.selectionStart(), selections[0].cursor.selectionEnd()

    def clear(self) -> None:
        self._timer.stop()
        if self._browser.extraSelections():
            self._browser.setExtraSelections([])
