"""Images the tests make for themselves (no binary is committed): Pillow for the ordinary ones,
and PNG chunks written by hand with zlib for what Pillow will not write (a header declaring
50,000 × 50,000 pixels over a few bytes of data, a zero-width image, 16-bit RGB)."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image as PillowImage

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Four colours, one a quadrant, far enough apart that JPEG's loss cannot confuse them.
RED, GREEN, BLUE, YELLOW = (230, 20, 20), (20, 200, 20), (20, 20, 230), (230, 230, 20)


def encoded(picture: PillowImage.Image, format: str, **options) -> bytes:
    buffer = io.BytesIO()
    picture.save(buffer, format, **options)
    return buffer.getvalue()


def solid(size: tuple[int, int], colour=RED, mode: str = "RGB") -> PillowImage.Image:
    return PillowImage.new(mode, size, colour)


def quadrants(width: int, height: int) -> PillowImage.Image:
    """RED top left, GREEN top right, BLUE bottom left, YELLOW bottom right: a rotation or a
    mirror moves each to a corner where the test can see it."""
    picture = PillowImage.new("RGB", (width, height))
    half_w, half_h = width // 2, height // 2
    for colour, box in ((RED, (0, 0, half_w, half_h)), (GREEN, (half_w, 0, width, half_h)),
                        (BLUE, (0, half_h, half_w, height)), (YELLOW, (half_w, half_h, width, height))):
        picture.paste(colour, box)
    return picture


def corners(picture: PillowImage.Image) -> list[tuple[int, ...]]:
    """The colours a quarter of the way in from each corner: top left, top right, bottom left,
    bottom right."""
    picture = picture.convert("RGB")
    w, h = picture.size
    return [picture.getpixel((x, y)) for y in (h // 4, 3 * h // 4) for x in (w // 4, 3 * w // 4)]


def near(actual, expected, tolerance: int = 24) -> bool:
    return all(abs(a - e) <= tolerance for a, e in zip(actual, expected, strict=True))


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_by_hand(width: int, height: int, rows: bytes = b"", *, depth: int = 8, colour_type: int = 2) -> bytes:
    """A PNG whose header declares `width` × `height` whatever `rows` (the filtered scanlines,
    compressed here) hold: a bomb when they hold a few bytes of a huge image."""
    header = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0)
    return (PNG_SIGNATURE + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", zlib.compress(rows, 9))
            + png_chunk(b"IEND", b""))


def png_bomb(width: int = 50_000, height: int = 50_000) -> bytes:
    """A decompression bomb: RGB `width` × `height` declared (7.5 GB decoded at 50,000²), a few
    KB on disk: the first rows of zeros compress to almost nothing."""
    return png_by_hand(width, height, bytes(64 * 1024))


def png_grey_at(width: int, height: int) -> bytes:
    """An 8-bit grey PNG of exactly `width` × `height`, all of it real data (it decodes)."""
    row = b"\x00" + bytes(width)  # filter type 0, then a row of black
    return png_by_hand(width, height, row * height, colour_type=0)


def png_rgb16(pixels: list[list[tuple[int, int, int]]]) -> bytes:
    """A 16-bit RGB PNG (Pillow reads these but has no mode to write them in)."""
    rows = b"".join(b"\x00" + b"".join(struct.pack(">HHH", *pixel) for pixel in row) for row in pixels)
    return png_by_hand(len(pixels[0]), len(pixels), rows, depth=16, colour_type=2)


def webp_canvas_header(width: int, height: int) -> bytes:
    """The first 30 bytes of an extended WebP (VP8X) declaring a `width` × `height` canvas, and a
    short, empty frame after it: a canvas libwebp would allocate when it opens the file."""
    vp8x = struct.pack("<I", 0) + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    body = b"WEBP" + b"VP8X" + struct.pack("<I", len(vp8x)) + vp8x + b"VP8 " + struct.pack("<I", 0)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def jpeg_with_size(width: int, height: int) -> bytes:
    """A real JPEG (8 × 8) whose start-of-frame is rewritten to declare `width` × `height`."""
    data = bytearray(encoded(solid((8, 8)), "JPEG"))
    at = data.index(b"\xff\xc0")
    data[at + 5 : at + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def gif_with_size(width: int, height: int) -> bytes:
    """A GIF whose screen and first image both declare `width` × `height`."""
    data = bytearray(encoded(solid((8, 8), mode="P", colour=1), "GIF"))
    data[6:10] = struct.pack("<HH", width, height)
    at = data.index(b",", 13)  # the image descriptor: left, top, width, height
    data[at + 5 : at + 9] = struct.pack("<HH", width, height)
    return bytes(data)


def bmp_with_size(width: int, height: int) -> bytes:
    data = bytearray(encoded(solid((8, 8)), "BMP"))
    data[18:26] = struct.pack("<ii", width, height)
    return bytes(data)


def animated(format: str, colours=(RED, BLUE), size=(16, 16), **options) -> bytes:
    """A two-frame animation in `format` (GIF, PNG for APNG, WEBP), each frame one colour."""
    frames = [solid(size, colour) for colour in colours]
    return encoded(frames[0], format, save_all=True, append_images=frames[1:], duration=100, **options)


def with_orientation(upright: PillowImage.Image, orientation: int, format: str = "JPEG") -> bytes:
    """`upright` stored turned, with the EXIF Orientation tag that tells a viewer to turn it back:
    6 (stored turned a quarter anticlockwise; shown turned clockwise) or 8 (the other way)."""
    stored = upright.transpose({6: PillowImage.Transpose.ROTATE_90, 8: PillowImage.Transpose.ROTATE_270}[orientation])
    exif = PillowImage.Exif()
    exif[0x0112] = orientation
    return encoded(stored, format, exif=exif)
