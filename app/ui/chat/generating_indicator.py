"""The line under a streaming reply that says the reply is still being written.

A model can think for seconds before its first word, or pause mid-reply; without a sign of
life the window looks stuck. While a reply streams, a muted "Generating" with moving dots sits
right under the reply's last line, lined up with the text, and goes when the reply ends. It
is laid over the pane (the document cannot hold a moving widget), and follows the end of the
text as it grows and scrolls. The browser always keeps room for it below the text: making
room at each reply's start and end changed the document's root frame, which lays out the
whole conversation again (50 ms at the end of a 20,000-token reply).

Its accessible name stays "Generating a reply" while the dots move, so a screen reader that
looks at it hears that, and is not told of a change several times a second.
"""

from __future__ import annotations

from PySide6.QtCore import QSizeF, QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel

from .browser import DOCUMENT_MARGIN, ChatBrowser

FRAME_MS = 400
_DOTS = ("", ".", "..", "...")
_GAP_PX = 4  # between the reply's last line and this one


class GeneratingIndicator(QLabel):
    """A muted "Generating…" line under the end of a browser's text; start() shows it,
    stop() hides it."""

    def __init__(self, browser: ChatBrowser) -> None:
        super().__init__(browser.viewport())
        self._browser = browser
        self.setAccessibleName("Generating a reply")
        self.setAccessibleDescription("A reply is being written. Esc stops it; what was written is kept.")
        self.setAutoFillBackground(True)
        # Set, or the label takes the viewport's roles (Base, Text) and ignores set_colours.
        self.setBackgroundRole(QPalette.ColorRole.Window)
        self.setForegroundRole(QPalette.ColorRole.WindowText)
        self._frame = 0
        self._timer = QTimer(self, interval=FRAME_MS)
        self._timer.timeout.connect(self._next_frame)
        self.setText("Generating" + _DOTS[-1])
        self.setFixedSize(self.sizeHint())
        browser.set_bottom_room(self.height() + _GAP_PX)
        self._show_frame()
        self.hide()
        browser.verticalScrollBar().valueChanged.connect(self._place)
        browser.document().documentLayout().documentSizeChanged.connect(self._place)

    def set_colours(self, text: QColor, background: QColor) -> None:
        """The transcript's muted text colour and its background, so the line looks part of it."""
        palette = QPalette(self.palette())
        palette.setColor(QPalette.ColorRole.WindowText, text)
        palette.setColor(QPalette.ColorRole.Window, background)
        self.setPalette(palette)

    def start(self) -> None:
        self._frame = 0
        self._show_frame()
        self._timer.start()
        self.show()
        self._place()

    def stop(self) -> None:
        self._timer.stop()
        self.hide()

    def is_running(self) -> bool:
        return self._timer.isActive()

    def _place(self, *_changed: int | QSizeF) -> None:
        """Under the last line of text, where that is in the viewport now."""
        if not self._timer.isActive():
            return
        text_end = self._browser.document().documentLayout().documentSize().height()
        text_end -= DOCUMENT_MARGIN + self._browser.bottom_room()
        top = round(text_end) + _GAP_PX - self._browser.verticalScrollBar().value()
        self.move(self._browser.side_margin(), top)

    def _next_frame(self) -> None:
        self._frame = (self._frame + 1) % len(_DOTS)
        self._show_frame()

    def _show_frame(self) -> None:
        self.setText("Generating" + _DOTS[self._frame])
