"""A request's images read into `Image`s, after its model's name is checked and before it is
queued (app.py's order), each refusal a 400 that says why:

- the served model reads no images (no projector was loaded with it): refused before any
  image is decoded or fetched, whatever the images are;
- an http(s) address, where the server was not started with --allow-image-urls;
- an image intake refuses (damaged, hostile, too large: images/intake.py says which), or one
  that could not be fetched (image_fetch.py).

Decoding runs on a worker thread (intake decodes within limits, but a large image still
takes a moment the event loop must not wait on); fetching is the event loop's own I/O.
"""

from __future__ import annotations

import asyncio

from ..images.image import Image, ImageError
from ..images.intake import read_data_url, read_image
from .completions import ServedModel
from .errors import bad_request
from .image_fetch import fetch_image_bytes
from .image_parts import ImageSource

# Images in one request, all its messages together (each message holds at most
# images/limits.MAX_IMAGES_PER_MESSAGE). Every one is decoded (or fetched) again with each
# request, as clients send the whole conversation every turn; 64 already fill a 16k context
# of Gemma 3 (256 tokens each), and without a bound a 16 MiB body of tiny images, or of
# addresses to fetch, would hold the server for minutes.
MAX_IMAGES_PER_REQUEST = 64


async def read_images(messages: list[dict], served: ServedModel, allow_urls: bool) -> list[dict]:
    """The messages with each one's image sources read into Images (those without images as
    they are); a 400 for the first that cannot be."""
    sources = [source for message in messages for source in message.get("images", ())]
    if not sources:
        return messages
    if not served.reads_images:
        raise bad_request(_cannot_read_images(served), param=sources[0].param, code="model_cannot_read_images")
    if len(sources) > MAX_IMAGES_PER_REQUEST:
        raise bad_request(f"{sources[MAX_IMAGES_PER_REQUEST].param}: {len(sources)} images in one request; this "
                          f"server reads at most {MAX_IMAGES_PER_REQUEST} (every message's together).",
                          param=sources[MAX_IMAGES_PER_REQUEST].param, code="too_many_images")
    if not allow_urls:
        fetched = next((source for source in sources if source.scheme != "data"), None)
        if fetched is not None:
            raise bad_request(f"{fetched.param}: this server fetches no address you did not choose; send the image "
                              "as a data: URL, or start it with --allow-image-urls to let requests name http and "
                              "https addresses.", param=fetched.param, code="image_url_not_allowed")
    read = []
    for message in messages:
        if message.get("images"):
            message = {**message, "images": tuple([await _image(source) for source in message["images"]])}
        read.append(message)
    return read


def _cannot_read_images(served: ServedModel) -> str:
    return (f"{served.name or served.model_id} cannot read images: no projector (mmproj) was loaded with it. "
            "Send the message without images, or serve a model that reads images with its projector "
            "(hearth serve MODEL --mmproj FILE, or its mmproj-*.gguf beside it).")


async def _image(source: ImageSource) -> Image:
    try:
        if source.scheme == "data":
            return await asyncio.to_thread(read_data_url, source.url)
        data = await fetch_image_bytes(source.url)
        return await asyncio.to_thread(read_image, data, source.url.rpartition("/")[2][:120])
    except ImageError as exc:
        raise bad_request(f"{source.param}: {exc}", param=source.param, code="invalid_image") from None
