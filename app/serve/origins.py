"""Which web pages may call the server, as the user writes them: checked and said in words.

Pure text, no Starlette and no Qt: the window checks origins as the user types them in the
Serve dialog (and its settings file reads them back) without loading the server, and
`hearth serve --cors-origin` checks them before loading a model. serve/cors.py builds the CORS
layer from what passes here; its module says what a browser does with them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

ANY = "*"
DEFAULT_PORTS = {"http": 80, "https": 443}
_BETWEEN = re.compile(r"[,\s]+")  # an origin holds neither a comma nor a space


def check_origin(origin: str) -> str:
    """`origin` in the form browsers send (lowercase: scheme and host are case-blind), or
    ValueError saying how to write it. An origin with a path, a trailing `/` or a default port
    would never equal what a browser sends, and would fail silently at every request."""
    if origin == ANY:
        return origin
    form = ("an origin is scheme://host[:port] exactly as a browser sends it, such as "
            "http://localhost:3000: no path, not even a trailing /")
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        raise ValueError(f"{origin!r} is not an origin: {form}") from None
    rebuilt = f"{parts.scheme}://{parts.netloc}"  # urlsplit lowers the scheme
    if not parts.hostname or origin.lower() != rebuilt.lower() or "@" in parts.netloc:
        raise ValueError(f"{origin!r} is not an origin: {form}")
    if port is not None and DEFAULT_PORTS.get(parts.scheme.lower()) == port:
        raise ValueError(f"{origin!r}: browsers leave out {parts.scheme}'s default port {port}; "
                         f"give {parts.scheme}://{parts.hostname}")
    return origin.lower()


def check_origins(origins: Sequence[str]) -> list[str]:
    """Each of `origins` checked (the first problem raised), once each, in the order given."""
    return list(dict.fromkeys(check_origin(origin) for origin in origins))


def split_origins(text: str) -> list[str]:
    """The origins in a line the user typed, separated by commas or spaces (unchecked)."""
    return [origin for origin in _BETWEEN.split(text) if origin]


def pages_may_call(origins: Sequence[str]) -> str:
    """What the server says of `origins` as it starts ("" for none): the same words from
    `hearth serve` and the window's status bar."""
    if not origins:
        return ""
    sites = "every site" if ANY in origins else ", ".join(origins)
    return f"web pages from {sites} may call it"
