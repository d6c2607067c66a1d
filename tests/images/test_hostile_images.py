"""Images that are damaged, lie about what they are or try to exhaust the reader: each is an
ImageError naming the file and saying what to do, refused before its pixels are allocated
where its header already says too much, and nothing else ever escapes (no other exception, no
hang, no crash)."""

from __future__ import annotations

import base64
import os
import random
import stat
import tracemalloc
from pathlib import Path

import pytest
from image_samples import (
    animated,
    bmp_with_size,
    encoded,
    gif_with_size,
    jpeg_with_size,
    png_bomb,
    png_by_hand,
    png_chunk,
    quadrants,
    webp_canvas_header,
    with_orientation,
)
from PIL import Image as PillowImage

from app.images import limits
from app.images.image import Image, ImageError
from app.images.intake import read_data_url, read_image, read_image_file
from app.images.pixels import rgb_pixels


def refused(data: bytes, *words: str, name: str = "x.png") -> str:
    with pytest.raises(ImageError) as caught:
        read_image(data, name)
    message = str(caught.value)
    for word in words:
        assert word in message, message
    return message


def pillow_images_made() -> int:
    """How many images Pillow's core has allocated in this process (its own counter)."""
    return PillowImage.core.get_stats()["new_count"]


def test_a_decompression_bomb_is_refused_from_its_header():
    bomb = png_bomb(50_000, 50_000)
    assert len(bomb) < 4096  # a few KB that would be 7.5 GB decoded
    made = pillow_images_made()
    tracemalloc.start()
    try:
        message = refused(bomb, "“bomb.png” is 50,000 × 50,000 pixels", "40 megapixels", "Make it smaller",
                          name="bomb.png")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak  # the decoded image would be 7,500,000,000 bytes
    assert pillow_images_made() == made, "no pixels were allocated"
    assert "damaged" not in message


@pytest.mark.parametrize("make, size", [
    (png_bomb, (8000, 5001)),  # just over MAX_PIXELS (8000 × 5000 is exactly it)
    (webp_canvas_header, (16384, 16384)),  # libwebp would allocate its 1 GiB canvas on opening
    (gif_with_size, (65535, 65535)),
    (bmp_with_size, (30000, 30000)),
    (jpeg_with_size, (65535, 65535)),  # at 1/8 still 67 MP
])
def test_too_many_pixels_declared(make, size):
    data = make(*size)
    made = pillow_images_made()
    refused(data, f"“x.png” is {size[0]:,} × {size[1]:,} pixels, more than the 40 megapixels")
    assert pillow_images_made() == made


@pytest.mark.parametrize("data", [
    png_by_hand(0, 10), png_by_hand(10, 0), gif_with_size(0, 8), bmp_with_size(8, 0), jpeg_with_size(0, 8),
], ids=["png-width", "png-height", "gif", "bmp", "jpeg"])
def test_an_image_without_pixels(data):
    refused(data, "has no pixels", "Attach another image")


def test_text_named_png():
    message = refused(b"Dear diary,\ntoday I renamed a text file.\n", name="notes.png")
    assert message == "“notes.png” is text, not an image. Attach a PNG, JPEG, WebP, GIF or BMP image."


@pytest.mark.parametrize("data, words", [
    (b"", ["is empty"]),
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", ["is a PDF document, not an image"]),
    (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00", ["is a HEIC image, which Hearth does not read", "Convert it"]),
    (b"II*\x00\x08\x00\x00\x00", ["is a TIFF image"]),
    (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>', ["is an SVG drawing"]),
    (os.urandom(2000), ["is not an image Hearth can read"]),
])
def test_other_things_are_named(data, words):
    refused(data, *words)


def test_the_name_is_shown_as_it_is_and_printable():
    """The message names the file without escaping it (whoever shows it escapes), but with its
    control characters shown as "�" so it stays one line."""
    message = refused(b"plain", name="<b>a\nb</b>.png")
    assert message.startswith("“<b>a\ufffdb</b>.png” is text")
    assert refused(b"plain", name="").startswith("The image is text")


def _cuts(data: bytes) -> list[bytes]:
    points = sorted({*range(0, len(data), max(1, len(data) // 60)), len(data) - 1, len(data) - 2})
    return [data[:point] for point in points]


SAMPLES = {
    "png": encoded(quadrants(40, 30), "PNG"),
    "jpeg": encoded(quadrants(40, 30), "JPEG"),
    "progressive-jpeg": encoded(quadrants(40, 30), "JPEG", progressive=True),
    "webp": encoded(quadrants(40, 30), "WEBP"),
    "gif": encoded(quadrants(40, 30).convert("P"), "GIF"),
    "bmp": encoded(quadrants(40, 30), "BMP"),
    "apng": animated("PNG"),
    "animated-webp": animated("WEBP"),
    "rotated-jpeg": with_orientation(quadrants(40, 30), 6),
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_truncated_and_corrupted_files_give_an_image_error_or_an_image(kind):
    """Every cut of the file, and bytes flipped at random (seeded): either an ImageError saying
    "damaged" (or, for a cut the decoder did not need, a whole image, which then reads as
    pixels), never another exception."""
    whole = SAMPLES[kind]
    rng = random.Random(kind)
    flipped = []
    for _ in range(60):
        data = bytearray(whole)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        flipped.append(bytes(data))
    refusals = 0
    for data in _cuts(whole) + flipped:
        try:
            image = read_image(data, "cut")
        except ImageError as error:
            assert str(error).startswith("“cut” "), error
            refusals += 1
        else:
            width, height, rgb = rgb_pixels(image)
            assert len(rgb) == width * height * 3
    assert refusals > 30


def test_a_truncated_png_is_damaged():
    whole = encoded(quadrants(40, 30), "PNG")
    refused(whole[: len(whole) // 2], "“x.png” is a damaged or incomplete PNG file", "Attach a complete copy")


def test_a_png_cut_after_its_pixels_is_re_encoded_not_kept():
    """Pillow reads every pixel of a PNG that lost only its end; other readers (stb_image)
    refuse it, so its bytes are not kept as they are."""
    whole = encoded(quadrants(40, 30), "PNG")
    cut = whole[:-6]
    image = read_image(cut)
    assert image.data != cut and image.data.endswith(whole[-12:])
    assert rgb_pixels(image) == rgb_pixels(read_image(whole))


def test_a_truncated_jpeg_is_damaged():
    whole = encoded(quadrants(64, 64), "JPEG")
    refused(whole[: len(whole) * 2 // 3], "is a damaged or incomplete JPEG file", name="x.jpg")


def test_a_jpeg_of_too_many_scans_is_refused_before_decoding():
    """Each scan of a progressive JPEG is a pass over all its blocks: its last scan repeated
    makes a CPU bomb (2,000 of them cost a 4 MP JPEG 13 s here), refused by counting them."""
    whole = encoded(quadrants(64, 64), "JPEG", progressive=True)
    last, end = whole.rindex(b"\xff\xda"), len(whole) - 2
    repeated = whole[:end] + whole[last:end] * limits.MAX_JPEG_SCANS + whole[end:]
    made = pillow_images_made()
    refused(repeated, "is a JPEG of 1", "scans, more than the 100 Hearth decodes", name="x.jpg")
    assert pillow_images_made() == made


def test_a_flood_of_empty_chunks_or_segments_is_refused_before_decoding():
    """Pillow walks a PNG's chunks and a JPEG's segments one by one in Python: 50 MB of empty
    ones would keep it busy for half a minute, so more than MAX_PARTS are refused, counted first."""
    png = encoded(quadrants(8, 8), "PNG")
    flooded_png = png[:33] + png_chunk(b"zzZz", b"") * limits.MAX_PARTS + png[33:]
    jpeg = encoded(quadrants(8, 8), "JPEG")
    flooded_jpeg = jpeg[:2] + b"\xff\xfe\x00\x02" * limits.MAX_PARTS + jpeg[2:]  # empty comments
    made = pillow_images_made()
    refused(flooded_png, "is a PNG file of more than 100,000 chunks", "Save it again")
    refused(flooded_jpeg, "is a JPEG file of more than 100,000 segments", "Save it again")
    assert pillow_images_made() == made
    fewer = png[:33] + png_chunk(b"zzZz", b"") * 1000 + png[33:]
    assert read_image(fewer).data == fewer


def test_a_gif_whose_first_image_overhangs_its_screen():
    """Pillow grows a GIF to hold its first image (allocating that much on opening): the size
    counted is the grown one, read from the image descriptor before Pillow opens the file."""
    data = bytearray(encoded(quadrants(8, 8).convert("P", palette=PillowImage.Palette.ADAPTIVE), "GIF"))
    at = data.index(b",", 13)  # the image descriptor: left, top, width, height
    data[at + 5 : at + 9] = (10_000).to_bytes(2, "little") * 2
    made = pillow_images_made()
    refused(bytes(data), "is 10,000 × 10,000 pixels")
    assert pillow_images_made() == made
    data[at + 1 : at + 9] = (2).to_bytes(2, "little") * 2 + (8).to_bytes(2, "little") * 2  # at (2, 2)
    image = read_image(bytes(data))
    assert (image.width, image.height) == (10, 10)  # grown as Pillow grows it, and counted so


def test_a_gif_of_endless_comment_blocks():
    gif = encoded(quadrants(8, 8).convert("P"), "GIF")
    at = gif.index(b",", 13)
    comment = b"\x21\xfe" + b"\x01c" * (limits.MAX_PARTS + 1) + b"\x00"
    refused(gif[:at] + comment + gif[at:], "is a GIF file of more than 100,000 blocks")
    short = gif[:at] + b"\x21\xfe" + b"\x01c" * 1000 + b"\x00" + gif[at:]
    assert read_image(short).width == 8


def test_scan_markers_outside_the_scans_are_not_counted():
    """FF DA inside a segment (a comment, an EXIF thumbnail) or after the end of the image (where
    some phones append their own data) is not a scan of the image."""
    whole = encoded(quadrants(64, 64), "JPEG", progressive=True)
    comment = b"\xff\xda" * 300
    commented = whole[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + whole[2:]
    for data in (commented, whole + comment):
        assert read_image(data, "phone.jpg").data == whole  # read whole; the comment and the tail dropped (metadata.py)


def test_the_byte_limit_exactly(tmp_path: Path):
    """A PNG padded with a private chunk to exactly MAX_IMAGE_BYTES is read; one byte more is
    refused, as bytes, as a file and as a data: URL."""
    small = encoded(quadrants(8, 8), "PNG")
    padding = limits.MAX_IMAGE_BYTES - len(small) - 12
    at = small[:-12] + png_chunk(b"pdNg", bytes(padding)) + small[-12:]
    assert len(at) == limits.MAX_IMAGE_BYTES
    assert read_image(at).data == at
    assert read_data_url("data:image/png;base64," + base64.b64encode(at).decode()).data == at
    over = at + b"\x00"
    refused(over, "is 50 MB, more than the 50 MB Hearth reads from one image")
    path = tmp_path / "over.png"
    path.write_bytes(over)
    with pytest.raises(ImageError, match="“over.png” is 50 MB, more than the 50 MB"):
        read_image_file(path)
    with pytest.raises(ImageError, match="is about 50 MB, more than the 50 MB"):
        read_data_url("data:image/png;base64," + base64.b64encode(over).decode())


def test_a_huge_sparse_file_is_refused_by_its_size(tmp_path: Path):
    """10 GB on disk (sparse: it takes no space): refused from its size, before reading; the
    message's "10.0 GB" comes from the file's size on disk, which only fstat knows (a read
    stops at the limit)."""
    path = tmp_path / "huge.png"
    with path.open("wb") as file:
        file.write(png_bomb())
        file.truncate(10 * 1000**3)
    with pytest.raises(ImageError, match="“huge.png” is 10.0 GB, more than the 50 MB"):
        read_image_file(path)


def test_files_that_cannot_be_read(tmp_path: Path):
    with pytest.raises(ImageError, match="“gone.png” was not found"):
        read_image_file(tmp_path / "gone.png")
    (tmp_path / "album").mkdir()
    with pytest.raises(ImageError, match="“album” is a folder, not an image"):
        read_image_file(tmp_path / "album")
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    with pytest.raises(ImageError, match="“pipe.png” is not a regular file"):
        read_image_file(fifo)  # opened without blocking, then refused
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    with pytest.raises(ImageError, match="“empty.png” is empty"):
        read_image_file(empty)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its permissions")
def test_a_file_without_permission(tmp_path: Path):
    path = tmp_path / "secret.png"
    path.write_bytes(encoded(quadrants(8, 8), "PNG"))
    path.chmod(0)
    try:
        with pytest.raises(ImageError, match="“secret.png” cannot be read: permission denied"):
            read_image_file(path)
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


PNG_B64 = base64.b64encode(encoded(quadrants(8, 8), "PNG")).decode()


@pytest.mark.parametrize("url, words", [
    ("https://example.com/cat.png", ["is not a data: URL"]),
    ("data:text/plain;base64," + base64.b64encode(b"hello").decode(), ["holds text/plain, not an image"]),
    ("data:image/heic;base64," + PNG_B64, ["holds image/heic, an image format Hearth does not read"]),
    ("data:;base64," + PNG_B64, ["names no media type"]),
    ("data:base64," + PNG_B64, ["holds base64, not an image"]),
    ("data:image/png," + PNG_B64, ["is not base64-encoded"]),
    ("data:image/png;base64,iVBOR%%%w0KGgo=", ["has damaged base64"]),
    ("data:image/png;base64,iVBORw0KGgoAAAA", ["has damaged base64"]),  # not a multiple of 4
    ("data:image/png;base64", ["no comma ends its header"]),
    ("data:image/png;base64," + base64.b64encode(b"just some text").decode(), ["is text, not an image"]),
    ("data:image/png;base64," + "A" * (limits.MAX_IMAGE_BYTES * 4 // 3 + 8), ["is about 50 MB, more than"]),
])
def test_bad_data_urls(url, words):
    with pytest.raises(ImageError) as caught:
        read_data_url(url, "part 1")
    for word in words:
        assert word in str(caught.value), caught.value
    assert str(caught.value).startswith("“part 1”")


def test_pixels_decode_again_under_the_limits():
    """The engine's process gets Images over a socket: their bytes are decoded again under the
    same limits, and must be what the Image says."""
    bomb = png_bomb()
    made = pillow_images_made()
    with pytest.raises(ImageError, match="50,000 × 50,000 pixels"):
        rgb_pixels(Image(bomb, "image/png", 50_000, 50_000))
    assert pillow_images_made() == made
    gif = encoded(quadrants(8, 8).convert("P"), "GIF")
    with pytest.raises(ImageError, match="is a GIF image, not one of PNG, JPEG, WebP"):
        rgb_pixels(Image(gif, "image/png", 8, 8))
    png = encoded(quadrants(8, 8), "PNG")
    with pytest.raises(ImageError, match="are 8 × 8 pixels where it says 16 × 8"):
        rgb_pixels(Image(png, "image/png", 16, 8))
    with pytest.raises(ImageError, match="is text, not an image"):
        rgb_pixels(Image(b"hello", "image/png", 1, 1))
