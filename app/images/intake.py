"""How an image gets into Hearth: from bytes (a paste, a drop), a file (the attach button,
`hearth chat --image`) or a data: URL (`hearth serve`'s image_url parts), always through
read_image, so every front end refuses the same hostile files with the same words.

What comes out is an Image (image.py): PNG, JPEG or WebP bytes of one still, upright image
within the limits. A source that already is one keeps every byte that draws it (no second
generation of loss) and loses only its metadata (metadata.py: EXIF with its GPS position, XMP,
comments), so no camera location travels with it; anything else is re-encoded from its decoded
first frame: a lossy photo as JPEG, the rest (screenshots, GIFs, BMPs, anything with
transparency) as PNG, carrying no metadata either.

Every failure is an ImageError whose message names the file, says what is wrong and what to do;
messages are plain text, escaped by whoever shows them."""

from __future__ import annotations

import base64
import binascii
import errno
import io
import os
import re
import stat
from pathlib import Path

from PIL import Image as PillowImage

from app.common.text import shorten
from app.common.units import byte_size
from app.images.decode import STORED, decode, subject
from app.images.formats import is_lossy
from app.images.image import Image, ImageError
from app.images.limits import (
    DATA_URL_MEDIA_TYPES,
    FORMAT_NAMES,
    JPEG_QUALITY,
    MAX_IMAGE_BYTES,
    MAX_IMAGES_PER_MESSAGE,
)
from app.images.metadata import without_metadata

_DATA_URL_HEADER_CHARS = 256  # "data:image/png;base64," and any parameters fit many times over
_WHITESPACE = re.compile(r"\s+")  # base64 wrapped in lines (MIME's 76 columns) is still base64


def read_image(data: bytes, name: str = "") -> Image:
    """`data` as an Image, kept as it is when it is one already; `name` (a file's name) is what
    messages call it. Raises ImageError when it is too large, not an image Hearth reads, damaged,
    or has too many pixels or none."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageError(_too_large(subject(name), len(data)))
    decoded = decode(data, name)
    kept = without_metadata(data, decoded.format) if decoded.as_is else None
    if kept is not None:
        return Image(kept, STORED[decoded.format], *decoded.picture.size)
    return _encoded(decoded.picture, lossy=is_lossy(data, decoded.format))


def read_image_file(path: Path) -> Image:
    """The image in the file at `path`. Its size on disk is checked before a byte is read (a
    10 GB file is refused as fast as a small one); a missing, unreadable or special file (a
    folder, a FIFO, a device) is an ImageError naming it."""
    return read_image(_file_bytes(path), path.name)


def read_data_url(url: str, name: str = "") -> Image:
    """The image in a `data:image/...;base64,...` URL. The media type must name an image format
    Hearth reads (the bytes decide which, as a file's suffix does not), and the size is judged
    from the URL's length before any base64 is decoded."""
    who = subject(name)
    if url[:5].lower() != "data:":
        raise ImageError(f"{who} is not a data: URL; send it as data:image/png;base64,… (or jpeg, webp, gif, bmp).")
    comma = url.find(",", 5, 5 + _DATA_URL_HEADER_CHARS)
    if comma < 0:
        raise ImageError(f"{who} is a damaged data: URL: no comma ends its header. Send it as data:image/png;base64,….")
    media_type, *parameters = (part.strip().lower() for part in url[5:comma].split(";"))
    if not media_type:
        raise ImageError(f"{who}'s data: URL names no media type; it must begin data:image/png;base64, "
                         "(or jpeg, webp, gif, bmp).")
    if media_type not in DATA_URL_MEDIA_TYPES:
        shown = shorten(media_type, 60)
        what = "an image format Hearth does not read" if media_type.startswith("image/") else "not an image"
        raise ImageError(f"{who}'s data: URL holds {shown}, {what}. Send a {FORMAT_NAMES} image.")
    if "base64" not in parameters:
        raise ImageError(f"{who}'s data: URL is not base64-encoded; send it as data:{media_type};base64,….")
    estimate = (len(url) - comma - 1 - url[-2:].count("=")) * 3 // 4  # exact, unless wrapped in lines
    if estimate > MAX_IMAGE_BYTES:
        raise ImageError(_too_large(who, estimate, about=True))
    try:
        data = base64.b64decode(_WHITESPACE.sub("", url[comma + 1 :]), validate=True)
    except binascii.Error as error:
        raise ImageError(f"{who}'s data: URL has damaged base64 ({error}). Send the image again.") from None
    return read_image(data, name)


def check_count(count: int) -> None:
    """Raises ImageError when one message would carry more than MAX_IMAGES_PER_MESSAGE images:
    every front end asks before reading any of them."""
    if count > MAX_IMAGES_PER_MESSAGE:
        raise ImageError(f"{count} images are attached; one message takes at most {MAX_IMAGES_PER_MESSAGE}. "
                         "Send the others in another message.")


def _encoded(picture: PillowImage.Image, lossy: bool) -> Image:
    buffer = io.BytesIO()
    if lossy and picture.mode != "RGBA":
        picture.save(buffer, "JPEG", quality=JPEG_QUALITY)
        media_type = "image/jpeg"
    else:
        picture.save(buffer, "PNG")
        media_type = "image/png"
    return Image(buffer.getvalue(), media_type, *picture.size)


def _file_bytes(path: Path) -> bytes:
    """The file's bytes, opened without blocking (O_NONBLOCK: a FIFO opens and is then refused),
    its size checked on the open file, and never more than MAX_IMAGE_BYTES read."""
    who = subject(path.name)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(descriptor, "rb") as file:
            status = os.fstat(file.fileno())
            if stat.S_ISDIR(status.st_mode):
                raise ImageError(f"{who} is a folder, not an image. Attach the image files in it.")
            if not stat.S_ISREG(status.st_mode):
                raise ImageError(f"{who} is not a regular file. Attach an image file.")
            if status.st_size > MAX_IMAGE_BYTES:
                raise ImageError(_too_large(who, status.st_size))
            data = file.read(MAX_IMAGE_BYTES + 1)  # a file that grew since fstat is still bounded
    except OSError as error:
        raise ImageError(_open_failure(who, error)) from None
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageError(_too_large(who, len(data)))
    return data


def _open_failure(who: str, error: OSError) -> str:
    if error.errno == errno.ENOENT:
        return f"{who} was not found: it may have been moved or deleted. Attach it from where it is now."
    if error.errno == errno.EISDIR:
        return f"{who} is a folder, not an image. Attach the image files in it."
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"{who} cannot be read: permission denied. Check its permissions, or attach a copy of it."
    return f"{who} cannot be read ({error.strerror or error}). Attach a copy of it from elsewhere."


def _too_large(who: str, size: int, about: bool = False) -> str:
    return (f"{who} is {'about ' if about else ''}{byte_size(size)}, more than the {byte_size(MAX_IMAGE_BYTES)} "
            "Hearth reads from one image. Make it smaller, then attach that.")
