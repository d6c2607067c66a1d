"""A server's answer to a call (the SDK's CallToolResult) made into a ToolOutcome: the text the
model reads, capped, and the parts the window shows.

A server may answer with 12 MB of text, a 50 MB image or binary junk. What the model reads (and
what is stored) is at most RESULT_CAP_BYTES of UTF-8, cut on a character boundary and marked as
cut; the parts shown are held to the same budget, and an image is decoded only when it is small
(IMAGE_CAP_BYTES) and really is one of the formats a thumbnail can show. Nothing here walks the
text more than once or twice, so a huge result is turned into an outcome in milliseconds, and
the result itself can be dropped as soon as this returns.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ..common.text import printable
from ..common.units import byte_size
from .limits import IMAGE_CAP_BYTES, RESULT_CAP_BYTES
from .types import PartKind, ResultPart, ToolOutcome

MAX_IMAGES = 8  # images kept for thumbnails in one result; more are named
_NOTE_ROOM = 96  # bytes kept free under the cap for the note that says what was cut
# The formats a thumbnail shows, each with the bytes its files begin with (a mime type is only
# the server's word for it).
_IMAGE_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # and "WEBP" at 8, checked below
}


def error_outcome(text: str, elapsed_s: float = 0.0) -> ToolOutcome:
    """A call that gave no result (refused, timed out, its server broke): `text` says why, to the
    model and to the user alike."""
    return ToolOutcome(model_text=text, error=True, parts=(ResultPart(PartKind.TEXT, text),), elapsed_s=elapsed_s)


def outcome_from_result(result: Any, elapsed_s: float = 0.0, cap_bytes: int = RESULT_CAP_BYTES) -> ToolOutcome:
    """`result`, an mcp CallToolResult (content, structured_content, is_error), as an outcome."""
    model: list[str] = []  # the pieces the model reads, joined by newlines
    shown = _Budget(cap_bytes)  # the text of the parts shown, held to the same size
    parts: list[ResultPart] = []
    images = 0
    for item in result.content or ():
        kind = getattr(item, "type", None)
        if kind == "text":
            model.append(item.text)
            parts.append(ResultPart(PartKind.TEXT, shown.take(item.text)))
        elif kind == "image":
            part = _image(item.data, item.mime_type, images < MAX_IMAGES)
            images += part.kind is PartKind.IMAGE
            model.append(f"[image: {_mime(item.mime_type)}, {byte_size(_decoded_size(item.data))}]")
            parts.append(part)
        elif kind == "audio":
            model.append(f"[audio: {_mime(item.mime_type)}, {byte_size(_decoded_size(item.data))}]")
            parts.append(ResultPart(PartKind.OTHER, model[-1], mime=_mime(item.mime_type)))
        elif kind == "resource":
            resource = item.resource
            uri = printable(str(resource.uri), limit=200)
            if getattr(resource, "text", None) is not None:
                model.append(f"[resource {uri}]\n{resource.text}")
                parts.append(ResultPart(PartKind.TEXT, shown.take(model[-1]), mime=_mime(resource.mime_type)))
            else:
                blob = getattr(resource, "blob", "") or ""
                model.append(f"[resource {uri}: {_mime(resource.mime_type)}, {byte_size(_decoded_size(blob))}]")
                parts.append(ResultPart(PartKind.OTHER, model[-1], mime=_mime(resource.mime_type)))
        elif kind == "resource_link":
            text = f"[resource link: {printable(item.name, limit=200)} {printable(str(item.uri), limit=200)}]"
            if item.description:
                text += f" {item.description}"
            model.append(text)
            parts.append(ResultPart(PartKind.OTHER, shown.take(text), mime=_mime(item.mime_type)))
        else:
            model.append(f"[content of a kind Hearth does not read: {printable(str(kind), limit=40)}]")
            parts.append(ResultPart(PartKind.OTHER, model[-1]))
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        text = _json(structured)
        parts.append(ResultPart(PartKind.JSON, shown.take(text), mime="application/json"))
        if not any(part.kind is PartKind.TEXT for part in parts):
            model.append(text)  # servers are asked to repeat it as text; where one did not, the model reads it
    if not model:
        model.append("(the tool returned nothing)")
    model_text, left_out = cap_text("\n".join(model), cap_bytes)
    return ToolOutcome(model_text=model_text, error=bool(getattr(result, "is_error", False)), cut=left_out > 0,
                       parts=tuple(parts), elapsed_s=elapsed_s)


def cap_text(text: str, cap_bytes: int) -> tuple[str, int]:
    """`text` cut to at most `cap_bytes` of UTF-8 with a note saying how much more there was,
    and how many bytes were left out (0: none). A lone surrogate (a server's "\\ud800") becomes
    "?", so what is kept can always be stored and shown."""
    if text.isascii():  # O(1) in CPython: most results are measured without a pass over them
        if len(text) <= cap_bytes:
            return text, 0
        size, head = len(text), text[:cap_bytes].encode("ascii")
    else:
        encoded = text.encode("utf-8", "replace")
        size, head = len(encoded), encoded[:cap_bytes]
        if size <= cap_bytes:
            return encoded.decode("utf-8"), 0
        del encoded
    room = max(cap_bytes - _NOTE_ROOM, 0)
    kept = head[:room].decode("utf-8", "ignore")  # "ignore": a character cut in two is dropped whole
    left_out = size - len(kept.encode("utf-8"))
    note = f"[… result cut: {byte_size(left_out, decimals=1)} more were left out]"
    return (f"{kept}\n{note}" if kept else note), left_out


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "replace"))


class _Budget:
    """What the parts shown may hold together: the first pieces whole, then cut, then notes."""

    def __init__(self, cap_bytes: int):
        self.left = cap_bytes

    def take(self, text: str) -> str:
        shown, left_out = cap_text(text, max(self.left, _NOTE_ROOM))
        self.left = max(self.left - _utf8_size(shown), 0)
        return shown


def _image(data: str, mime: str, room: bool) -> ResultPart:
    """An image's bytes for a thumbnail, or a text part naming it and why it is not shown."""
    mime = _mime(mime)
    size = _decoded_size(data)
    named = f"image ({mime}, {byte_size(size)})"
    if mime not in _IMAGE_MAGIC:
        return ResultPart(PartKind.OTHER, f"{named}: not a format Hearth shows", mime=mime)
    if size > IMAGE_CAP_BYTES:
        return ResultPart(PartKind.OTHER, f"{named}: larger than {byte_size(IMAGE_CAP_BYTES)}, not shown", mime=mime)
    if not room:
        return ResultPart(PartKind.OTHER, f"{named}: more than {MAX_IMAGES} images, not shown", mime=mime)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return ResultPart(PartKind.OTHER, f"{named}: not valid base64, not shown", mime=mime)
    if not raw.startswith(_IMAGE_MAGIC[mime]) or (mime == "image/webp" and raw[8:12] != b"WEBP"):
        return ResultPart(PartKind.OTHER, f"{named}: its bytes are not a {mime} image, not shown", mime=mime)
    return ResultPart(PartKind.IMAGE, named, data=raw, mime=mime)


def _decoded_size(data: str) -> int:
    """The bytes a base64 text decodes to, without decoding it."""
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def _mime(mime: str | None) -> str:
    return printable((mime or "unknown type").strip().lower(), limit=60)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return printable(repr(value), limit=RESULT_CAP_BYTES)
