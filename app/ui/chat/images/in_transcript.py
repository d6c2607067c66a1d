"""A sent message's images in the transcript: thumbnails in the user's bubble, before its text.

Each thumbnail is drawn from the stored bytes (read through the store: `read`), scaled down
once and kept (THUMBNAILS_KEPT, by digest and pixel ratio), and put in the document as an image
resource of its own: the pane never loads a resource a text names (browser.py), and a model's
text cannot name these (its images become links: markdown_render.py). The document forgets its
resources when cleared, so each rendering adds them again from what is kept.

A thumbnail is a link (hearth:open-image/<message id>-<n>): a click, or Tab to it and Enter,
opens it larger. Its tooltip is its words ("Image 1 of 2, 640 × 480"), which the pane also says
to a screen reader when Tab reaches it (link_focus.py). An image that cannot be read (its file
is gone) is a line saying so, in its place.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from PySide6.QtCore import QSize, QUrl
from PySide6.QtGui import QImage, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextDocument, QTextImageFormat

from ....images.image import Image, ImageError, ImageRef
from ....store import StoreError
from ...widgets.thumbnails import image_words, thumbnail
from ..message_footer import ACTION_SCHEME

THUMBNAIL_BOX_PX = QSize(200, 160)  # a thumbnail fits in this, in logical pixels
THUMBNAIL_RADIUS_PX = 10
THUMBNAILS_KEPT = 200  # about 25 MB at most, at a pixel ratio of 2
RESOURCE_SCHEME = "hearth-image"
_GAP = "\u2002"  # between two thumbnails on a line (an en space)

ImageReader = Callable[[ImageRef], Image]


def open_image_href(message_id: int, number: int) -> str:
    return f"{ACTION_SCHEME}:open-image/{message_id}-{number}"


class TranscriptImages:
    """Writes messages' thumbnails into `document`, reading images with `read` (None: none can
    be read, and each is said to be missing)."""

    def __init__(self, document: QTextDocument, read: ImageReader | None, ratio: Callable[[], float]) -> None:
        """`ratio`: the pane's device pixel ratio now."""
        self._document = document
        self._read = read
        self._ratio = ratio
        self._kept: OrderedDict[tuple[str, float], QImage] = OrderedDict()

    def write(self, cursor: QTextCursor, message_id: int, images: tuple[ImageRef, ...],
              block: QTextBlockFormat, note: QTextCharFormat) -> None:
        """A block at the cursor (in `block`'s format) holding the images' thumbnails, in order;
        an image that cannot be read is said in `note`'s format."""
        if cursor.block().length() == 1:
            cursor.setBlockFormat(block)
        else:
            cursor.insertBlock(block)
        plain = QTextCharFormat()
        for number, ref in enumerate(images, start=1):
            if number > 1:
                cursor.insertText(_GAP, plain)
            words = image_words(number, len(images), ref)
            try:
                picture = self._thumbnail(ref)
            except (ImageError, StoreError) as exc:
                missing = QTextCharFormat(note)
                missing.setToolTip(str(exc))
                cursor.insertText(f"[{words}: it could not be read]", missing)
                continue
            name = f"{RESOURCE_SCHEME}:{ref.digest}"
            self._document.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), picture)
            shown = QTextImageFormat()
            shown.setName(name)
            shown.setWidth(picture.width() / picture.devicePixelRatio())
            shown.setHeight(picture.height() / picture.devicePixelRatio())
            shown.setAnchor(True)
            shown.setAnchorHref(open_image_href(message_id, number))
            shown.setToolTip(words)
            cursor.insertImage(shown)
        cursor.setCharFormat(plain)

    def _thumbnail(self, ref: ImageRef) -> QImage:
        ratio = self._ratio()
        key = (ref.digest, ratio)
        if key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key]
        if self._read is None:
            raise ImageError("no images can be read here")
        picture = thumbnail(self._read(ref), THUMBNAIL_BOX_PX, ratio, THUMBNAIL_RADIUS_PX, crop=False)
        self._kept[key] = picture
        if len(self._kept) > THUMBNAILS_KEPT:
            self._kept.popitem(last=False)
        return picture
