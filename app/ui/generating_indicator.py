"""The line under the conversation that says a reply is being written.

A model can think for seconds before its first word, or pause mid-reply; without a sign of
life the window looks stuck. While a reply streams, a muted "Generating" with moving dots sits
under the transcript, lined up with its text column, and goes when the reply ends.

Its accessible name stays "Generating a reply" while the dots move, so a screen reader that
looks at it hears that, and is not told of a change four times a second.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QWidget

FRAME_MS = 400
_DOTS = ("", ".", "..", "...")


class GeneratingIndicator(QLabel):
    """A muted "Generating…" line with moving dots; start() shows it, stop() hides it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Generating a reply")
        self.setAccessibleDescription("A reply is being written. Esc stops it; what was written is kept.")
        self.setAutoFillBackground(True)
        self._frame = 0
        self._timer = QTimer(self, interval=FRAME_MS)
        self._timer.timeout.connect(self._next_frame)
        self._show_frame()
        self.hide()

    def set_colours(self, text: QColor, background: QColor) -> None:
        """The transcript's muted text colour and its background, so the line looks part of it."""
        palette = QPalette(self.palette())
        palette.setColor(QPalette.ColorRole.WindowText, text)
        palette.setColor(QPalette.ColorRole.Window, background)
        self.setPalette(palette)

    def set_indent(self, left: int) -> None:
        """Line the text up with the transcript's column, which starts `left` pixels in."""
        self.setContentsMargins(left, 2, left, 6)

    def start(self) -> None:
        self._frame = 0
        self._show_frame()
        self.show()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self.hide()

    def is_running(self) -> bool:
        return self._timer.isActive()

    def _next_frame(self) -> None:
        self._frame = (self._frame + 1) % len(_DOTS)
        self._show_frame()

    def _show_frame(self) -> None:
        self.setText("Generating" + _DOTS[self._frame])
