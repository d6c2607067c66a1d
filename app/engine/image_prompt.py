"""Where a message's images go in the prompt: each becomes a placeholder in the rendered text,
which the engine's tokenizer replaces by the image's positions (engine/llama/vision.py).

Why text placeholders, as llama.cpp's server does with its media marker: every chat template
renders a message's content as a string, so an image lands exactly where the template puts the
message, whatever the template; and the rendered prompt stays text, so prefix reuse, context
fitting and saved states treat an image like any other stretch of the prompt. The placeholder
names the image by its digest, so the same image in the same place is the same text turn after
turn, and after a restart (a saved state's segments match it again).

A message's own text could spell a placeholder; it is broken up before rendering (a zero-width
space after the opening), so only the images attached to a message become images.

Images go before the message's text, each on a line of its own, as Gemma 3's and most vision
models' examples place them.

No llama_cpp here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..images.image import Image

_OPENING = "<__hearth_image:"
_CLOSING = "__>"
_PLACEHOLDER = re.compile(re.escape(_OPENING) + r"([0-9a-f]{64})" + re.escape(_CLOSING))


def placeholder(digest: str) -> str:
    """The text that stands for the image `digest` in a rendered prompt."""
    return f"{_OPENING}{digest}{_CLOSING}"


def with_placeholders(messages: list[dict]) -> tuple[list[dict], dict[str, Image]]:
    """The messages as the template renders them (each image a placeholder before the text,
    no "images" key) and the images by digest. Messages without images come back as they are,
    unless their text spells a placeholder."""
    images: dict[str, Image] = {}
    rendered = []
    for message in messages:
        content = message.get("content")
        attached = message.get("images") or ()
        if not attached and not (isinstance(content, str) and _OPENING in content):
            rendered.append(message)
            continue
        text = content.replace(_OPENING, _OPENING[:2] + "\u200b" + _OPENING[2:]) if isinstance(content, str) else content
        for image in attached:
            images[image.digest] = image
        lines = "".join(placeholder(image.digest) + "\n" for image in attached)
        changed = {key: value for key, value in message.items() if key != "images"}
        changed["content"] = lines + (text or "")
        rendered.append(changed)
    return rendered, images


def image_count(messages: list[dict]) -> int:
    return sum(len(message.get("images") or ()) for message in messages)


def pieces(text: str, images: dict[str, Image]) -> Iterator[str | Image]:
    """The rendered prompt in order: runs of text, and the images its placeholders stand for
    (a placeholder of an image not in `images` stays text)."""
    position = 0
    for match in _PLACEHOLDER.finditer(text):
        image = images.get(match.group(1))
        if image is None:
            continue
        if match.start() > position:
            yield text[position:match.start()]
        yield image
        position = match.end()
    if position < len(text):
        yield text[position:]
