"""What a tool call gave, shown: its text, its images as thumbnails, its structured content as
JSON, and one line that sums it up.

The parts come from a server, so each is shown inert and bounded: text in a PlainBox (cut at its
SHOWN_CHARS), an image decoded only when its header says it is of a sane size (a 2 MB PNG can
claim 30,000 × 30,000 pixels, gigabytes once decoded) and then at thumbnail size where the format
allows, and anything that does not decode named in a line of text instead.
"""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QImageReader, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from ...common.text import printable, shorten
from ...common.units import byte_size
from ...tool_servers.types import PartKind, ResultPart, ToolOutcome
from .colors import Tone, set_tone
from .plain_box import PlainBox

THUMB_PX = 160  # the longer side of a thumbnail
MAX_IMAGE_PIXELS = 40_000_000  # an image claiming more is not decoded
SUMMARY_CHARS = 120


def outcome_words(outcome: ToolOutcome, seconds: float) -> str:
    """One line on how a call ended and what it gave, e.g. "Done in 0.4 s: 21 °C and sunny"."""
    how = f"Failed after {seconds:.1f} s" if outcome.error else f"Done in {seconds:.1f} s"
    line = shorten(outcome.model_text, SUMMARY_CHARS)
    return f"{how}: {line}" if line else f"{how}, with no text"


def thumbnail(data: bytes) -> QPixmap | None:
    """The image in `data` at most THUMB_PX on its longer side, or None when it does not decode
    or claims more than MAX_IMAGE_PIXELS."""
    buffer = QBuffer()
    buffer.setData(QByteArray(data))
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    size = reader.size()  # from the header alone
    if not size.isValid() or size.isEmpty() or size.width() * size.height() > MAX_IMAGE_PIXELS:
        return None
    if size.width() > THUMB_PX or size.height() > THUMB_PX:
        reader.setScaledSize(size.scaled(THUMB_PX, THUMB_PX, Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    return None if image.isNull() else QPixmap.fromImage(image)


class ResultView(QWidget):
    """A call's outcome, whole: made when the user asks to see it."""

    def __init__(self, outcome: ToolOutcome, tool: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        self.boxes: list[PlainBox] = []
        self.images: list[QLabel] = []
        parts = list(outcome.parts) or [ResultPart(PartKind.TEXT, outcome.model_text)]
        texts: list[str] = []
        for part in parts + [None]:  # None: the end, where gathered text is shown
            if part is not None and part.kind is PartKind.TEXT:
                texts.append(part.text)
                continue
            if texts:
                self._box("\n".join(texts), f"Result of {tool}", mono=False)
                texts = []
            if part is None:
                break
            if part.kind is PartKind.JSON:
                self._box(part.text, f"Structured result of {tool}, as JSON", mono=True)
            elif part.kind is PartKind.IMAGE:
                self._image(part)
            else:
                self._line(part.text or "Something the tool returned that Hearth does not show")

    def _box(self, text: str, name: str, mono: bool) -> None:
        box = PlainBox(text, name, mono=mono, max_lines=14, parent=self)
        self.boxes.append(box)
        self.layout().addWidget(box)

    def _image(self, part: ResultPart) -> None:
        pixmap = thumbnail(part.data) if part.data else None
        what = printable(part.mime or "an image", 40)
        if pixmap is None:
            size = f", {byte_size(len(part.data))}" if part.data else ""
            self._line(part.text or f"An image ({what}{size}) that could not be shown")
            return
        label = QLabel(self)
        label.setPixmap(pixmap)
        label.setAccessibleName(f"Image {len(self.images) + 1} of the result")
        label.setAccessibleDescription(f"{what}, shown {pixmap.width()} × {pixmap.height()} pixels")
        label.setToolTip(label.accessibleDescription())
        self.images.append(label)
        row = QHBoxLayout()
        row.addWidget(label)
        row.addStretch(1)
        self.layout().addLayout(row)

    def _line(self, text: str) -> None:
        label = QLabel(shorten(text, 200), self)
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setWordWrap(True)
        set_tone(label, Tone.MUTED)
        self.layout().addWidget(label)
