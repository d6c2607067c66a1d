"""Intake on the images people attach: what is kept byte for byte, what is re-encoded and how,
and that what comes out is what a person sees (the first frame, upright, in plain colours).
The hostile ones are in test_hostile_images.py."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from image_samples import (
    BLUE,
    GREEN,
    RED,
    YELLOW,
    animated,
    corners,
    encoded,
    near,
    png_grey_at,
    png_rgb16,
    quadrants,
    solid,
    with_orientation,
)
from PIL import Image as PillowImage

from app.images import limits
from app.images.image import Image, ImageError
from app.images.intake import check_count, read_data_url, read_image, read_image_file
from app.images.pixels import rgb_pixels


def opened(image: Image) -> PillowImage.Image:
    """The Image's bytes as any reader opens them, checked against what the Image says."""
    picture = PillowImage.open(io.BytesIO(image.data))
    assert PillowImage.MIME[picture.format] == image.media_type
    assert picture.size == (image.width, image.height)
    assert getattr(picture, "n_frames", 1) == 1
    return picture


@pytest.mark.parametrize("format, options", [("PNG", {}), ("JPEG", {"quality": 80}), ("WEBP", {"quality": 80}),
                                             ("WEBP", {"lossless": True}), ("PNG", {"mode": "L"}),
                                             ("PNG", {"mode": "RGBA"})])
def test_a_clean_image_is_kept_byte_for_byte(format, options):
    mode = options.pop("mode", "RGB")
    data = encoded(quadrants(64, 48).convert(mode), format, **options)
    image = read_image(data, "clean")
    assert image.data == data  # no re-encoding, no second generation of loss
    assert (image.width, image.height) == (64, 48)
    assert image.media_type == {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}[format]
    assert image.digest == Image(data, image.media_type, 64, 48).digest


def test_the_format_comes_from_the_bytes_not_the_name(tmp_path):
    png = encoded(quadrants(20, 10), "PNG")
    (tmp_path / "photo.jpg").write_bytes(png)
    image = read_image_file(tmp_path / "photo.jpg")
    assert image.media_type == "image/png" and image.data == png
    jpeg = encoded(quadrants(20, 10), "JPEG")
    (tmp_path / "screenshot.png").write_bytes(jpeg)
    assert read_image_file(tmp_path / "screenshot.png").media_type == "image/jpeg"
    (tmp_path / "no suffix").write_bytes(png)
    assert read_image_file(tmp_path / "no suffix").data == png


@pytest.mark.parametrize("format, options, media_type", [
    ("GIF", {}, "image/png"),
    ("PNG", {}, "image/png"),  # APNG
    ("WEBP", {"lossless": True}, "image/png"),
    ("WEBP", {"quality": 90}, "image/jpeg"),  # its frames are lossy: a photo
])
def test_an_animation_gives_its_first_frame(format, options, media_type):
    data = animated(format, colours=(RED, BLUE), **options)
    assert PillowImage.open(io.BytesIO(data)).n_frames == 2
    image = read_image(data, f"moving.{format.lower()}")
    picture = opened(image)  # one frame
    assert image.media_type == media_type
    assert near(picture.convert("RGB").getpixel((8, 8)), RED, tolerance=8)
    assert rgb_pixels(image)[2][:3] == bytes(picture.convert("RGB").getpixel((0, 0)))


def test_a_still_gif_and_a_bmp_become_pngs():
    gif = encoded(quadrants(32, 32).convert("P", palette=PillowImage.Palette.ADAPTIVE), "GIF")
    for data in (gif, encoded(quadrants(32, 32), "BMP")):
        image = read_image(data)
        assert image.media_type == "image/png"
        assert [near(c, e, 2) for c, e in zip(corners(opened(image)), (RED, GREEN, BLUE, YELLOW))] == [True] * 4


def test_a_top_down_bmp_is_upright():
    """A BMP's rows are stored bottom up unless its height is negative; both must read upright."""
    data = bytearray(encoded(quadrants(32, 32), "BMP"))
    data[22:26] = (-32).to_bytes(4, "little", signed=True)  # now the rows read top down: upside down
    assert corners(opened(read_image(bytes(data))))[0] == BLUE


@pytest.mark.parametrize("orientation", [6, 8])
def test_exif_orientation_is_applied(orientation):
    upright = quadrants(40, 80)  # portrait, as the camera was held
    data = with_orientation(upright, orientation)
    stored = PillowImage.open(io.BytesIO(data))
    assert stored.size == (80, 40)  # landscape on disk
    image = read_image(data, "phone.jpg")
    picture = opened(image)
    assert image.media_type == "image/jpeg"  # a photo stays a photo
    assert picture.size == (40, 80)
    assert [near(c, e) for c, e in zip(corners(picture), (RED, GREEN, BLUE, YELLOW))] == [True] * 4
    assert picture.getexif().get(0x0112) is None  # a re-encoded image carries no EXIF at all
    width, height, rgb = rgb_pixels(image)
    assert (width, height) == (40, 80) and near(rgb[:3], RED)


def test_exif_orientation_in_a_png():
    image = read_image(with_orientation(quadrants(40, 80), 6, format="PNG"))
    assert image.media_type == "image/png"
    assert corners(opened(image)) == [RED, GREEN, BLUE, YELLOW]  # lossless all the way


def test_a_cmyk_jpeg_becomes_rgb():
    cyan = encoded(solid((32, 32), (255, 0, 0, 0), mode="CMYK"), "JPEG")
    assert PillowImage.open(io.BytesIO(cyan)).mode == "CMYK"
    image = read_image(cyan, "print.jpg")
    picture = opened(image)
    assert image.media_type == "image/jpeg" and picture.mode == "RGB"
    assert near(picture.getpixel((16, 16)), (0, 255, 255), tolerance=8)


def test_16_bit_pngs_are_scaled_to_8_bits_not_clipped():
    grey = PillowImage.new("I;16", (3, 1))
    for x, value in enumerate((0, 0x8000, 0xFFFF)):
        grey.putpixel((x, 0), value)
    image = read_image(encoded(grey, "PNG"), "scan.png")
    assert image.data[24] == 8  # bit depth in IHDR
    assert list(opened(image).get_flattened_data()) == [0, 128, 255]  # Pillow's own conversion: 0, 255, 255

    rgb16 = png_rgb16([[(0xFFFF, 0x8000, 0), (0x1000, 0x2000, 0x3000)]])
    image = read_image(rgb16)
    assert image.data != rgb16 and image.data[24] == 8
    assert list(opened(image).get_flattened_data()) == [(255, 128, 0), (16, 32, 48)]


def test_a_palette_with_transparency_becomes_rgba_and_shows_over_white():
    picture = PillowImage.new("P", (4, 1))
    picture.putpalette([0, 0, 0, 200, 30, 30])  # 0: black (transparent), 1: red
    picture.putpixel((0, 0), 0)
    picture.putpixel((1, 0), 1)
    image = read_image(encoded(picture, "PNG", transparency=0))
    result = opened(image)
    assert result.mode == "RGBA"
    assert result.getpixel((0, 0))[3] == 0 and result.getpixel((1, 0)) == (200, 30, 30, 255)
    assert rgb_pixels(image)[2][:6] == bytes([255, 255, 255, 200, 30, 30])  # not black: over white


def test_grey_with_alpha_becomes_rgba():
    image = read_image(encoded(solid((4, 4), (90, 128), mode="LA"), "PNG"))
    assert opened(image).getpixel((0, 0)) == (90, 90, 90, 128)


def test_the_longest_side_is_kept_at_most():
    side = limits.MAX_SIDE
    at = encoded(quadrants(side, 64), "PNG")
    assert read_image(at).data == at  # exactly at the limit: kept
    over = read_image(encoded(quadrants(side + 1, 64), "PNG"))
    assert (over.width, over.height) == (side, 64) and over.media_type == "image/png"
    tall = read_image(encoded(quadrants(600, 3 * side), "JPEG"))
    assert (tall.width, tall.height) == (200, side) and tall.media_type == "image/jpeg"
    assert [near(c, e) for c, e in zip(corners(opened(tall)), (RED, GREEN, BLUE, YELLOW))] == [True] * 4


def test_a_jpeg_larger_than_the_pixel_limit_decodes_scaled():
    """8,000 × 6,000 (48 MP, over MAX_PIXELS): libjpeg decodes it at half size (12 MP), which
    is within the limit, then it is downscaled to MAX_SIDE."""
    width, height = 8000, 6000
    assert width * height > limits.MAX_PIXELS
    image = read_image(encoded(solid((width, height), 140, mode="L"), "JPEG"), "big.jpg")
    assert (image.width, image.height) == (limits.MAX_SIDE, limits.MAX_SIDE * 3 // 4)
    assert abs(opened(image).getpixel((100, 100)) - 140) <= 3


def test_exactly_the_pixel_limit_decodes():
    width = 8000
    height = limits.MAX_PIXELS // width
    assert width * height == limits.MAX_PIXELS
    image = read_image(png_grey_at(width, height), "at.png")
    assert (image.width, image.height) == (limits.MAX_SIDE, round(height * limits.MAX_SIDE / width))


def test_a_photo_with_alpha_is_a_png():
    """Lossy WebP with transparency: JPEG has no alpha channel, so its re-encoded copy is a PNG."""
    picture = solid((3000, 10), (10, 20, 30, 128), mode="RGBA")
    image = read_image(encoded(picture, "WEBP", quality=80))
    assert image.media_type == "image/png" and opened(image).mode == "RGBA"
    photo = read_image(encoded(solid((3000, 10)), "WEBP", quality=80))
    assert photo.media_type == "image/jpeg"


def test_data_urls():
    import base64

    png = encoded(quadrants(20, 10), "PNG")
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    assert read_data_url(url).data == png
    assert read_data_url(url.replace("image/png", "IMAGE/JPEG")).data == png  # the bytes decide
    wrapped = "data:image/png;base64," + base64.encodebytes(png).decode()  # MIME's 76 columns
    assert "\n" in wrapped and read_data_url(wrapped).data == png
    gif = "data:image/gif;name=a.gif;base64," + base64.b64encode(encoded(quadrants(8, 8).convert("P"), "GIF")).decode()
    assert read_data_url(gif).media_type == "image/png"


def test_the_count_per_message():
    check_count(0)
    check_count(limits.MAX_IMAGES_PER_MESSAGE)
    with pytest.raises(ImageError, match=f"100 images are attached; one message takes at most "
                                         f"{limits.MAX_IMAGES_PER_MESSAGE}"):
        check_count(100)


def test_a_file_read(tmp_path: Path):
    path = tmp_path / "ok.webp"
    data = encoded(quadrants(30, 20), "WEBP", lossless=True)
    path.write_bytes(data)
    assert read_image_file(path) == read_image(data)
