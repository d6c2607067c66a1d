"""Messages between the window's process and the engine's (#29): length-prefixed frames over a
stream (a socket pair or a pipe), each one JSON object {"kind": …, "body": …}, the body made by
codec.py.

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON. The length is checked
before anything is read (at most MAX_FRAME_BYTES: a description with a 262,144-token vocabulary's
special tokens is about 150 KB), and a stream that ends inside a frame is the other side gone
(ChannelClosed), not a half-read message. Nothing here knows what the kinds mean: protocol.py does.
"""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

from .codec import ProtocolError, decode, encode

MAX_FRAME_BYTES = 64 * 2**20
_LENGTH = struct.Struct(">I")


class ChannelClosed(EOFError):
    """The other side closed the stream (it exited, or was killed): nothing more will come."""


def write_frame(stream: BinaryIO, kind: str, body: Any = None) -> None:
    """Send one message: `kind` names it, `body` is any value codec.encode takes."""
    data = json.dumps({"kind": kind, "body": encode(body)}, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME_BYTES:
        raise ProtocolError(f"a {kind} message of {len(data):,} bytes is more than a frame holds")
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> tuple[str, Any]:
    """The next message: its kind and its body as data (decode it with codec.decode against the
    type the kind carries). ChannelClosed when the stream ends, ProtocolError for a frame that
    is not one."""
    length = _LENGTH.unpack(_read_exactly(stream, _LENGTH.size))[0]
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"a frame of {length:,} bytes is more than a frame holds")
    try:
        message = json.loads(_read_exactly(stream, length).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"a frame that is not JSON ({exc})") from None
    if not isinstance(message, dict) or not isinstance(message.get("kind"), str) or set(message) != {"kind", "body"}:
        raise ProtocolError("a frame that is not a message")
    return message["kind"], message["body"]


def read_message(stream: BinaryIO, expected: dict[str, Any]) -> tuple[str, Any]:
    """The next message, its body decoded against the type its kind carries (`expected`: kind ->
    type); a kind not in `expected` is a ProtocolError."""
    kind, body = read_frame(stream)
    if kind not in expected:
        raise ProtocolError(f"a {kind!r} message where {sorted(expected)} were expected")
    return kind, decode(body, expected[kind])


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise ChannelClosed("the other process closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
