"""Images made small for the screen, and the words that name one to someone who cannot see it.

A thumbnail is decoded at about the size it is shown (QImageReader's scaled read: a JPEG is
decoded at an eighth of its size where that is enough; a chip's square is cut from the middle
before it is scaled, so a very long image is never drawn large to be cut down), so a chip or a
transcript never holds a photo's full pixels; it is drawn at the screen's device pixel ratio,
with rounded corners (transparent outside them), so it is sharp on a high-density screen and
sits on any background.
The bytes are an intake-checked Image (app/images/intake.py), so a decode is bounded; one that
fails all the same is an ImageError, said where the image would be.
"""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QImage, QImageReader, QPainter, QPainterPath

from ...images.image import Image, ImageError, ImageRef


def image_words(number: int, count: int, image: Image | ImageRef) -> str:
    """What an image is called to a screen reader and in tooltips: "Image 1 of 2, 640 × 480"."""
    return f"Image {number} of {count}, {image.width} × {image.height}"


def decoded(image: Image, fit: QSize | None = None, clip: QRect | None = None) -> QImage:
    """The image's pixels (only those in `clip`, where given), scaled down while decoding to fit
    `fit` (None: at full size)."""
    data = QByteArray(image.data)
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    reader.setAutoTransform(False)  # intake made it upright; an orientation tag is not read twice
    size = reader.size()
    if clip is not None:
        reader.setClipRect(clip)
        size = clip.size()
    if fit is not None and size.isValid() and (size.width() > fit.width() or size.height() > fit.height()):
        reader.setScaledSize(size.scaled(fit, Qt.AspectRatioMode.KeepAspectRatio).expandedTo(QSize(1, 1)))
    pixels = reader.read()
    if pixels.isNull():
        raise ImageError(f"The image could not be shown: {reader.errorString()}")
    return pixels


def thumbnail(image: Image, box: QSize, ratio: float, radius: float, crop: bool) -> QImage:
    """The image in `box` (logical pixels) for a screen of this device pixel ratio, its corners
    rounded by `radius`: filling the box, cut to it (`crop`, a chip's square), or whole within
    it, never shown larger than the image itself."""
    full = QSize(image.width, image.height)
    if crop:  # the middle square (of a very wide image too: never scaled up to cover the box first)
        side = min(full.width(), full.height())
        clip = QRect((full.width() - side) // 2, (full.height() - side) // 2, side, side)
        logical = box
    else:
        clip = None
        fits = full.width() <= box.width() and full.height() <= box.height()
        logical = (full if fits else full.scaled(box, Qt.AspectRatioMode.KeepAspectRatio)).expandedTo(QSize(1, 1))
    drawn = (logical * ratio).expandedTo(QSize(1, 1))
    pixels = decoded(image, drawn, clip)
    if pixels.size() != drawn:  # a JPEG decodes to a power of two of its size; a small image is drawn up
        pixels = pixels.scaled(drawn, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.SmoothTransformation)
    out = QImage(drawn, QImage.Format.Format_ARGB32_Premultiplied)
    out.fill(Qt.GlobalColor.transparent)
    painter = QPainter(out)
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.SmoothPixmapTransform)
    corners = QPainterPath()
    corners.addRoundedRect(QRectF(0, 0, drawn.width(), drawn.height()), radius * ratio, radius * ratio)
    painter.setClipPath(corners)
    painter.drawImage(0, 0, pixels)
    painter.end()
    out.setDevicePixelRatio(ratio)
    return out
