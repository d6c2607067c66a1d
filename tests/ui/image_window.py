"""The window with images, driven as a user drives it: pictures made here (real PNG files, drawn
with Qt), pasted through the real clipboard, dragged and dropped as Qt delivers a drag, and a
scripted model that reads images (its description has a projector, as a vision model loaded
with its mmproj has) or does not (the files named in `text_only`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, QPointF, QRectF, Qt, QUrl
from PySide6.QtGui import (
    QColor,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QGuiApplication,
    QImage,
    QLinearGradient,
    QPainter,
)
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget
from support.flow_harness import GatedBackend, GatedScript

from app.ui.chat.images.chips import ImageChip
from app.ui.window.main_window import MainWindow

READ_MS = 10_000
ACTIONS = Qt.DropAction.CopyAction | Qt.DropAction.MoveAction | Qt.DropAction.LinkAction


class VisionScript(GatedScript):
    """Scripted models that read images: each file opens with a projector beside it, but those
    whose names are in `text_only`."""

    def __init__(self, info):
        super().__init__(info)
        self.text_only: set[str] = set()

    def open(self, source, options, progress=None, cancel=None):
        description = super().open(source, options, progress, cancel).describe()
        if source.path.name not in self.text_only:
            description = replace(description, projector=source.path.with_name(f"mmproj-{source.path.name}"))
        return GatedBackend(self, description)


def picture(width: int, height: int, hue: int) -> QImage:
    """A picture a person might attach: a sky-to-ground gradient, a sun and a hill, in `hue`."""
    image = QImage(width, height, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    sky = QLinearGradient(0, 0, 0, height)
    sky.setColorAt(0, QColor.fromHsv(hue, 120, 250))
    sky.setColorAt(1, QColor.fromHsv((hue + 40) % 360, 200, 160))
    painter.fillRect(image.rect(), sky)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(255, 220, 90))
    painter.drawEllipse(QPointF(width * 0.72, height * 0.3), height * 0.12, height * 0.12)
    painter.setBrush(QColor.fromHsv((hue + 120) % 360, 160, 110))
    painter.drawEllipse(QRectF(-width * 0.2, height * 0.62, width * 0.9, height * 0.8))
    painter.end()
    return image


def picture_file(folder: Path, name: str, width: int = 640, height: int = 480, hue: int = 200) -> Path:
    """A real image file, in the format its name says."""
    path = folder / name
    assert picture(width, height, hue).save(str(path)), path
    return path


def file_urls(*paths: Path) -> QMimeData:
    """What a file manager copies or drags: the URLs, and their paths as text (which a text box
    would paste)."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path)) for path in paths])
    mime.setText("\n".join(str(path) for path in paths))
    return mime


def paste(qtbot, window: MainWindow, mime: QMimeData | QImage) -> None:
    """Put `mime` (or a picture) on the real clipboard, then Ctrl+V in the message box; wait
    until the images it carries have been read."""
    clipboard = QGuiApplication.clipboard()
    if isinstance(mime, QImage):
        clipboard.setImage(mime)
    else:
        clipboard.setMimeData(mime)
    edit = window.composer.edit
    edit.setFocus()
    QTest.keyClick(edit, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    read(qtbot, window)


def read(qtbot, window: MainWindow) -> None:
    """Wait until the images attached have been read (intake reads them off the GUI thread)."""
    qtbot.waitUntil(lambda: not window.composer.images.reading, timeout=READ_MS)


def drag_and_drop(window: QWidget, over: QWidget, mime: QMimeData, hint: QWidget | None = None) -> bool:
    """Drag `mime` over the middle of `over` and drop it, each event to the widget Qt gives it
    (the one under the pointer that takes drops: QWidgetWindow's findDnDTarget); whether the
    drop was taken (and, with `hint`, it was shown while dragging)."""
    at = over.mapTo(window, over.rect().center())
    target = window.childAt(at) or window
    while not target.isWindow() and not target.acceptDrops():
        target = target.parentWidget()
    point = target.mapFrom(window, at)
    enter = QDragEnterEvent(point, ACTIONS, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, enter)
    if not enter.isAccepted():
        return False
    move = QDragMoveEvent(point + QPoint(3, 3), ACTIONS, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, move)
    assert move.isAccepted() and move.dropAction() == Qt.DropAction.CopyAction
    if hint is not None:
        assert hint.isVisible(), "the drop hint shows while dragging"
    drop = QDropEvent(QPointF(point), ACTIONS, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, drop)
    return drop.isAccepted()


def chips(window: MainWindow) -> list[ImageChip]:
    return window.composer.images.chips.chips()


def chip_names(window: MainWindow) -> list[str]:
    return [chip.accessibleName() for chip in chips(window)]
