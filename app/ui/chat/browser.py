"""The chat pane's text browser: it never navigates, copies without layout aids, and keeps the
text in a reading column.

A line of prose much wider than about 48 em is hard to follow from its end back to the start
of the next, so on a large window the text keeps to a centred column of READING_EM (widened
to fit an 80-column line of code), and on a small one it takes the whole width. The column is
the document's root frame with side margins, set again at every resize, so the margins are
part of the pane: the scroll bar stays at its edge, and a wheel or a selection works there.

The pane keeps its place while its document changes: BottomFollower keeps it at the end as a
reply grows (unless the user scrolls up), reading_place_kept keeps what is being read where it
is on screen while something above it changes, and scroll_kept keeps the scroll bar where it
was while the document is written afresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QMimeData, QObject, QPoint, QRect, QTimer, QUrl
from PySide6.QtGui import QFont, QFontDatabase, QFontInfo, QFontMetricsF, QResizeEvent, QTextBlock, QTextCursor
from PySide6.QtWidgets import QFrame, QScrollBar, QTextBrowser, QWidget

from .markdown_render import ZERO_WIDTH_SPACE

# The widest the text runs, in em of the pane's font...
READING_EM = 48
# ... but never narrower than this many columns of code (plus a code block's padding), so that
# ordinary code does not wrap on a large window.
CODE_COLUMNS = 80
_CODE_PADDING_PX = 16
# The document's margin, and the least margin at the sides of a small window.
DOCUMENT_MARGIN = 14
# Room kept above a message scrolled to the top of the pane (a search hit, a version step).
MESSAGE_TOP_MARGIN_PX = 12
OVERLAY_MARGIN = 12  # between a widget laid over the text and the pane's edge, when scrolled to


class ChatBrowser(QTextBrowser):
    """A QTextBrowser that never navigates, never loads a resource named by the text, and keeps
    its text in a reading column (reading_width), with room below it for a line that is not
    part of the text (set_bottom_room)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAccessibleName("Conversation")
        self.setAccessibleDescription(
            "The messages of this conversation, oldest first. Tab moves through a message's images and the "
            "links under it: the version arrows, Copy, Edit, Regenerate, Branch and Delete; Enter follows the "
            "one reached (an image opens larger)."
        )
        self.document().setUndoRedoEnabled(False)  # an undo stack of every streamed chunk
        self.document().setDocumentMargin(DOCUMENT_MARGIN)
        self._bottom_room = 0

    def reading_width(self) -> int:
        """The widest the text column grows, in pixels, for the pane's font."""
        em = QFontInfo(self.font()).pixelSize()
        code = QFont(self.font())
        code.setFamilies([QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family(), "monospace"])
        columns = CODE_COLUMNS * QFontMetricsF(code).horizontalAdvance(" ") + _CODE_PADDING_PX
        return round(max(READING_EM * em, columns))

    def bring_into_view(self, area: QRect) -> None:
        """Scroll so that a widget laid over the text at `area` (in the viewport's coordinates:
        the inline editor, a tool call's card) shows whole, or its top if it is taller than
        the pane, OVERLAY_MARGIN clear of the edges."""
        bar = self.verticalScrollBar()
        below = area.bottom() + OVERLAY_MARGIN - self.viewport().height()
        if below > 0:
            bar.setValue(bar.value() + min(below, area.top() - OVERLAY_MARGIN))
        elif area.top() < OVERLAY_MARGIN:
            bar.setValue(bar.value() + area.top() - OVERLAY_MARGIN)

    def side_margin(self, viewport_width: int | None = None) -> int:
        """The margin each side of the column, for the viewport's width (or the given one)."""
        width = self.viewport().width() if viewport_width is None else viewport_width
        return max(DOCUMENT_MARGIN, (width - self.reading_width()) // 2)

    def set_bottom_room(self, room: int) -> None:
        """Leave `room` pixels below the text, e.g. for a line laid over the pane. Changing it
        lays the whole document out again."""
        self._bottom_room = room
        self.fit_column()

    def bottom_room(self) -> int:
        return self._bottom_room

    def message_top(self, label: QTextBlock) -> float:
        """Where the message whose label this is starts in the document: the top of the
        user's bubble it is in, else its label's."""
        layout = self.document().documentLayout()
        frame = QTextCursor(label).currentFrame()
        if frame is not None and frame != self.document().rootFrame():
            return layout.frameBoundingRect(frame).top()
        return layout.blockBoundingRect(label).top()

    def fit_column(self, viewport_width: int | None = None) -> None:
        """Set the column's side margins for the viewport's width, and the room below it; the
        document's clear() forgets them, so it is called again after one."""
        margin = self.side_margin(viewport_width)
        bottom = DOCUMENT_MARGIN + self._bottom_room
        root = self.document().rootFrame()
        frame = root.frameFormat()
        if (frame.leftMargin(), frame.rightMargin(), frame.bottomMargin()) != (margin, margin, bottom):
            frame.setLeftMargin(margin)
            frame.setRightMargin(margin)
            frame.setBottomMargin(bottom)
            root.setFrameFormat(frame)

    def resizeEvent(self, event: QResizeEvent) -> None:
        # Before Qt lays the document out again for the new width, so it does that once.
        self.fit_column(event.size().width())
        super().resizeEvent(event)

    def loadResource(self, type: int, name: QUrl) -> None:  # noqa: A002 (Qt's name)
        """Model text can name any file or URL as an image; none is ever read."""
        return None

    def createMimeDataFromSelection(self) -> QMimeData:
        """A copied selection without the zero-width spaces added to break long runs."""
        selected = super().createMimeDataFromSelection()
        data = QMimeData()
        data.setText(selected.text().replace(ZERO_WIDTH_SPACE, ""))
        if selected.hasHtml():
            data.setHtml(selected.html().replace(ZERO_WIDTH_SPACE, ""))
        return data


class BottomFollower(QObject):
    """Keeps a scroll bar at the bottom while the content grows, unless the user scrolls up.

    Following stops when the bar leaves the bottom and resumes when it is brought back; both
    are seen through valueChanged, and rangeChanged (the content grew) re-pins the bar.
    """

    SLACK_PX = 8

    def __init__(self, bar: QScrollBar) -> None:
        super().__init__(bar)
        self._bar = bar
        self.following = True
        # The range grows many times while Qt lays out one update; scrolling (and so laying
        # out and painting the bottom of the document) once per event-loop pass is enough.
        self._pin = QTimer(self, singleShot=True, interval=0)
        self._pin.timeout.connect(self._to_bottom)
        bar.rangeChanged.connect(self._range_changed)
        bar.valueChanged.connect(self._value_changed)

    def follow(self) -> None:
        self.following = True
        self._to_bottom()

    def _to_bottom(self) -> None:
        if self.following:
            self._bar.setValue(self._bar.maximum())

    def _range_changed(self, _minimum: int, _maximum: int) -> None:
        if self.following and not self._pin.isActive():
            self._pin.start()

    def _value_changed(self, value: int) -> None:
        self.following = value >= self._bar.maximum() - self.SLACK_PX


@contextmanager
def reading_place_kept(browser: QTextBrowser, follower: BottomFollower) -> Iterator[None]:
    """Keep what the user is reading where it is on screen while the document changes above
    it (or at the bottom, when the pane follows the end). A cursor at the block at the top of
    the pane moves with the edits, as cursors do."""
    bar = browser.verticalScrollBar()
    layout = browser.document().documentLayout()
    top = QTextCursor(browser.cursorForPosition(QPoint(0, 0)).block())
    offset = layout.blockBoundingRect(top.block()).top() - bar.value()
    yield
    if follower.following:
        follower.follow()
    else:
        bar.setValue(int(layout.blockBoundingRect(top.block()).top() - offset))


@contextmanager
def scroll_kept(browser: QTextBrowser, follower: BottomFollower) -> Iterator[None]:
    """Keep the pane scrolled where it was (or following the end, if it was) while the
    document is written afresh."""
    bar = browser.verticalScrollBar()
    value, following = bar.value(), follower.following
    yield
    if following:
        follower.follow()
    else:
        bar.setValue(value)
