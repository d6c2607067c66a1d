"""Images made small for the screen, and the words that name one to someone who cannot see it.

A thumbnail is decoded at about the size it is shown (QImageReader's scaled read: a JPEG is
decoded at an eighth of its size where that is enough), so a chip or a transcript never holds a
photo's full pixels; it is drawn at the screen's device pixel ratio, with rounded corners
(transparent outside them), so it is sharp on a high-density screen and sits on any background.
The bytes are an intake-checked Image (app/images/intake.py), so a decode is bounded; one that
fails all the same is an ImageError, said where the image would be.
"""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, QSize, Qt
from PySide6.QtGui import QImage, QImageReader, QPainter, QPainterPath

from ...images.image import Image, ImageError, ImageRef


def image_words(number: int, count: int, image: Image | ImageRef) -> str:
    """What an image is called to a screen reader and in tooltips: "Image 1 of 2, 640 × 480"."""
    return f"Image {number} of {count}, {image.width} × {image.height}"


def decoded(image: Image, fit: QSize | None = None) -> QImage:
    """The image's pixels, scaled down while decoding to fit `fit` (None: at full size)."""
    data = QByteArray(image.data)
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    reader.setAutoTransform(False)  # intake made it upright; an orientation tag is not read twice
    size = reader.size()
    if fit is not None and size.isValid() and (size.width() > fit.width() or size.height() > fit.height()):
        reader.setScaledSize(size.scaled(fit, Qt.AspectRatioMode.KeepAspectRatio))
    pixels = reader.read()
    if pixels.isNull():
        raise ImageError(f"The image could not be shown: {reader.errorString()}")
    return pixels


def thumbnail(image: Image, box: QSize, ratio: float, radius: float, crop: bool) -> QImage:
    """The image in `box` (logical pixels) for a screen of this device pixel ratio, its corners
    rounded by `radius`: filling the box, cut to it (`crop`, a chip's square), or whole within
    it, never larger than the image itself."""
    target = QSize(round(box.width() * ratio), round(box.height() * ratio))
    mode = Qt.AspectRatioMode.KeepAspectRatioByExpanding if crop else Qt.AspectRatioMode.KeepAspectRatio
    wanted = QSize(image.width, image.height).scaled(target, mode)
    pixels = decoded(image, wanted)
    if pixels.size() != wanted and (pixels.width() > wanted.width() or pixels.height() > wanted.height()):
        pixels = pixels.scaled(wanted, mode, Qt.TransformationMode.SmoothTransformation)
    shown = target if crop else pixels.size()
    out = QImage(shown, QImage.Format.Format_ARGB32_Premultiplied)
    out.fill(Qt.GlobalColor.transparent)
    painter = QPainter(out)
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.SmoothPixmapTransform)
    corners = QPainterPath()
    corners.addRoundedRect(QRectF(0, 0, shown.width(), shown.height()), radius * ratio, radius * ratio)
    painter.setClipPath(corners)
    painter.drawImage((shown.width() - pixels.width()) // 2, (shown.height() - pixels.height()) // 2, pixels)
    painter.end()
    out.setDevicePixelRatio(ratio)
    return out
