"""The image parts of a request's messages, read while its body is parsed: where each image is
(`ImageSource`: its URL and the field it came in), checked for shape, number and scheme.

Only the address is kept at this stage: whether the served model reads images at all is asked
after the model's name is checked (app.py's order), and only then are the images decoded or
fetched (image_reading.py), so a request refused for another reason never costs a decode or
a request to another server. A message's images stay as sources under its "images" key until
image_reading.py replaces them with `Image`s.

The forms read, as OpenAI's clients send them:

    chat:      {"type": "image_url", "image_url": {"url": URL, "detail": ...}}   (detail ignored)
    responses: {"type": "input_image", "image_url": URL, "detail": ...}

URL: a `data:image/...;base64,...` URL, or an http(s) address, which only a server started
with --allow-image-urls fetches (image_reading.py). Any other scheme (file:, ftp:, ...) is
refused here: a server reads no address a client names on its own machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..images import intake
from ..images.image import ImageError
from .errors import bad_request

FETCHED_SCHEMES = ("http", "https")  # fetched with --allow-image-urls; never any other


@dataclass(frozen=True)
class ImageSource:
    """An image a request names: a data: URL or an http(s) address, and the field it came in
    (a refusal names it)."""

    url: str
    param: str

    @property
    def scheme(self) -> str:
        return self.url.partition(":")[0].lower()


def image_source(url, param: str) -> ImageSource:
    """The image at `url`, refused with a 400 unless it is a data: URL or an http(s) address."""
    if not isinstance(url, str) or not url:
        raise bad_request(f"{param} must be the image's URL: a data:image/...;base64,... URL.", param=param,
                          code="invalid_image_url")
    source = ImageSource(url, param)
    if source.scheme != "data" and source.scheme not in FETCHED_SCHEMES:
        shown = source.scheme[:20] if ":" in url and source.scheme.isascii() else "an address with no scheme"
        raise bad_request(f"{param}: this server reads images from data: URLs (and, started with "
                          f"--allow-image-urls, from http and https addresses), not {shown!r}.", param=param,
                          code="unsupported_image_url")
    return source


def check_count(sources: list[ImageSource], param: str) -> None:
    """At most MAX_IMAGES_PER_MESSAGE images in one message, in intake's words (each costs the
    model an encoding and hundreds of tokens of its context)."""
    try:
        intake.check_count(len(sources))
    except ImageError as exc:
        raise bad_request(f"{param}: {exc}", param=param, code="too_many_images") from None


def only_users_show_images(role: str, param: str) -> None:
    """Images come in a user's message only (OpenAI's rule, and the only place a chat template
    and the engine place them)."""
    if role != "user":
        article = "an" if role[:1] in ("a", "e", "i", "o", "u") else "a"
        raise bad_request(f"{param}: only a user message may carry images; this is {article} {role} message.",
                          param=param, code="unsupported_parameter")


def chat_image(part: dict, param: str) -> ImageSource:
    """A chat `image_url` part: {"image_url": {"url": URL, "detail": ...}} (a bare URL string,
    as some clients send it, is read too)."""
    image = part.get("image_url")
    if isinstance(image, dict):
        return image_source(image.get("url"), f"{param}.image_url.url")
    if isinstance(image, str):
        return image_source(image, f"{param}.image_url")
    raise bad_request(f"{param}.image_url must be an object with the image's url.", param=f"{param}.image_url",
                      code="invalid_image_url")


def responses_image(part: dict, param: str) -> ImageSource:
    """A Responses `input_image` part: {"image_url": URL, "detail": ...}; a `file_id` names a file
    kept by OpenAI, which this server does not have."""
    if part.get("image_url") is None and part.get("file_id") is not None:
        raise bad_request(f"{param}.file_id: this server keeps no files; send the image itself as a data: URL "
                          "in image_url.", param=f"{param}.file_id", code="unsupported_parameter")
    return image_source(part.get("image_url"), f"{param}.image_url")


def content_parts(content, param: str, role: str, image_kind: str, read_image: Callable[[dict, str], ImageSource],
                  text_of: Callable[[dict], str | None], expected: str) -> tuple[str, tuple[ImageSource, ...]]:
    """A message's content as a chat or the Responses API sends it: a string, or a list of text
    parts (joined with newlines, as vLLM does) and a user's image parts of `image_kind` (read by
    `read_image`). `text_of` reads a part's text (None: not a text part); `expected` says in a
    refusal which parts the API takes."""
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise bad_request(f"{param} must be a string or a list of content parts.", param=param)
    texts: list[str] = []
    images: list[ImageSource] = []
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == image_kind:
            only_users_show_images(role, where)
            images.append(read_image(part, where))
            continue
        text = text_of(part) if isinstance(part, dict) else None
        if not isinstance(text, str):
            raise bad_request(f"{where}: this server reads {expected} only, not {str(kind)[:40]!r}.", param=where,
                              code="unsupported_parameter")
        texts.append(text)
    check_count(images, param)
    return "\n".join(texts), tuple(images)
