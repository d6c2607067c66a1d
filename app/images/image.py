"""The image values every room passes around: an `Image` (its checked bytes) and an `ImageRef`
(what a stored message keeps of it), and `ImageError`, the one way any room says an image cannot
be used (a damaged or hostile file, or a model that cannot read images).

An image is known by the SHA-256 of its bytes (`digest`): the store keeps one file per digest,
the engine knows an image already in its KV cache by it, and an export names it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp")  # what an Image's bytes are, after intake


class ImageError(ValueError):
    """An image that cannot be used, or sent to a model that cannot read images; the message says
    which and why, in words a user can act on (a server answers it as a 400)."""


@dataclass(frozen=True)
class ImageRef:
    """What a message keeps of an image: which one (`digest`), and what it is."""

    digest: str  # SHA-256 of the bytes, lowercase hex
    media_type: str  # one of MEDIA_TYPES
    width: int
    height: int


@dataclass(frozen=True)
class Image:
    """An image as intake left it (images/intake.py): PNG, JPEG or WebP bytes of a still image,
    upright, within the size limits. Only intake makes them from outside bytes."""

    data: bytes = field(repr=False)
    media_type: str
    width: int
    height: int
    digest: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", hashlib.sha256(self.data).hexdigest())

    @property
    def ref(self) -> ImageRef:
        return ImageRef(self.digest, self.media_type, self.width, self.height)
