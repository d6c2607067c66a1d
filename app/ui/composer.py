"""The message input: Enter sends, Shift+Enter makes a new line, one button is Send or Stop."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QWidget


class _InputEdit(QPlainTextEdit):
    submitted = Signal()

    def keyPressEvent(self, event):
        enter = event.key() in (Qt.Key_Return, Qt.Key_Enter)
        if enter and not event.modifiers() & Qt.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class Composer(QWidget):
    """Where the user types.

    Signals:
        sendRequested(str): the text to send (the box is cleared only if the send is accepted).
        stopRequested(): Stop was pressed while a reply is generating.
    """

    sendRequested = Signal(str)
    stopRequested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.edit = _InputEdit()
        self.edit.setPlaceholderText("Message Hearth…  (Enter sends, Shift+Enter for a new line)")
        self.edit.setTabChangesFocus(True)
        self.edit.setFixedHeight(self.edit.fontMetrics().lineSpacing() * 4 + 12)
        self.button = QPushButton("Send")
        self.button.setDefault(True)
        self.button.setMinimumWidth(80)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 8)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.button, 0, Qt.AlignBottom)
        self.edit.submitted.connect(self._submit)
        self.button.clicked.connect(self._on_button)
        self._busy = False

    def set_busy(self, busy: bool) -> None:
        """While a reply generates, the button stops it and Enter sends nothing (no double sends)."""
        self._busy = busy
        self.button.setText("Stop" if busy else "Send")
        self.button.setToolTip("Stop the reply (Esc); what was written is kept" if busy else "Send (Enter)")

    def text(self) -> str:
        return self.edit.toPlainText()

    def clear(self) -> None:
        self.edit.clear()

    def _on_button(self) -> None:
        if self._busy:
            self.stopRequested.emit()
        else:
            self._submit()

    def _submit(self) -> None:
        if not self._busy and self.text().strip():
            self.sendRequested.emit(self.text())
