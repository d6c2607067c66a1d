"""The message input: Enter sends, Shift+Enter makes a new line, one button is Send or Stop.

Images can go with the text: the Attach button left of the box, a paste, or a drop; they show as
chips above the box (images/attachments.py) and are sent with it. A message may be images alone.

A message can also wait to be sent: while the model loads, or while a reply is still being
written in another conversation. The text stays in the box, a line above it says what it waits
for, and the button cancels the wait; the window sends the text when it can.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from ...images.image import Image
from .images.attachments import ImageAttachments, carries_images

_BUTTON = {  # state -> text, tooltip and accessible description
    "send": ("Send", "Send (Enter)", "Sends the message (Enter)"),
    "stop": ("Stop", "Stop the reply (Esc); what was written is kept", "Stops the reply (Esc); what was written is kept"),
    "wait": ("Cancel", "Don't send it; the text stays in the box", "Cancels the waiting message; the text stays in the box"),
}


class _InputEdit(QPlainTextEdit):
    """The box itself; a paste (or a drop) that carries images goes to `takes_images` instead."""

    submitted = Signal()
    takes_images: Callable[[QMimeData], bool] | None = None

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return carries_images(source) or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        if self.takes_images is None or not self.takes_images(source):
            super().insertFromMimeData(source)

    def keyPressEvent(self, event):
        enter = event.key() in (Qt.Key_Return, Qt.Key_Enter)
        if enter and not event.modifiers() & Qt.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class Composer(QWidget):
    """Where the user types.

    Signals:
        sendRequested(str): the text to send, with attached() (the box is cleared only if the send
            is accepted).
        stopRequested(): Stop was pressed while a reply is generating.
    """

    sendRequested = Signal(str)
    stopRequested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel()  # what a waiting message waits for
        self.note.setTextFormat(Qt.TextFormat.PlainText)  # it names models and conversations
        self.note.setWordWrap(True)
        self.note.hide()
        self.edit = _InputEdit()
        self.edit.setPlaceholderText("Message Hearth…  (Enter sends, Shift+Enter for a new line)")
        self.edit.setAccessibleName("Message")
        self.edit.setAccessibleDescription("Enter sends; Shift+Enter starts a new line")
        self.edit.setTabChangesFocus(True)
        self.edit.setFixedHeight(self.edit.fontMetrics().lineSpacing() * 4 + 12)
        self.button = QPushButton()
        self.button.setDefault(True)
        self.button.setMinimumWidth(80)
        self.images = ImageAttachments(home=self.edit)
        self.edit.takes_images = self.images.attach_mime
        row = self._row = QHBoxLayout()
        row.addWidget(self.images.attach_button, 0, Qt.AlignBottom)  # attach at the left, send at the right
        row.addWidget(self.edit, 1)
        row.addWidget(self.button, 0, Qt.AlignBottom)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 8)
        layout.setSpacing(4)
        layout.addWidget(self.note)
        layout.addWidget(self.images)
        layout.addLayout(row)
        self._chain_tab_order()
        self.images.changed.connect(self._chain_tab_order)
        self.edit.submitted.connect(self._submit)
        self.button.clicked.connect(self._on_button)
        self._busy = False
        self._waiting = False
        self._show_state()

    def add_beside_send(self, control: QWidget) -> None:
        """A control between the message box and Send (the documents and tools buttons), lined up
        with Send, the first added next to the box; Tab goes along the row as it is laid out."""
        self._row.insertWidget(self._row.indexOf(self.button), control, 0, Qt.AlignBottom)
        self._chain_tab_order()

    def _chain_tab_order(self) -> None:
        """Tab goes in reading order: the image chips, then along the row (Attach, the box, …)."""
        row = [widget for index in range(self._row.count()) if (widget := self._row.itemAt(index).widget())]
        chain = self.images.chips.chips() + row
        for before, after in zip(chain, chain[1:]):
            QWidget.setTabOrder(before, after)

    @property
    def waiting(self) -> bool:
        """A message waits to be sent (see wait())."""
        return self._waiting

    def set_busy(self, busy: bool) -> None:
        """While a reply generates, the button stops it and Enter sends nothing (no double sends)."""
        self._busy = busy
        self._show_state()

    def wait(self, reason: str) -> None:
        """The message could not be sent yet: keep it, say why (reason: "Will send when …"), and
        let the button cancel the wait. The window sends the text when it can (and calls
        stop_waiting()), as long as `waiting` is still True."""
        self._waiting = True
        self.note.setText(reason)
        self.note.show()
        self._show_state()
        QAccessible.updateAccessibility(QAccessibleAnnouncementEvent(self.edit, reason))

    def stop_waiting(self, reason: str = "") -> None:
        """Nothing waits any more (it was sent, cancelled, or can no longer be: `reason` says so
        in the line above the box, else the line goes)."""
        self._waiting = False
        self.note.setText(reason)
        self.note.setVisible(bool(reason))
        self._show_state()
        if reason:
            QAccessible.updateAccessibility(QAccessibleAnnouncementEvent(self.edit, reason))

    def text(self) -> str:
        return self.edit.toPlainText()

    def attached(self) -> tuple[Image, ...]:
        """The images to send with the text."""
        return self.images.images()

    def clear(self) -> None:
        """The message was sent: its text and images go."""
        self.edit.clear()
        self.images.clear()
        if not self._waiting:
            self.note.hide()

    def _show_state(self) -> None:
        state = "wait" if self._waiting else "stop" if self._busy else "send"
        text, tip, description = _BUTTON[state]
        self.button.setText(text)
        self.button.setToolTip(tip)
        self.button.setAccessibleName(text)
        self.button.setAccessibleDescription(description)

    def _on_button(self) -> None:
        if self._waiting:
            self.stop_waiting()
        elif self._busy:
            self.stopRequested.emit()
        else:
            self._submit()

    def _submit(self) -> None:
        if not self._busy and not self._waiting and (self.text().strip() or self.attached()):
            self.sendRequested.emit(self.text())
