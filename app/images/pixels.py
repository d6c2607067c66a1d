"""An Image as the engine reads it: width, height and packed RGB8 bytes, what llama.cpp's
mtmd_bitmap_init(nx, ny, data) takes. Decoded again, under the same limits as intake, by the
same decoder (decode.py): the engine's process reads images that arrived over a socket, so their
bytes are checked again rather than trusted (defence in depth), and never handed to mtmd's own
stb_image, which has no limits.

Transparency is laid over white, as most viewers show it: dropping the alpha channel (what
stb_image does with 3 channels) would show whatever colour the hidden pixels happen to hold,
often black, so a black logo on a transparent background would vanish."""

from __future__ import annotations

from PIL import Image as PillowImage

from app.images.decode import STORED, decode
from app.images.image import Image, ImageError

_BACKGROUND = (255, 255, 255)


def rgb_pixels(image: Image) -> tuple[int, int, bytes]:
    """(width, height, RGB bytes, 3 a pixel, rows top to bottom) of `image`. Raises ImageError
    when its bytes are not a PNG, JPEG or WebP within the limits, or not the size it says."""
    picture = decode(image.data, formats=tuple(STORED)).picture
    if picture.size != (image.width, image.height):
        raise ImageError(f"The image's bytes are {picture.width} × {picture.height} pixels where it says "
                         f"{image.width} × {image.height}; attach it again.")
    if picture.mode == "RGBA":
        flat = PillowImage.new("RGB", picture.size, _BACKGROUND)
        flat.paste(picture, mask=picture.getchannel("A"))
        picture = flat
    elif picture.mode != "RGB":
        picture = picture.convert("RGB")
    return picture.width, picture.height, picture.tobytes()
