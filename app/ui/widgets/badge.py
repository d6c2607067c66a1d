"""A small rounded tag beside a title: a hint about what it names (a tool the server calls
read-only or destructive), in the colour of its tone."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QLabel, QWidget

from .colors import Tone, set_tone


class Badge(QLabel):
    """Plain text in a rounded outline of its own text colour (set_tone keeps both readable in
    either appearance)."""

    def __init__(self, text: str, tone: Tone, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setContentsMargins(7, 1, 7, 1)
        set_tone(self, tone)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.WindowText), 1))
        painter.drawRoundedRect(self.rect().toRectF().adjusted(0.5, 0.5, -0.5, -0.5), 8, 8)
        painter.end()
        super().paintEvent(event)
