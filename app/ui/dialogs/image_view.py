"""An image shown larger: opened from a chip above the message box or a thumbnail in the
transcript, fitted to the dialog (never enlarged past its own pixels, so a small image is not
blurred), the dialog sized to the image up to most of the screen. Esc or Close closes it, and
the keyboard goes back to where it was."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter, QPaintEvent
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QSizePolicy, QVBoxLayout, QWidget

from ...images.image import Image, ImageError
from ..widgets.escape import claims_escape
from ..widgets.thumbnails import decoded

SCREEN_SHARE = 0.85  # of the screen's free area the dialog takes at most
MIN_SIDE_PX = 240


def screen_sized(pixels: QImage) -> QImage:
    """The picture no larger than the screen shows it. The dialog scales it again at each size
    a resize passes through, on the GUI thread alone (Qt's pool of threads is off while models
    decode: application.QT_ENVIRONMENT): 47 ms for a 12-megapixel photo, a few from this."""
    screen = QGuiApplication.primaryScreen()
    if screen is None:
        return pixels
    limit = screen.availableSize() * screen.devicePixelRatio()
    if pixels.width() <= limit.width() and pixels.height() <= limit.height():
        return pixels
    return pixels.scaled(limit, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)


class FittedPicture(QWidget):
    """The picture, as large as the widget allows and no larger than it is, centred."""

    def __init__(self, pixels: QImage, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._pixels = pixels
        self._source = screen_sized(pixels)  # what each size is scaled from
        self._scaled: QImage | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(MIN_SIDE_PX // 2, MIN_SIDE_PX // 2)

    def sizeHint(self) -> QSize:
        return self._pixels.size()

    def shown_rect(self) -> QRect:
        """Where the picture is drawn, in the widget."""
        size = self._pixels.size()
        if size.width() > self.width() or size.height() > self.height():
            size = size.scaled(self.size(), Qt.AspectRatioMode.KeepAspectRatio)
        return QRect((self.width() - size.width()) // 2, (self.height() - size.height()) // 2, size.width(), size.height())

    def paintEvent(self, _event: QPaintEvent) -> None:
        area = self.shown_rect()
        ratio = self.devicePixelRatioF()
        wanted = QSize(round(area.width() * ratio), round(area.height() * ratio))
        if self._scaled is None or self._scaled.size() != wanted:
            self._scaled = self._source.scaled(wanted, Qt.AspectRatioMode.IgnoreAspectRatio,
                                               Qt.TransformationMode.SmoothTransformation)
            self._scaled.setDevicePixelRatio(ratio)
        painter = QPainter(self)
        painter.drawImage(area.topLeft(), self._scaled)
        painter.end()


class ImageViewDialog(QDialog):
    """One image, larger; `words` name it ("Image 1 of 2, 640 × 480")."""

    def __init__(self, image: Image, words: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(words)
        self.setAccessibleName(words)
        self.setAccessibleDescription("The image fitted to the window; Esc closes it")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        try:
            self.picture: QWidget = FittedPicture(decoded(image))
            self.picture.setAccessibleName(words)
        except ImageError as exc:
            self.picture = QLabel(str(exc))
            self.picture.setTextFormat(Qt.TextFormat.PlainText)
            self.picture.setWordWrap(True)
        layout.addWidget(self.picture, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._fit_to_screen(QSize(image.width, image.height), buttons.sizeHint().height())

    @classmethod
    def open_for(cls, image: Image, words: str, parent: QWidget) -> ImageViewDialog:
        """Show it over `parent`'s window until it is closed (the window waits meanwhile)."""
        dialog = cls(image, words, parent)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # its pixels go with it
        dialog.open()
        return dialog

    def event(self, event) -> bool:
        """Esc closes it (the window's Stop would take it first: widgets/escape.py)."""
        return claims_escape(event) or super().event(event)

    def _fit_to_screen(self, image: QSize, below: int) -> None:
        """As large as the image and what is around it, within SCREEN_SHARE of the screen: a
        larger image is shown smaller, keeping its shape, so no band is left beside it."""
        screen = (self.parentWidget().screen() if self.parentWidget() else None) or QGuiApplication.primaryScreen()
        margins = self.layout().contentsMargins()
        around = QSize(margins.left() + margins.right(),
                       margins.top() + margins.bottom() + below + self.layout().spacing())
        room = screen.availableGeometry().size() * SCREEN_SHARE - around
        fits = image.width() <= room.width() and image.height() <= room.height()
        shown = image if fits else image.scaled(room, Qt.AspectRatioMode.KeepAspectRatio)
        self.resize((shown + around).expandedTo(QSize(MIN_SIDE_PX, MIN_SIDE_PX)))
