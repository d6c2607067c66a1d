"""The engine's token segments as bytes, saved beside a KV state (StateCache's meta).

The engine tokenizes a prompt by reusing the segments of its last token sequence wherever the
text still matches (generator.py's prefix reuse): the reply's tokens are the ones the model
generated, which are often not what tokenizing the reply's text afresh gives (a word split
differently, a space the template trims: 2 of 8 sampled Gemma replies here). A state saved
for those tokens is useful after a restart only if the next prompt is tokenized the same way,
so the segments are saved with it and handed back to the engine before it tokenizes.

Layout (little-endian): the segment count (u32), then per segment a flags byte (1: it has
pieces, 2: shown without its first space), the text (u64 length + bytes), the tokens (u32
count + int32 each) and, with pieces, each piece (u32 length + bytes). `decode` weighs every
count against the bytes left before reading, and raises ValueError on anything malformed.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

_HAS_PIECES, _WITHOUT_SPACE = 1, 2
_U8, _U32, _U64 = struct.Struct("<B"), struct.Struct("<I"), struct.Struct("<Q")


@dataclass(frozen=True)
class SavedSegment:
    """generator._Segment's fields: a stretch of text and the tokens that stand for it."""

    data: bytes
    tokens: list[int]
    pieces: list[bytes] | None
    shown_without_space: bool


def encode(segments: Sequence[SavedSegment]) -> bytes:
    out = [_U32.pack(len(segments))]
    for segment in segments:
        flags = (_HAS_PIECES if segment.pieces is not None else 0) | (_WITHOUT_SPACE if segment.shown_without_space else 0)
        out += [_U8.pack(flags), _U64.pack(len(segment.data)), segment.data,
                _U32.pack(len(segment.tokens)), struct.pack(f"<{len(segment.tokens)}i", *segment.tokens)]
        if segment.pieces is not None:
            if len(segment.pieces) != len(segment.tokens):
                raise ValueError("a segment has one piece per token")
            for piece in segment.pieces:
                out += [_U32.pack(len(piece)), piece]
    return b"".join(out)


def decode(data: bytes) -> list[SavedSegment]:
    reader = _Reader(data)
    segments = []
    for _ in range(reader.count(_U32, least=1 + 8 + 4)):
        flags = reader.number(_U8)
        if flags & ~(_HAS_PIECES | _WITHOUT_SPACE):
            raise ValueError(f"unknown segment flags {flags}")
        text = reader.take(reader.count(_U64, least=1))
        n_tokens = reader.count(_U32, least=4)
        tokens = list(struct.unpack(f"<{n_tokens}i", reader.take(4 * n_tokens)))
        pieces = [reader.take(reader.count(_U32, least=1)) for _ in range(n_tokens)] if flags & _HAS_PIECES else None
        segments.append(SavedSegment(text, tokens, pieces, bool(flags & _WITHOUT_SPACE)))
    if reader.position != len(data):
        raise ValueError("bytes left over after the last segment")
    return segments


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.position = 0

    def number(self, form: struct.Struct) -> int:
        (value,) = form.unpack(self.take(form.size))
        return value

    def count(self, form: struct.Struct, least: int) -> int:
        """A count of items that take at least `least` bytes each: no more than the bytes left allow."""
        value = self.number(form)
        if value * least > len(self.data) - self.position:
            raise ValueError(f"a count of {value:,} is more than the {len(self.data) - self.position:,} bytes left hold")
        return value

    def take(self, size: int) -> bytes:
        if size > len(self.data) - self.position:
            raise ValueError("it ends early")
        start, self.position = self.position, self.position + size
        return self.data[start:self.position]
