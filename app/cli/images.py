"""`hearth chat --image FILE` (repeatable): the images sent with the message, read and checked
before any model loads, so that a file that is not an image, one too many, or a model that
cannot read images is a usage error (exit status 2) that says why, never a load for nothing.

A local model reads images through its projector (the one --mmproj names, else the one found
beside the model: library/projectors.with_projector); a server's model is sent them, and whether it
reads them is its server's to say (its refusal is shown as any other).
"""

from __future__ import annotations

from pathlib import Path

from ..common.text import printable
from ..images.image import Image, ImageError
from ..images.intake import check_count, read_image_file
from .args import UsageError


def read_images(paths: list[Path]) -> tuple[Image, ...]:
    """The --image files as Images, in the order given."""
    try:
        check_count(len(paths))
    except ImageError as exc:
        raise UsageError(f"--image: {exc}") from None
    images = []
    for path in paths:
        try:
            images.append(read_image_file(path))
        except ImageError as exc:
            raise UsageError(f"--image {printable(str(path), limit=200)}: {exc}") from None
    return tuple(images)


def check_projector(images: tuple[Image, ...], model_name: str, projector: str | None) -> None:
    """Refuse images for a local model loaded without a projector, which cannot read them."""
    if images and projector is None:
        raise UsageError(f"{printable(model_name)} cannot read images: no projector (mmproj) was given with --mmproj "
                         "or found beside the model file. Give --mmproj FILE (the model's mmproj-*.gguf), or send "
                         "the message without --image")


def with_images(message: dict, images: tuple[Image, ...]) -> dict:
    """A user's message with its images, as the engine takes them (none: as it is)."""
    return {**message, "images": images} if images else message
