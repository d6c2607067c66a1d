"""What a run of bytes is, read from its structure without decoding a pixel: which image format
(from its first bytes, never the file's name: a .jpg that is a PNG is a PNG), its size as its
header declares it, how many parts Pillow would walk one by one (PNG chunks, JPEG segments and
scans, GIF blocks), whether it is lossy, and, for bytes that are not an image Hearth reads, what
they look like, so that a message can say "is text".

All this is read here, not by Pillow, because it is checked before Pillow sees the file:
Pillow's WebP reader allocates its whole canvas when it opens a file, and a 50,000 × 50,000 PNG
must be refused from its 33 bytes of header. Every walk stops after MAX_PARTS steps."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from app.images.limits import MAX_PARTS

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
)
# Other things people attach, named in the message that refuses them: images in formats Hearth
# does not read (converting them would do), then files that are no image at all.
_OTHER_IMAGES = (
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\x00\x00\x01\x00", "an icon (ICO) image"),
    (b"8BPS", "a Photoshop image"),
)
_ISO_BRANDS = {b"heic": "a HEIC image", b"heix": "a HEIC image", b"mif1": "a HEIF image", b"avif": "an AVIF image"}
_OTHER_FILES = (
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a zip archive"),
)
_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"  # the IEND chunk: no data, and its CRC
_JPEG_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_JPEG_BARE = frozenset({0x01, *range(0xD0, 0xD9)})  # markers without a length (TEM, RSTn, SOI)
_JPEG_SOS, _JPEG_EOI = 0xDA, 0xD9


def sniff(data: bytes) -> str | None:
    """The format of `data` (one of limits.FORMATS), or None when it is none of them."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return next((name for magic, name in _MAGIC if data.startswith(magic)), None)


def declared_size(data: bytes, format: str) -> tuple[int, int] | None:
    """(width, height) as the header of `data` (of `format`, from sniff) declares it, or None
    when the header is cut short or malformed. Nothing is decoded."""
    try:
        if format == "PNG":
            return struct.unpack(">II", data[16:24]) if data[12:16] == b"IHDR" else None
        if format == "GIF":
            return _gif_size(data)
        if format == "BMP":
            if struct.unpack("<I", data[14:18])[0] == 12:  # OS/2's BITMAPCOREHEADER
                return struct.unpack("<HH", data[18:22])
            width, height = struct.unpack("<ii", data[18:26])
            return abs(width), abs(height)  # a negative height is a top-down bitmap
        if format == "WEBP":
            return _webp_size(data)
        if format == "JPEG":
            return _jpeg_size(data)
    except (struct.error, IndexError):  # cut short
        return None
    raise ValueError(f"not a format sniff() names: {format}")


def _gif_size(data: bytes) -> tuple[int, int]:
    """The logical screen, grown to hold the first image where that overhangs it (as Pillow grows
    it, allocating that much)."""
    width, height = struct.unpack("<HH", data[6:10])
    _, at = _gif_extensions(data)
    if data[at : at + 1] != b",":  # no image descriptor: Pillow will say the file is damaged
        return width, height
    left, top, image_width, image_height = struct.unpack("<HHHH", data[at + 1 : at + 9])
    return max(width, left + image_width), max(height, top + image_height)


def _gif_extensions(data: bytes) -> tuple[int, int]:
    """(sub-blocks, where the first image descriptor is) of a GIF: the extensions before its
    first image walked, each a label then sub-blocks to an empty one, to one past MAX_PARTS."""
    flags = data[10]
    at = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)  # after the global colour table
    parts = 0
    while at + 1 < len(data) and data[at] == 0x21 and parts <= MAX_PARTS:
        at += 2
        while at < len(data) and data[at] and parts <= MAX_PARTS:
            parts += 1
            at += 1 + data[at]
        at += 1
    return parts, at


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":  # the extended format's canvas, 24 bits each, less one
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    if chunk == b"VP8L" and data[20:21] == b"\x2f":  # lossless: 14 bits each, less one
        bits = struct.unpack("<I", data[21:25])[0]
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":  # lossy: 14 bits each
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """From the first start-of-frame segment."""
    for marker, at in _jpeg_segments(data):
        if marker in _JPEG_SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
    return None


def structure(data: bytes, format: str) -> tuple[int, int]:
    """(parts, scans): how many chunks (PNG), segments (JPEG) or extension sub-blocks before the
    first image (GIF) `data` has, which Pillow walks one by one in Python, counted to one past
    MAX_PARTS at most; and how many of a JPEG's segments begin a scan. (0, 0) for the others.
    A JPEG's scans are counted to its end-of-image marker: not its EXIF thumbnail's (inside a
    segment), nor anything after it (where some phones append megabytes of their own data)."""
    if format == "PNG":
        parts, at = 0, 8
        while at + 8 <= len(data) and parts <= MAX_PARTS:
            parts += 1
            if data[at + 4 : at + 8] == b"IEND":
                break
            at += 12 + struct.unpack_from(">I", data, at)[0]
        return parts, 0
    if format == "JPEG":
        parts = scans = 0
        for marker, _ in _jpeg_segments(data):
            parts += 1
            scans += marker == _JPEG_SOS
            if parts > MAX_PARTS:
                break
        return parts, scans
    if format == "GIF":
        return _gif_extensions(data)[0], 0
    return 0, 0


def _jpeg_segments(data: bytes) -> Iterator[tuple[int, int]]:
    """(marker, offset) of each segment of a JPEG up to its end-of-image marker or the first
    malformed byte: segment by segment by their lengths, and through each scan's entropy-coded
    data to the next marker (0xFF there is followed by a zero byte or a restart number)."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker == _JPEG_EOI:
            return
        yield marker, at
        if marker in _JPEG_BARE:
            at += 2
            continue
        at += 2 + struct.unpack(">H", data[at + 2 : at + 4])[0]
        if marker == _JPEG_SOS:
            at = _after_entropy_coded(data, at)


def _after_entropy_coded(data: bytes, at: int) -> int:
    while (at := data.find(b"\xff", at)) >= 0 and at + 1 < len(data):
        following = data[at + 1]
        if following == 0 or 0xD0 <= following <= 0xD7:  # a stuffed 0xFF byte, or RSTn
            at += 2
        elif following == 0xFF:  # fill before a marker
            at += 1
        else:
            return at
    return len(data)


def is_lossy(data: bytes, format: str) -> bool:
    """Whether `data` was compressed with loss (JPEG, or WebP whose first image is VP8 rather than
    VP8L): a re-encoded copy of a lossy photo is a JPEG, of anything else a PNG."""
    if format == "JPEG":
        return True
    if format != "WEBP":
        return False
    at = 12
    for _ in range(MAX_PARTS):  # RIFF chunks: a four-character code, a length, padded to even
        if at + 8 > len(data):
            break
        code, length = data[at : at + 4], struct.unpack("<I", data[at + 4 : at + 8])[0]
        if code in (b"VP8 ", b"VP8L"):
            return code == b"VP8 "
        if code == b"ANMF":  # an animation frame: 16 bytes of its own header, then its chunks
            at += 8 + 16
            continue
        at += 8 + length + (length & 1)
    return False


def keepable(data: bytes, format: str) -> bool:
    """Whether bytes Pillow decoded well could also be kept as they are, for other readers: not
    a PNG of 16 bits a channel (twice the bytes, for precision no projector uses), nor one cut
    after its last image data (Pillow decodes it whole; stb_image and others refuse it)."""
    return format != "PNG" or (data[24:25] != b"\x10" and data.endswith(_PNG_END))


def what_else(data: bytes) -> tuple[str | None, bool]:
    """What bytes that sniff() does not name look like, as a message says it ("text", "a HEIC
    image"), and whether that is an image in another format (which converting would make
    readable); (None, False) when they look like nothing known."""
    image = next((name for magic, name in _OTHER_IMAGES if data.startswith(magic)), None)
    if image is None and data[4:8] == b"ftyp":
        image = _ISO_BRANDS.get(data[8:12])
    if image is None and b"<svg" in data[:4096].lower():
        image = "an SVG drawing"
    if image is not None:
        return image, True
    other = next((name for magic, name in _OTHER_FILES if data.startswith(magic)), None)
    if other is not None:
        return other, False
    head = data[:4096]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as cut:  # a character cut at 4096 bytes is still text
        text = head[: cut.start].decode("utf-8") if cut.start > len(head) - 4 else ""
    if text and all(char.isprintable() or char.isspace() for char in text):
        return "text", False
    return None, False
