"""A short-lived offer to undo a deletion: "Deleted “X”  [Undo]", for UNDO_SECONDS.

It is a widget of its own, not a button in the status bar: a status-bar message hides the
widgets added beside it, so the Undo button there never appeared. It can be reached with Tab,
and the window's Undo action (Ctrl+Z) is enabled while it shows; it is announced to screen
readers when it appears.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout

UNDO_SECONDS = 10


class UndoBar(QFrame):
    """Offers one undo at a time; a newer offer replaces the older one.

    Signals:
        offerChanged(bool): an offer appeared (True) or went (undone, dismissed, timed out).
    """

    offerChanged = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.message = QLabel()
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # it quotes a conversation's title
        self.message.setWordWrap(True)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setAccessibleName("Undo")
        self.undo_button.setToolTip("Bring it back (Ctrl+Z)")
        self.dismiss_button = QToolButton()
        self.dismiss_button.setText("×")
        self.dismiss_button.setAccessibleName("Dismiss")
        self.dismiss_button.setToolTip("Dismiss")
        self.dismiss_button.setAutoRaise(True)
        self.dismiss_button.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        # The message across the pane, the buttons under it: the conversation list is narrow.
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.undo_button)
        buttons.addWidget(self.dismiss_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 4, 4)
        layout.setSpacing(2)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        self._timer = QTimer(self, singleShot=True, interval=UNDO_SECONDS * 1000)
        self._timer.timeout.connect(self.dismiss)
        self._undo: Callable[[], None] | None = None
        self.undo_button.clicked.connect(self.undo)
        self.dismiss_button.clicked.connect(self.dismiss)
        self.hide()

    @property
    def offered(self) -> bool:
        return self._undo is not None

    def offer(self, text: str, undo: Callable[[], None]) -> None:
        """Show text with an Undo button that calls undo, for UNDO_SECONDS."""
        self._undo = undo
        self.message.setText(text)
        self.undo_button.setAccessibleDescription(f"{text} Undo brings it back (Ctrl+Z).")
        self.show()
        self._timer.start()
        QAccessible.updateAccessibility(QAccessibleAnnouncementEvent(self, f"{text} Press Ctrl+Z to undo."))
        self.offerChanged.emit(True)

    def undo(self) -> None:
        """Undo what is offered (nothing if the offer went)."""
        undo = self._undo
        self.dismiss()
        if undo is not None:
            undo()

    def dismiss(self) -> None:
        had_offer = self._undo is not None
        self._undo = None
        self._timer.stop()
        self.hide()
        if had_offer:
            self.offerChanged.emit(False)
