"""The images attached to the message being written, as chips above the message box.

Each chip is the image's thumbnail, square and rounded, with a × in its corner that removes it.
A chip is a button a screen reader names ("Image 1 of 2, 640 × 480"): a click, Enter or Space
shows the image larger; Delete or Backspace removes it, as the × does (which the mouse reaches;
the keyboard has the chip). The row scrolls sideways when the chips outgrow the box, keeping
the focused one in view.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFocusEvent, QKeyEvent, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QAbstractButton, QFrame, QHBoxLayout, QScrollArea, QToolButton, QWidget

from ....images.image import Image, ImageError
from ...widgets.colors import mix
from ...widgets.thumbnails import image_words, thumbnail

CHIP_PX = 64  # the side of a chip's square
CHIP_RADIUS_PX = 8
CHIP_SPACING_PX = 8
REMOVE_PX = 20  # the ×, inside the chip's top right corner
_REMOVE_INSET_PX = 4
_REMOVE_KEYS = (Qt.Key.Key_Delete, Qt.Key.Key_Backspace)
_OPEN_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


class _RemoveButton(QToolButton):
    """The × over a chip: a dark disc with a white cross, readable on any picture."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setFixedSize(REMOVE_PX, REMOVE_PX)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keyboard removes with Delete on the chip
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        disc = QRectF(self.rect()).adjusted(1, 1, -1, -1)
        painter.setPen(QPen(QColor(255, 255, 255, 200), 1))
        painter.setBrush(QColor(0, 0, 0, 230 if self.underMouse() or self.isDown() else 170))
        painter.drawEllipse(disc)
        painter.setPen(QPen(QColor("white"), 1.6, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
        arm = disc.width() * 0.2
        centre = disc.center()
        painter.drawLine(centre.x() - arm, centre.y() - arm, centre.x() + arm, centre.y() + arm)
        painter.drawLine(centre.x() - arm, centre.y() + arm, centre.x() + arm, centre.y() - arm)
        painter.end()


class ImageChip(QAbstractButton):
    """One attached image. Clicked (Enter, Space, a click): show it larger. removeRequested():
    its × was clicked, or Delete or Backspace pressed on it. focused(): it took the focus."""

    removeRequested = Signal()
    focused = Signal()

    def __init__(self, image: Image, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image = image
        self.setFixedSize(CHIP_PX, CHIP_PX)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.remove_button = _RemoveButton(self)
        self.remove_button.move(CHIP_PX - REMOVE_PX - _REMOVE_INSET_PX, _REMOVE_INSET_PX)
        self.remove_button.clicked.connect(self.removeRequested)
        self._pixels = None  # the thumbnail, for the device pixel ratio it was drawn at
        self._broken = False

    def set_place(self, number: int, count: int) -> None:
        """Which of the attached images this is: its names say so."""
        words = image_words(number, count, self.image)
        self.setAccessibleName(words)
        self.setAccessibleDescription("Enter shows it larger; Delete removes it")
        self.setToolTip(f"{words}\nClick to see it larger; Delete removes it")
        self.remove_button.setAccessibleName(f"Remove image {number}")
        self.remove_button.setToolTip(f"Remove image {number}")

    def sizeHint(self) -> QSize:
        return QSize(CHIP_PX, CHIP_PX)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in _REMOVE_KEYS and not event.modifiers():
            self.removeRequested.emit()
        elif event.key() in _OPEN_KEYS:
            self.click()
        else:
            super().keyPressEvent(event)

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        self.focused.emit()

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        whole = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        pixels = self._thumbnail()
        palette = self.palette()
        if pixels is not None:
            painter.drawImage(self.rect(), pixels)
        else:  # not decodable after all: a plain tile that still names it and can be removed
            painter.setBrush(mix(palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text), 0.1))
            painter.setPen(Qt.PenStyle.NoPen)
            painter.drawRoundedRect(whole, CHIP_RADIUS_PX, CHIP_RADIUS_PX)
            painter.setPen(palette.color(QPalette.ColorRole.Text))
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "?")
        edge = mix(palette.color(QPalette.ColorRole.Window), palette.color(QPalette.ColorRole.Text), 0.25)
        if self.underMouse() or self.isDown():
            edge = palette.color(QPalette.ColorRole.Highlight)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(QPen(edge, 1))
        painter.drawRoundedRect(whole, CHIP_RADIUS_PX, CHIP_RADIUS_PX)
        painter.end()

    def _thumbnail(self):
        ratio = self.devicePixelRatioF()
        if self._broken:
            return None
        if self._pixels is None or self._pixels.devicePixelRatio() != ratio:
            try:
                self._pixels = thumbnail(self.image, QSize(CHIP_PX, CHIP_PX), ratio, CHIP_RADIUS_PX, crop=True)
            except ImageError:
                self._broken = True
                return None
        return self._pixels


class ImageChips(QScrollArea):
    """The row of chips; hidden while there are none.

    Signals:
        removeRequested(int): remove the image at this index.
        openRequested(int): show the image at this index larger.
    """

    removeRequested = Signal(int)
    openRequested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidgetResizable(True)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the chips take the focus, not the row
        self.viewport().setAutoFillBackground(False)
        row = QWidget()
        row.setAutoFillBackground(False)
        self._layout = QHBoxLayout(row)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(CHIP_SPACING_PX)
        self._layout.addStretch(1)
        self.setWidget(row)
        self._chips: list[ImageChip] = []
        self.horizontalScrollBar().rangeChanged.connect(lambda *_range: self._fit_height())
        self._fit_height()
        self.hide()

    def chips(self) -> list[ImageChip]:
        return list(self._chips)

    def set_images(self, images: tuple[Image, ...]) -> None:
        """Show these images, in order (chips of images still attached are kept)."""
        kept = {id(chip.image): chip for chip in self._chips}
        for chip in self._chips:
            self._layout.removeWidget(chip)
        chips = []
        for image in images:
            chip = kept.pop(id(image), None)
            if chip is None:
                chip = ImageChip(image, self.widget())
                chip.removeRequested.connect(lambda c=chip: self.removeRequested.emit(self._chips.index(c)))
                chip.clicked.connect(lambda _checked=False, c=chip: self.openRequested.emit(self._chips.index(c)))
                chip.focused.connect(lambda c=chip: self.ensureWidgetVisible(c, 0, 0))
            chips.append(chip)
        for chip in kept.values():
            chip.hide()
            chip.deleteLater()
        for index, chip in enumerate(chips):
            self._layout.insertWidget(index, chip)
            chip.set_place(index + 1, len(chips))
            chip.show()
        self._chips = chips
        self.setVisible(bool(chips))

    def _fit_height(self) -> None:
        bar = self.horizontalScrollBar()
        room = bar.sizeHint().height() if bar.maximum() > 0 else 0
        self.setFixedHeight(CHIP_PX + room)
