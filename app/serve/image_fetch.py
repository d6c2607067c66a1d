"""Fetching an image from an http(s) address a request names, for a server started with
--allow-image-urls (never otherwise: a server that fetches what its clients name reaches
addresses its owner never chose, its own network's included).

Bounded every way a server on the other end could stretch it: the body is read as it streams
and cut at the byte limit (a declared length over it is refused before any of it is read), the
whole fetch has one deadline (a server that trickles a byte at a time ends there, not never),
and redirects are followed a few times, to http and https addresses only. Each failure is
an `ImageError` that says which address and why, for the client's 400.
"""

from __future__ import annotations

import asyncio

import httpx

from ..common.text import printable
from ..common.units import byte_size
from ..images.image import ImageError
from ..images.limits import MAX_IMAGE_BYTES
from .image_parts import FETCHED_SCHEMES

FETCH_TIMEOUT_S = 30.0  # the whole fetch of one image, redirects included
MAX_REDIRECTS = 5
USER_AGENT = "Hearth (image fetch)"


async def fetch_image_bytes(url: str, limit: int = MAX_IMAGE_BYTES, timeout_s: float = FETCH_TIMEOUT_S) -> bytes:
    """The body at `url` (http or https), at most `limit` bytes; ImageError for anything else."""
    shown = printable(url, limit=120)
    try:
        async with asyncio.timeout(timeout_s):
            async with httpx.AsyncClient(follow_redirects=False, headers={"User-Agent": USER_AGENT},
                                         timeout=timeout_s) as client:
                return await _follow(client, httpx.URL(url), shown, limit)
    except TimeoutError:
        raise ImageError(f"The image at {shown} did not arrive within {timeout_s:g} s.") from None
    except httpx.HTTPError as exc:
        why = printable(str(exc), limit=200) or type(exc).__name__
        raise ImageError(f"The image at {shown} could not be fetched: {why}.") from None


async def _follow(client: httpx.AsyncClient, url: httpx.URL, shown: str, limit: int) -> bytes:
    for _ in range(MAX_REDIRECTS + 1):
        async with client.stream("GET", url) as response:
            if response.is_redirect:
                url = _redirected(response, shown)
                continue
            if response.status_code != 200:
                raise ImageError(f"The server at {shown} answered {response.status_code} "
                                 f"({printable(response.reason_phrase, limit=60)}), not the image.")
            return await _body(response, shown, limit)
    raise ImageError(f"The image at {shown} redirects more than {MAX_REDIRECTS} times.")


def _redirected(response: httpx.Response, shown: str) -> httpx.URL:
    """Where a redirect leads: an http or https address only (never file:, ftp:, ...)."""
    location = response.headers.get("location", "")
    try:
        target = response.url.join(location)
    except httpx.InvalidURL:
        target = None
    if not location or target is None or target.scheme not in FETCHED_SCHEMES:
        raise ImageError(f"The image at {shown} redirects to {printable(location, limit=120)!r}, which is not an "
                         "http or https address; this server follows redirects to those only.")
    return target


async def _body(response: httpx.Response, shown: str, limit: int) -> bytes:
    """The body as it streams, cut off (and refused) once it passes `limit`."""
    too_large = ImageError(f"The image at {shown} is larger than {byte_size(limit)}, the most this server reads "
                           "for an image.")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > limit:
            raise too_large
    return bytes(data)
