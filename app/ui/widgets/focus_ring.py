"""A visible focus indicator: a ring around whatever has the keyboard focus in a window.

Fusion marks focus with a one-pixel line in the selection colour, and on some controls not at
all: the default button (Send) looks the same with and without the focus, and the transcript
shows nothing. A stylesheet rule would fix that only by taking over the drawing of every
control. So a window gets a FocusRing: a widget laid over the focused control, transparent to
the mouse, painting a RING_PX ring in the selection colour made to stand out (at least
RING_CONTRAST against the window and the list background, WCAG's 3:1 for focus indicators).
It follows the focus, and the control as it moves or resizes; it is not drawn when the focus
came from a mouse click (the pointer already says where the user is), as browsers do.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QApplication, QWidget

from .colors import contrast, mix

RING_PX = 2
RING_CONTRAST = 3.0
_WATCHED = (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.Hide)


def ring_colour(palette: QPalette) -> QColor:
    """The selection colour, moved towards the text colour until it stands out RING_CONTRAST
    against both the window and the list background."""
    active = QPalette.ColorGroup.Active
    backgrounds = [palette.color(active, role) for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Base)]
    highlight, text = palette.color(active, QPalette.ColorRole.Highlight), palette.color(active, QPalette.ColorRole.Text)
    for step in range(11):
        colour = mix(highlight, text, step / 10)
        if min(contrast(colour, background) for background in backgrounds) >= RING_CONTRAST:
            return colour
    return text


def shown_part(widget: QWidget, window: QWidget) -> QRect:
    """The part of widget its parents leave in view (a control scrolled half out of a scroll
    area is ringed where it shows), in window coordinates."""
    shown = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
    parent = widget.parentWidget()
    while parent is not None and parent is not window:
        shown &= QRect(parent.mapTo(window, QPoint(0, 0)), parent.size())
        parent = parent.parentWidget()
    return shown


class FocusRing(QWidget):
    """The ring for one window: create it with the window as parent."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self._target: QWidget | None = None
        self.hide()
        QApplication.instance().focusChanged.connect(self._focus_changed)

    @property
    def target(self) -> QWidget | None:
        """The control the ring is around, or None when it is not shown."""
        return self._target if self.isVisible() else None

    def _focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        if self._target is not None and shiboken6.isValid(self._target):  # not being deleted (focus moves then)
            self._target.removeEventFilter(self)
            self._target.destroyed.disconnect(self._forget)
        keyboard = not QApplication.mouseButtons()
        self._target = new if new is not None and keyboard and new.window() is self.window() else None
        if self._target is not None:
            self._target.installEventFilter(self)
            self._target.destroyed.connect(self._forget)
        self._place()

    def _forget(self) -> None:
        """The ringed control was deleted (an editor closed) before the focus moved on."""
        self._target = None
        self.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._target and event.type() in _WATCHED:
            self._place()
        return False

    def _place(self) -> None:
        target = self._target
        visible = shown_part(target, self.window()) if target is not None and target.isVisible() else QRect()
        if visible.isEmpty():
            self.hide()
            return
        self.setGeometry(visible.adjusted(-RING_PX, -RING_PX, RING_PX, RING_PX))
        self.raise_()
        self.show()
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(ring_colour(self.palette()), RING_PX))
        half = RING_PX / 2
        painter.drawRoundedRect(self.rect().toRectF().adjusted(half, half, -half, -half), 3, 3)
