"""Where a message's images go in the prompt: each becomes a placeholder in the rendered text,
which the engine's tokenizer replaces by the image's positions (engine/llama/vision.py).

Why text placeholders, as llama.cpp's server does with its media marker: every chat template
renders a message's content as a string, so an image lands exactly where the template puts the
message, whatever the template; and the rendered prompt stays text, so prefix reuse, context
fitting and saved states treat an image like any other stretch of the prompt. The placeholder
names the image by its digest, so the same image in the same place is the same text turn after
turn, and after a restart (a saved state's segments match it again).

A message's own text (or a tool call's arguments, or any string in it) could spell a
placeholder; it is broken up before rendering (a zero-width space after the opening), so only the
images attached to a message become images. And a template that escapes or drops a message's
text would lose its image silently: the engine checks each is written (check_images_written).

Images go before the message's text, each on a line of its own, as Gemma 3's and most vision
models' examples place them.

No llama_cpp here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..images.image import Image, ImageError

_OPENING = "<__hearth_image:"
_CLOSING = "__>"
_PLACEHOLDER = re.compile(re.escape(_OPENING) + r"([0-9a-f]{64})" + re.escape(_CLOSING))


def placeholder(digest: str) -> str:
    """The text that stands for the image `digest` in a rendered prompt."""
    return f"{_OPENING}{digest}{_CLOSING}"


def with_placeholders(messages: list[dict]) -> tuple[list[dict], dict[str, Image]]:
    """The messages as the template renders them (each image a placeholder before the text,
    no "images" key) and the images by digest. Every string in them that spells a placeholder's
    opening (a message's text, a tool call's arguments, a name) is broken up first."""
    images: dict[str, Image] = {}
    rendered = []
    for message in messages:
        attached = message.get("images") or ()
        changed = {key: _escaped(value) for key, value in message.items() if key != "images"}
        for image in attached:
            images[image.digest] = image
        if attached:
            content = changed.get("content")
            changed["content"] = "".join(placeholder(image.digest) + "\n" for image in attached) + (
                content if isinstance(content, str) else "")
        rendered.append(changed)
    return rendered, images


def check_images_written(messages: list[dict], text: str, images: dict[str, Image], template: str) -> None:
    """ImageError where the rendered `text` lost an image its `messages` (placeholdered) carry: a
    template that escapes, changes or drops a message's text would otherwise send the model a
    prompt without the image, and the user would never know."""
    for digest in images:
        written = placeholder(digest)
        if written not in text and any(written in str(message.get("content")) for message in messages):
            raise ImageError(f"The chat template ({template}) does not write a message's image into the prompt "
                             "as it was given; the model would not see it. Choose another template, or send "
                             "the message without images.")


def _escaped(value):
    """`value` with every string's placeholder opening broken up (a zero-width space after "<_")."""
    if isinstance(value, str):
        return value.replace(_OPENING, _OPENING[:2] + "\u200b" + _OPENING[2:])
    if isinstance(value, dict):
        return {key: _escaped(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_escaped(item) for item in value)
    return value


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
