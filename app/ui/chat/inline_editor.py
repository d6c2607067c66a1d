"""Editing a sent message where it stands in the transcript, instead of in a dialog.

The transcript is one rich-text document, which cannot hold a widget, so the chat view leaves
a gap of the editor's height where the message's text was (a block of that fixed height), and
EditorOverlay lays the editor over the gap, following it as the pane scrolls, resizes or
changes, and making the gap taller or shorter as the text gains or loses lines. The keys are
the message box's: Enter sends, Shift+Enter starts a new line; also Ctrl+Enter sends, and Esc
cancels.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QRectF, QSizeF, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextBlockFormat, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

# Lines of text the box shows before it scrolls, at least and at most.
MIN_LINES, MAX_LINES = 3, 12
# Room kept between the editor and the pane's edge when it is scrolled into view.


_ENTER = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


def _claim(event: QEvent, keys: tuple[Qt.Key, ...]) -> bool:
    """Take these keys from the window's shortcuts (Esc stops a reply there), which would
    otherwise have them before the focused widget does."""
    if event.type() == QEvent.Type.ShortcutOverride and event.key() in keys:
        event.accept()
        return True
    return False


class _EditBox(QPlainTextEdit):
    """The text box: Enter (or Ctrl+Enter) sends, Shift+Enter is a new line."""

    submitted = Signal()

    def event(self, event: QEvent) -> bool:
        return _claim(event, _ENTER) or super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in _ENTER and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
        else:
            super().keyPressEvent(event)


class InlineEditor(QFrame):
    """A message's text in a box, with Send and Cancel.

    Signals:
        submitted(str): Send (or Enter): the changed text, not empty.
        cancelled(): Cancel (or Esc).
        heightChanged(int): the editor wants this height (the text grew or shrank a line).
    """

    submitted = Signal(str)
    cancelled = Signal()
    heightChanged = Signal(int)

    def __init__(self, text: str, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAccessibleName("Editing a message")  # over the message's bubble, which shows through
        self.box = _EditBox(self)
        self.box.setPlainText(text)
        self.box.setTabChangesFocus(True)
        self.box.setAccessibleName("Edit message")
        self.box.setAccessibleDescription(
            "Change the message, then press Enter to send it as a new version with a new reply; the "
            "message as it was, and what followed it, stay as the earlier version. "
            "Shift+Enter starts a new line, Esc cancels."
        )
        self.box.moveCursor(self.box.textCursor().MoveOperation.End)
        hint = QLabel("Enter sends · Shift+Enter new line · Esc cancels", self)
        self.send_button = QPushButton("Send", self)
        self.send_button.setAccessibleName("Send the edited message")
        self.send_button.setToolTip("Send the changed message as a new version; the earlier one is kept (Enter)")
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setAccessibleName("Cancel editing")
        self.cancel_button.setToolTip("Keep the message as it was (Esc)")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(hint, 1)
        row.addWidget(self.cancel_button)
        row.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.box)
        layout.addLayout(row)
        self.setTabOrder(self.box, self.cancel_button)
        self.setTabOrder(self.cancel_button, self.send_button)
        self.box.submitted.connect(self._submit)
        self.send_button.clicked.connect(self._submit)
        self.cancel_button.clicked.connect(self.cancelled)
        self.box.textChanged.connect(self._text_changed)
        # A plain text layout's size is (widest line, lines laid out): wrapped lines count.
        self.box.document().documentLayout().documentSizeChanged.connect(self._size_changed)
        self._lines = self.box.document().lineCount()
        self._text_changed()

    def text(self) -> str:
        return self.box.toPlainText()

    def event(self, event: QEvent) -> bool:
        # Esc reaches here from the box and the buttons alike (key events go up to the parent).
        return _claim(event, (Qt.Key.Key_Escape,)) or super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.cancelled.emit()
        else:
            super().keyPressEvent(event)

    def preferred_height(self) -> int:
        """The height for the text's lines (MIN_LINES to MAX_LINES) and the row of buttons."""
        lines = min(max(self._lines, MIN_LINES), MAX_LINES)
        box = lines * self.box.fontMetrics().lineSpacing()
        box += 2 * round(self.box.document().documentMargin()) + 2 * self.box.frameWidth() + 2
        return box + self.layout().spacing() + self.send_button.sizeHint().height()

    def place(self, area: QRect) -> None:
        """Lay the editor over `area` (the gap left for it, in its parent's coordinates)."""
        self.setGeometry(area.x(), area.y(), area.width(), self.preferred_height())

    def _text_changed(self) -> None:
        self.send_button.setEnabled(bool(self.text().strip()))

    def _size_changed(self, size: QSizeF) -> None:
        lines = round(size.height())
        if lines != self._lines:
            self._lines = lines
            self.heightChanged.emit(self.preferred_height())

    def _submit(self) -> None:
        if self.text().strip():
            self.submitted.emit(self.text())



class EditorOverlay(QObject):
    """An InlineEditor for one message, laid over the gap the view left for it in a browser's
    document. The view writes the gap (gap_format()) and says where it is (set_gap())."""

    def __init__(self, browser: QTextBrowser, message_id: int, text: str) -> None:
        super().__init__(browser)
        self.message_id = message_id
        self.editor = InlineEditor(text, browser.viewport())
        self._browser = browser
        self._gap: int | None = None
        browser.verticalScrollBar().valueChanged.connect(self.place)
        # Queued: the layout says it changed while it is still laying out.
        browser.document().documentLayout().update.connect(self._layout_changed, Qt.ConnectionType.QueuedConnection)
        self.editor.heightChanged.connect(self._resize_gap)

    def gap_format(self) -> QTextBlockFormat:
        """The format of the empty block the editor lies over: as tall as the editor."""
        gap = QTextBlockFormat()
        gap.setLineHeight(self.editor.preferred_height(), QTextBlockFormat.LineHeightTypes.FixedHeight.value)
        return gap

    def set_gap(self, position: int) -> None:
        """The gap's block starts at `position` in the document (written afresh)."""
        self._gap = position
        self.place()

    def place(self) -> None:
        """Lay the editor over the gap, where the gap is now in the viewport."""
        if self._gap is None:
            return
        block = self._browser.document().findBlock(self._gap)
        area = self._browser.document().documentLayout().blockBoundingRect(block)
        area.translate(-self._browser.horizontalScrollBar().value(), -self._browser.verticalScrollBar().value())
        self.editor.place(area.toRect())
        self.editor.show()

    def scroll_into_view(self) -> None:
        """Scroll the pane so that the whole editor shows (its top, if it is taller than the pane)."""
        self.place()
        self._browser.bring_into_view(self.editor.geometry())

    def close(self) -> None:
        """Take the editor away (the view writes the message again in place of the gap)."""
        self._gap = None
        self._browser.verticalScrollBar().valueChanged.disconnect(self.place)
        self._browser.document().documentLayout().update.disconnect(self._layout_changed)
        self.editor.hide()
        self.editor.deleteLater()
        self.deleteLater()

    def _layout_changed(self, _area: QRectF) -> None:
        self.place()

    def _resize_gap(self, _height: int) -> None:
        if self._gap is None:
            return
        cursor = QTextCursor(self._browser.document())
        cursor.setPosition(self._gap)
        cursor.setBlockFormat(self.gap_format())
        self.place()
