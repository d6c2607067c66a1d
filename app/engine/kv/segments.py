"""The engine's token segments: the stretches of text its last token sequence stands for, and
their bytes saved beside a KV state (StateCache's meta).

The engine tokenizes a prompt by reusing the segments of its last token sequence wherever the
text still matches (kv/prefix_reuse.py): the reply's tokens are the ones the model
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
class Segment:
    """A stretch of the last token sequence and the text it stands for.

    A prompt segment is reused whole or not at all (a tokenizer may add a space prefix, so its
    tokens' pieces need not spell its text). A reply segment keeps each token's bytes, so
    when a template trims the reply (Gemma's `| trim`) the tokens up to the cut still match.
    """

    data: bytes
    tokens: list[int]
    pieces: list[bytes] | None = None
    # The reply was shown without its first token's leading space (SentencePiece's "▁"), so a
    # template may render it back with or without that space.
    shown_without_space: bool = False

    def match(self, text: bytes, position: int) -> Segment:
        """This whole segment if `text` continues with it at `position`, else its longest match."""
        if self.data and text.startswith(self.data, position):
            return self
        best = self.matching_prefix(text, position)
        if self.shown_without_space:
            unspaced = Segment(self.data[1:], self.tokens, [self.pieces[0][1:]] + self.pieces[1:])
            if unspaced.data and text.startswith(unspaced.data, position):
                return unspaced
            alternative = unspaced.matching_prefix(text, position)
            if len(alternative.tokens) > len(best.tokens):
                best = alternative
        return best

    def matching_prefix(self, text: bytes, position: int) -> Segment:
        """The longest run of leading tokens whose bytes appear in `text` at `position`."""
        if self.pieces is None:
            return Segment(b"", [])
        end = position
        count = 0
        for piece in self.pieces:
            if not piece or not text.startswith(piece, end):
                break
            end += len(piece)
            count += 1
        while count and end < len(text) and (text[end] & 0xC0) == 0x80:  # never split a character
            count -= 1
            end -= len(self.pieces[count])
        return Segment(text[position:end], self.tokens[:count], self.pieces[:count])


def encode(segments: Sequence[Segment]) -> bytes:
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


def decode(data: bytes) -> list[Segment]:
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
        segments.append(Segment(text, tokens, pieces, bool(flags & _WITHOUT_SPACE)))
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
