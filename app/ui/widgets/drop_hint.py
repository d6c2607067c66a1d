"""Over a part of the window while something is dragged over it: what a drop there does. The
documents' drop covers the chat (ui/window/documents.py), images' the message box
(ui/window/images.py); each says it to a screen reader as it shows it (announced()).
`DropTarget` takes one kind of drag wherever it lands in the window and shows its hint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QMimeData, QObject, QRectF, Qt, QTimer
from PySide6.QtGui import QDropEvent, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QLabel, QWidget

from .announce import announce
from .colors import mix

_DRAGS = (QEvent.Type.DragEnter, QEvent.Type.DragMove)


class DropHint(QLabel):
    """Over `covered` while a drag is over the window, `margin` in from its edges: `text` says
    what a drop does, `description` says more to a screen reader. It lies in the window itself,
    above its focus ring (widgets/focus_ring.py), which would otherwise be drawn through it. The
    pointer goes through it (the drag is the window's, not the hint's)."""

    MARGIN = 12

    def __init__(self, covered: QWidget, text: str, description: str, margin: int = MARGIN) -> None:
        super().__init__(text, covered)
        self._covered, self._margin = covered, margin
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setContentsMargins(self.MARGIN, self.MARGIN, self.MARGIN, self.MARGIN)
        self.setForegroundRole(QPalette.ColorRole.Text)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.say(text, description)
        font = self.font()
        font.setPointSizeF(font.pointSizeF() * 1.5)
        font.setBold(True)
        self.setFont(font)
        self.hide()

    def say(self, text: str, description: str) -> None:
        """What the hint says from now on."""
        self.setText(text)
        self.setAccessibleName(text)
        self.setAccessibleDescription(description)

    def show_over(self) -> None:
        """Cover the widget (where it is, as it is sized now)."""
        window, covered, margin = self._covered.window(), self._covered, self._margin
        if self.parentWidget() is not window:
            self.setParent(window)
        area = covered.rect().translated(covered.mapTo(window, covered.rect().topLeft()))
        self.setGeometry(area.adjusted(margin, margin, -margin, -margin))
        self.raise_()
        self.show()

    def announced(self) -> str:
        """What a screen reader is told as it shows."""
        return f"{self.text()}. {self.accessibleDescription()}"

    def paintEvent(self, event: QPaintEvent) -> None:
        """The covered widget's background tinted with the selection colour, edged with a dashed
        line of it; the text in the text colour, so it reads as the chat does."""
        palette = self.palette()
        accent = palette.color(QPalette.ColorRole.Highlight)
        fill = mix(palette.color(QPalette.ColorRole.Base), accent, 0.12)  # opaque: the text under it would show through
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(accent, 2, Qt.PenStyle.DashLine))
        painter.setBrush(fill)
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(1, 1, -1, -1), 12, 12)
        painter.end()
        super().paintEvent(event)


def accept_as_copy(event: QDropEvent) -> None:
    """Take a drag (or its drop) as a copy where the source offers one: the files are read,
    never moved."""
    if Qt.DropAction.CopyAction & event.possibleActions():
        event.setDropAction(Qt.DropAction.CopyAction)
        event.accept()
    else:
        event.acceptProposedAction()


class DropTarget(QObject):
    """Takes the drags over `watched` whose data `wants` (a drag bubbles up to the window from
    whatever is under the pointer when that does not take it, so the window and the message box
    are watched); any other drag goes on to whoever takes it. While one is over, `hint` shows
    (`before_showing` may change what it says first) and is said to a screen reader; a drop
    goes to `take`, which must not keep the drag's source waiting. The hint hides a moment after
    a drag leaves: one that moves between the message box and the rest of the window leaves one
    and enters the other, and the hint stays up between them."""

    def __init__(self, hint: DropHint, wants: Callable[[QMimeData], bool], take: Callable[[QMimeData], None],
                 watched: Sequence[QWidget], parent: QObject, before_showing: Callable[[], None] = lambda: None):
        super().__init__(parent)
        self._hint, self._wants, self._take, self._before_showing = hint, wants, take, before_showing
        self._hint_wanted = False
        for widget in watched:
            widget.setAcceptDrops(True)
            widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in _DRAGS or kind == QEvent.Type.Drop:
            if not self._wants(event.mimeData()):
                return False
            accept_as_copy(event)
            self._show_hint(kind != QEvent.Type.Drop)
            if kind == QEvent.Type.Drop:
                self._take(event.mimeData())
            return True
        if kind == QEvent.Type.DragLeave:
            self._show_hint(False)
        return False

    def _show_hint(self, wanted: bool) -> None:
        hint = self._hint
        self._hint_wanted = wanted
        if wanted and not hint.isVisible():
            self._before_showing()
            hint.show_over()
            announce(hint, hint.announced())
        elif not wanted:
            QTimer.singleShot(0, self, lambda: self._hint_wanted or hint.hide())
