"""Messages between the window's process and the engine's (#29): length-prefixed frames over a
socket pair, each one JSON object {"kind": …, "body": …}, the body made by codec.py.

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON. The length is checked
before anything is read (at most MAX_FRAME_BYTES: a description with a 262,144-token vocabulary's
special tokens is about 150 KB), and a stream that ends inside a frame is the other side gone
(ChannelClosed), not a half-read message. Nothing here knows what the kinds mean: protocol.py does.

Both processes talk over their end through a FrameSocket, which keeps what it received in a
buffer of its own, so the same frames can be read blocking (the owner's thread, the child's
reader) or without blocking (an event loop that waits on the socket: `hearth serve` reads a
reply's tokens so, a thread wake fewer per token). A frame goes out whole from one
`FrameSocket.send`, made by one encoder made once: the child sends one per token, between two
forward passes.
"""

from __future__ import annotations

import json
import select
import socket
import struct
from typing import Any

from .codec import ProtocolError, decode, encode

MAX_FRAME_BYTES = 64 * 2**20
RECEIVE_BYTES = 64 * 2**10  # asked of the socket at a time: a token's frame is about 100 bytes
_LENGTH = struct.Struct(">I")
# Made once: json.dumps with these arguments builds an encoder for every frame.
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


class ChannelClosed(EOFError):
    """The other side closed the stream (it exited, or was killed): nothing more will come."""


def frame(kind: str, body: Any = None) -> bytes:
    """One message, as the bytes of its frame."""
    data = _ENCODE({"kind": kind, "body": encode(body)}).encode("utf-8")
    if len(data) > MAX_FRAME_BYTES:
        raise ProtocolError(f"a {kind} message of {len(data):,} bytes is more than a frame holds")
    return _LENGTH.pack(len(data)) + data


def checked(message: tuple[str, Any], expected: dict[str, Any]) -> tuple[str, Any]:
    """A message read, its body decoded against the type its kind carries (`expected`: kind ->
    type); a kind not in `expected` is a ProtocolError."""
    kind, body = message
    if kind not in expected:
        raise ProtocolError(f"a {kind!r} message where {sorted(expected)} were expected")
    return kind, decode(body, expected[kind])


class FrameSocket:
    """The messages on a socket, both ways. Sent whole, and read either waiting (`read`) or as
    far as they have come (`read_ready`), in any mix: a frame part-received by one is finished
    by the other. Sending and waiting work however the socket is set: an event loop that watched
    it may have left it non-blocking (libuv, under uvloop, does). One reader at a time; senders
    take turns (the caller's lock)."""

    def __init__(self, channel: socket.socket):
        self._channel = channel
        self._buffer = bytearray()

    def send(self, kind: str, body: Any = None) -> None:
        """Send one message whole (OSError when the other side is gone)."""
        data = memoryview(frame(kind, body))
        while data:
            try:
                data = data[self._channel.send(data):]
            except BlockingIOError:
                self._wait(select.POLLOUT)

    def read(self) -> tuple[str, Any]:
        """The next message, waiting for it: ChannelClosed once the other side has closed the
        socket, ProtocolError for a frame that is not a message."""
        while (message := self._take()) is None:
            try:
                self._receive(0)
            except BlockingIOError:
                self._wait(select.POLLIN)
        return message

    def _wait(self, event: int) -> None:
        poll = select.poll()  # not select(): a process with many files has descriptors past its 1,024
        poll.register(self._channel, event)
        poll.poll()

    def read_received(self) -> tuple[str, Any] | None:
        """The next message if what was received already holds it whole, else None: the socket is
        not read (one read per wake of a selector is enough, and a read that finds nothing costs
        a system call and an exception)."""
        return self._take()

    def read_ready(self) -> tuple[str, Any] | None:
        """The next message if it has come whole, else None at once (read's errors)."""
        while (message := self._take()) is None:
            try:
                self._receive(socket.MSG_DONTWAIT)
            except BlockingIOError:
                return None
        return message

    def _receive(self, flags: int) -> None:
        chunk = self._channel.recv(RECEIVE_BYTES, flags)
        if not chunk:
            raise ChannelClosed("the other process closed the channel")
        self._buffer += chunk

    def _take(self) -> tuple[str, Any] | None:
        """The first whole frame in the buffer, taken out of it; None if none is whole yet."""
        if len(self._buffer) < _LENGTH.size:
            return None
        end = _LENGTH.size + _length(self._buffer[:_LENGTH.size])
        if len(self._buffer) < end:
            return None
        data = bytes(self._buffer[_LENGTH.size:end])
        del self._buffer[:end]
        return _message(data)


def _length(prefix: bytes) -> int:
    length = _LENGTH.unpack(prefix)[0]
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"a frame of {length:,} bytes is more than a frame holds")
    return length


def _message(data: bytes) -> tuple[str, Any]:
    try:
        message = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"a frame that is not JSON ({exc})") from None
    if not isinstance(message, dict) or not isinstance(message.get("kind"), str) or set(message) != {"kind", "body"}:
        raise ProtocolError("a frame that is not a message")
    return message["kind"], message["body"]
