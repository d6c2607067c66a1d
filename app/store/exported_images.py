"""A conversation's images in its JSON export (format version 5, exchange.py): each image once,
in a table at the top ("images": [{"digest", "media_type", "width", "height", "data"}], data in
base64), and each user message naming its images in order by digest ("images": [digest, ...]).

An import trusts nothing in that table: each entry's data is read as strict base64, must be the
image it says it is (its digest the SHA-256 of its bytes, its type and size its own) and goes
through intake (app.images.intake.read_image) like an image a user attaches: a bomb, a damaged
or animated file is refused there. Intake must take it as it is: what Hearth stores is what
intake made, so an image it would change was not written by Hearth.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable

from app.images.image import Image, ImageError
from app.images.intake import read_image
from app.images.limits import MAX_IMAGE_BYTES, MAX_IMAGES_PER_MESSAGE
from app.store.image_links import named
from app.store.records import StoreError, shorten

MAX_IMPORT_IMAGES = 1_000  # different images in one export: far above what a conversation is sent
_MAX_BASE64_CHARS = 4 * -(-MAX_IMAGE_BYTES // 3)  # the base64 of the largest image intake takes


def table(images: Iterable[Image]) -> list[dict]:
    """The export's table of images, in the order given (each once)."""
    return [{"digest": image.digest, "media_type": image.media_type, "width": image.width, "height": image.height,
             "data": base64.b64encode(image.data).decode("ascii")} for image in images]


def read_table(entries: object) -> dict[str, Image]:
    """The export's images by digest, each checked (StoreError says which and why)."""
    if not isinstance(entries, list):
        raise StoreError("The export's images has the wrong type (it must be a list).")
    if len(entries) > MAX_IMPORT_IMAGES:
        raise StoreError(f"The export holds {len(entries):,} images; Hearth imports conversations of up to "
                         f"{MAX_IMPORT_IMAGES:,} images.")
    images: dict[str, Image] = {}
    for index, entry in enumerate(entries):
        image = _image(entry, f"images[{index}]")
        if image.digest in images:
            raise StoreError(f"images[{index}] is in the export twice (as images[{list(images).index(image.digest)}]).")
        images[image.digest] = image
    return images


def _image(entry: object, where: str) -> Image:
    if not isinstance(entry, dict):
        raise StoreError(f"{where} must be an object.")
    declared = {name: entry.get(name) for name in ("digest", "media_type", "width", "height", "data")}
    for name, kind in (("digest", str), ("media_type", str), ("width", int), ("height", int), ("data", str)):
        if name not in entry:
            raise StoreError(f"{where} is missing \"{name}\".")
        if not isinstance(declared[name], kind) or isinstance(declared[name], bool):
            raise StoreError(f"{where}.{name} has the wrong type ({type(declared[name]).__name__}).")
    if len(declared["data"]) > _MAX_BASE64_CHARS:
        raise StoreError(f"{where} is larger than the {MAX_IMAGE_BYTES // 2**20} MB an image may be.")
    try:
        data = base64.b64decode(declared["data"], validate=True)
    except (binascii.Error, ValueError):
        raise StoreError(f"{where}.data is not base64.") from None
    if hashlib.sha256(data).hexdigest() != declared["digest"]:
        raise StoreError(f"{where}.digest {shorten(repr(declared['digest']))} is not the SHA-256 of its data: "
                         "the image was changed or damaged.")
    try:
        image = read_image(data, where)
    except ImageError as exc:
        raise StoreError(f"{where} cannot be imported: {exc}") from None
    if image.digest != declared["digest"]:
        raise StoreError(f"{where} is not an image as Hearth stores it (it would have to be converted).")
    if (image.media_type, image.width, image.height) != (declared["media_type"], declared["width"], declared["height"]):
        raise StoreError(f"{where} says it is {declared['width']} × {declared['height']} "
                         f"{shorten(declared['media_type'])}, but it is {named(image.ref)}.")
    return image


def message_images(item: dict, where: str, role: str, images: dict[str, Image]) -> tuple[str, ...]:
    """The digests a message names, each in the export's table; only a user message has images."""
    digests = item.get("images", [])
    if not isinstance(digests, list):
        raise StoreError(f"{where}.images has the wrong type ({type(digests).__name__}).")
    if digests and role != "user":
        raise StoreError(f"{where} has images, which only a user message holds.")
    if len(digests) > MAX_IMAGES_PER_MESSAGE:
        raise StoreError(f"{where} has {len(digests):,} images; a message holds up to {MAX_IMAGES_PER_MESSAGE}.")
    for index, digest in enumerate(digests):
        if not isinstance(digest, str) or digest not in images:
            raise StoreError(f"{where}.images[{index}] names an image that is not in the export's images "
                             f"({shorten(repr(digest))}).")
    return tuple(digests)
