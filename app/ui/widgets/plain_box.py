"""A read-only box of foreign text (a call's arguments, a tool's result), as tall as its lines.

The text is shown inert (foreign_text.inert_lines: HTML stays text, bidi overrides and control
characters are shown as "�"), cut at SHOWN_CHARS however much was given (laying out megabytes
would freeze the window), wrapped so that no run of it lays out slowly, and the box grows with
its lines up to `max_lines`, then scrolls. Tab leaves it (it is no keyboard trap), and the
keyboard can still select and copy in it.
"""

from __future__ import annotations

from PySide6.QtCore import QSizeF, Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QFrame, QPlainTextEdit, QWidget

from .foreign_text import inert_lines, wrap_mode_for

SHOWN_CHARS = 40_000  # a result is capped at 32 KB before it gets here; this guards the box itself
_PAD_PX = 6


class PlainBox(QPlainTextEdit):
    """Read-only foreign text, in monospace when `mono`, from 1 to `max_lines` lines tall."""

    def __init__(self, text: str, name: str, description: str = "", mono: bool = True, max_lines: int = 12,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setTabChangesFocus(True)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleName(name)
        if description:
            self.setAccessibleDescription(description)
        if mono:
            self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.document().setDocumentMargin(_PAD_PX - 2)
        self._max_lines = max_lines
        # A plain text layout's size is (widest line, lines laid out): wrapped lines count.
        self.document().documentLayout().documentSizeChanged.connect(self._fit)
        self.set_text(text)

    def set_text(self, text: str) -> None:
        shown = inert_lines(text, SHOWN_CHARS)
        self.setWordWrapMode(wrap_mode_for(shown))
        self.setPlainText(shown)
        self._fit(self.document().documentLayout().documentSize())

    def _fit(self, size: QSizeF) -> None:
        lines = min(max(round(size.height()), 1), self._max_lines)
        height = lines * self.fontMetrics().lineSpacing() + 2 * round(self.document().documentMargin())
        self.setFixedHeight(height + 2 * self.frameWidth() + 2)
