"""Beside the message box: the button that attaches images, a picture drawn in the button's text
colour (redrawn when the palette changes, so it reads in light and dark), as tall as Send.

It is off while the loaded model reads no images; its tooltip and accessible description then
say why, so the reason is heard before the user tries, not after.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QIcon, QPainter, QPainterPath, QPalette, QPen, QPixmap
from PySide6.QtWidgets import QPushButton, QToolButton, QWidget

ATTACH_NAME = "Attach images"
ATTACH_TIP = "Attach images (PNG, JPEG, WebP, GIF or BMP); you can also paste them or drop them here"
ICON_PX = 20


def picture_icon(palette: QPalette, ratio: float) -> QIcon:
    """A framed landscape (hills and a sun) in the palette's button text colour, its disabled
    state in the disabled colour."""
    icon = QIcon()
    for mode, group in ((QIcon.Mode.Normal, QPalette.ColorGroup.Active),
                        (QIcon.Mode.Disabled, QPalette.ColorGroup.Disabled)):
        pixmap = QPixmap(round(ICON_PX * ratio), round(ICON_PX * ratio))
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        colour = palette.color(group, QPalette.ColorRole.ButtonText)
        painter.setPen(QPen(colour, 1.6, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin))
        painter.drawRoundedRect(QRectF(2, 3.5, 16, 13), 2.5, 2.5)
        hills = QPainterPath(QPointF(2.8, 14.5))
        hills.lineTo(7.5, 9.5)
        hills.lineTo(11, 13)
        hills.lineTo(13, 11)
        hills.lineTo(17.2, 15)
        painter.drawPath(hills)
        painter.setBrush(colour)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.drawEllipse(QPointF(13.5, 7.5), 1.6, 1.6)
        painter.end()
        icon.addPixmap(pixmap, mode)
    return icon


class AttachButton(QToolButton):
    """The Attach images button; `set_refusal` turns it off saying why, or on again."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self.setAccessibleName(ATTACH_NAME)
        self.setIconSize(QSize(ICON_PX, ICON_PX))
        self.setIcon(picture_icon(self.palette(), self.devicePixelRatioF()))
        self.set_refusal(None)

    def set_refusal(self, reason: str | None) -> None:
        """Off, saying `reason` (the loaded model reads no images), or on (None)."""
        self.setEnabled(reason is None)
        self.setToolTip(ATTACH_TIP if reason is None else reason)
        self.setAccessibleDescription(ATTACH_TIP if reason is None else reason)

    def sizeHint(self) -> QSize:
        """Square, as tall as the Send button beside it."""
        side = max(super().sizeHint().height(), QPushButton("Send").sizeHint().height())
        return QSize(side, side)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.DevicePixelRatioChange):
            self.setIcon(picture_icon(self.palette(), self.devicePixelRatioF()))
        super().changeEvent(event)
