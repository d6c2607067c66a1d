"""A kept image loses its metadata and nothing else (images/metadata.py): a phone photo's EXIF,
with the place it was taken, never reaches the store, an export or a remote server, and every
byte that draws the picture is the file's own."""

from __future__ import annotations

import io

from image_samples import encoded, quadrants
from PIL import Image as PillowImage
from PIL.PngImagePlugin import PngInfo

from app.images.intake import read_image

GPS_IFD = 0x8825


def with_gps(format: str) -> bytes:
    """A real EXIF block with a GPS position (52°N 4°E) and a camera's name, written by Pillow."""
    picture = quadrants(48, 32)
    exif = PillowImage.Exif()
    exif[0x010F] = "Phone Maker"  # Make
    exif[0x0112] = 1  # upright: the image is kept, not re-encoded
    exif.get_ifd(GPS_IFD).update({1: "N", 2: (52.0, 22.0, 1.0), 3: "E", 4: (4.0, 53.0, 2.0)})
    return encoded(picture, format, exif=exif.tobytes())


def pixels(data: bytes) -> bytes:
    return PillowImage.open(io.BytesIO(data)).convert("RGB").tobytes()


def test_a_photos_exif_and_its_position_are_dropped_and_its_picture_kept_byte_for_byte():
    photo = with_gps("JPEG") + b"MOTION-PHOTO-VIDEO" * 100  # what some phones append after the image
    assert b"Exif" in photo and b"Phone Maker" in photo
    kept = read_image(photo, "IMG_0001.jpg")
    assert kept.media_type == "image/jpeg"
    assert b"Exif" not in kept.data and b"Phone Maker" not in kept.data and b"MOTION" not in kept.data
    scans = photo.index(b"\xff\xda")
    assert kept.data.endswith(photo[scans:photo.index(b"\xff\xd9", scans) + 2])  # the scans, untouched
    assert pixels(kept.data) == pixels(photo)


def test_a_pngs_text_and_exif_chunks_are_dropped_and_its_pixels_kept():
    picture = quadrants(20, 10)
    text = PngInfo()
    text.add_text("Location", "52.37N 4.89E")
    exif = PillowImage.Exif()
    exif[0x010F] = "Phone Maker"
    marked = encoded(picture, "PNG", pnginfo=text, exif=exif.tobytes()) + b"trailing"
    assert b"tEXt" in marked and b"eXIf" in marked
    kept = read_image(marked, "shot.png")
    assert not any(code in kept.data for code in (b"tEXt", b"eXIf", b"Phone Maker", b"trailing"))
    assert kept.data == encoded(picture, "PNG")  # every other chunk as it was, in its order
    assert pixels(kept.data) == pixels(marked)


def test_a_webp_with_exif_is_made_again_without_it():
    photo = with_gps("WEBP")
    assert b"EXIF" in photo
    kept = read_image(photo, "photo.webp")
    assert b"EXIF" not in kept.data and b"Phone Maker" not in kept.data
    assert (kept.width, kept.height) == (48, 32)


def test_an_image_without_metadata_is_kept_exactly():
    for format in ("JPEG", "PNG", "WEBP"):
        clean = encoded(quadrants(16, 16), format)
        assert read_image(clean, f"clean.{format.lower()}").data == clean
