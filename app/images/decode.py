"""One image's bytes decoded under the limits, the one way intake.py (bytes from outside) and
pixels.py (bytes the engine's process received over its socket) both decode: the format from
the bytes, the declared size checked before anything is decoded, the first frame only, turned
upright by its EXIF orientation, in a plain mode (L, RGB or RGBA), downscaled to MAX_SIDE.

Pillow decodes, with limits llama.cpp's stb_image does not have. Each format's reader is called
directly rather than through Image.open, which would try every format Pillow knows (the ones
Hearth refuses too) and apply its own, laxer, process-wide pixel limit. Every failure is an
ImageError whose message names the image and says what to do; nothing else escapes."""

from __future__ import annotations

import io
from collections.abc import Collection
from dataclasses import dataclass

from PIL import BmpImagePlugin, GifImagePlugin, ImageOps, JpegImagePlugin, PngImagePlugin, WebPImagePlugin
from PIL import Image as PillowImage
from PIL.ExifTags import Base as ExifTag

from app.common.text import printable, shorten
from app.images.formats import declared_size, keepable, sniff, structure, what_else
from app.images.image import ImageError
from app.images.limits import FORMAT_NAMES, FORMATS, MAX_JPEG_SCANS, MAX_PARTS, MAX_PIXELS, MAX_SIDE

# The formats an Image keeps (image.MEDIA_TYPES), with their media types; GIF and BMP are not.
STORED = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}
_READERS = {
    "PNG": PngImagePlugin.PngImageFile,
    "JPEG": JpegImagePlugin.JpegImageFile,
    "WEBP": WebPImagePlugin.WebPImageFile,
    "GIF": GifImagePlugin.GifImageFile,
    "BMP": BmpImagePlugin.BmpImageFile,
}
_SHOWN = {"PNG": "PNG", "JPEG": "JPEG", "WEBP": "WebP", "GIF": "GIF", "BMP": "BMP"}


@dataclass(frozen=True)
class Decoded:
    picture: PillowImage.Image  # the first frame: upright, L, RGB or RGBA, longest side ≤ MAX_SIDE
    format: str  # what the bytes are (limits.FORMATS)
    # The source's own bytes show exactly `picture` to any reader: PNG, JPEG or WebP, one frame,
    # upright, 8 bits a channel in L, RGB or RGBA, within MAX_SIDE. Then they are kept, not re-encoded.
    as_is: bool


def subject(name: str) -> str:
    """How a message names the image: its file name in quotes (made printable, never escaped:
    the window escapes what it shows), or "The image" when it has none."""
    return f"“{printable(name)}”" if name else "The image"


def decode(data: bytes, name: str = "", formats: Collection[str] = FORMATS) -> Decoded:
    """`data` decoded, if it is an image in one of `formats` within the limits; else ImageError."""
    who = subject(name)
    format = sniff(data)
    if format is None or format not in formats:
        raise ImageError(_not_readable(who, data, format, formats))
    label = _SHOWN[format]
    size = _checked_header(who, data, format)
    try:
        picture = _READERS[format](io.BytesIO(data))
        if format == "JPEG" and max(picture.size) > MAX_SIDE:
            picture.draft(None, _fitted(picture.size))  # libjpeg decodes at 1/2, 1/4 or 1/8
        # A JPEG as it will decode (named by its declared size); the others as Pillow read their header.
        _check_size(who, picture.size, shown=size if format == "JPEG" else None)
        still = format not in STORED or getattr(picture, "n_frames", 1) == 1  # n_frames: from the header
        picture.load()  # the first frame only
        upright = picture.getexif().get(ExifTag.Orientation, 1) == 1
        if not upright:
            ImageOps.exif_transpose(picture, in_place=True)
        plain = _plain(picture)
        fits = max(plain.size) <= MAX_SIDE
        if not fits:
            plain.thumbnail((MAX_SIDE, MAX_SIDE), PillowImage.Resampling.LANCZOS)
    except ImageError:
        raise
    except Exception as error:  # noqa: BLE001 — Pillow says "damaged" in a dozen exception types
        detail = shorten(str(error) or type(error).__name__, 120)
        raise ImageError(f"{who} is a damaged or incomplete {label} file ({detail}). Attach a complete copy of it.") \
            from None
    as_is = format in STORED and still and upright and fits and plain is picture and keepable(data, format)
    return Decoded(plain, format, as_is)


def _checked_header(who: str, data: bytes, format: str) -> tuple[int, int]:
    """The size `data`'s header declares, once it and the file's structure pass the limits that
    can be judged before Pillow reads a byte."""
    label = _SHOWN[format]
    size = declared_size(data, format)
    if size is None:
        raise ImageError(f"{who} is a damaged {label} file: its header cannot be read. Attach another copy of it.")
    _check_size(who, size, count=format != "JPEG")  # a JPEG's pixels once draft() has chosen its scale
    parts, scans = structure(data, format)
    if parts > MAX_PARTS:
        kind = {"PNG": "chunks", "JPEG": "segments", "GIF": "blocks"}[format]
        raise ImageError(f"{who} is a {label} file of more than {MAX_PARTS:,} {kind} (an ordinary one has far fewer). "
                         "Save it again from an image editor, then attach that.")
    if scans > MAX_JPEG_SCANS:
        raise ImageError(f"{who} is a JPEG of {scans:,} scans, more than the {MAX_JPEG_SCANS} Hearth decodes (a photo "
                         "has about ten). Save it again from an image editor, then attach that.")
    return size


def _check_size(who: str, size: tuple[int, int], count: bool = True, shown: tuple[int, int] | None = None) -> None:
    """Refuses `size` (what would be decoded) without pixels or with too many; the message gives
    `shown`, the size the header declares, where that differs (a JPEG decoded scaled down)."""
    width, height = size
    if width <= 0 or height <= 0:
        raise ImageError(f"{who} has no pixels ({width} × {height}). Attach another image.")
    if count and width * height > MAX_PIXELS:
        width, height = shown or size
        raise ImageError(
            f"{who} is {width:,} × {height:,} pixels, more than the {MAX_PIXELS // 1_000_000} megapixels Hearth "
            "decodes. Make it smaller in an image editor, then attach that."
        )


def _fitted(size: tuple[int, int]) -> tuple[int, int]:
    """`size` scaled down so that its longest side is MAX_SIDE."""
    scale = MAX_SIDE / max(size)
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def _plain(picture: PillowImage.Image) -> PillowImage.Image:
    """`picture` itself when it is 8-bit L, RGB or RGBA without separate transparency; else a
    converted copy: 16-bit grey scaled to 8 bits (Pillow's own conversion would clip it: 256
    and 65535 both to white), transparency (LA, a palette's or a tRNS colour) to RGBA, a
    palette to RGB, bilevel to L, CMYK (its inversion in Adobe's files undone by Pillow) to RGB."""
    if picture.mode.startswith("I"):
        return picture.convert("I").point(lambda value: value / 256).convert("L")
    if picture.has_transparency_data:
        target = "RGBA"
    else:
        target = "L" if picture.mode in ("1", "L") else "RGB"
    return picture if picture.mode == target else picture.convert(target)


def _not_readable(who: str, data: bytes, format: str | None, formats: Collection[str]) -> str:
    if not data:
        return f"{who} is empty (0 bytes). Attach the image itself."
    if format is not None:  # a format intake reads, where only those an Image keeps are taken
        return f"{who} is a {_SHOWN[format]} image, not one of {', '.join(_SHOWN[f] for f in formats)}. Attach it again."
    what, is_image = what_else(data)
    if what is None:
        return f"{who} is not an image Hearth can read. Attach a {FORMAT_NAMES} image."
    if is_image:
        return f"{who} is {what}, which Hearth does not read. Convert it to PNG or JPEG, then attach that."
    return f"{who} is {what}, not an image. Attach a {FORMAT_NAMES} image."
