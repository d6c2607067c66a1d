"""What a GGUF header's values are once located: their types, and where their bytes lie.

The header walk (header.py) finds every value without decoding it, and `Metadata`
(metadata.py) decodes one only when it is asked for, with the type and range that use
needs. Both speak in these terms: a scalar is decoded at once (it is a few bytes), a string
or an array is only its position and size, so a hostile header costs what it is, never a
multiple of it.
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass

from ...common.text import printable

# GGUF value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR_FORMATS = {
    U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
    U64: "<Q", I64: "<q", F64: "<d",
}
INTEGER_TYPES = frozenset({U8, I8, U16, I16, U32, I32, U64, I64})
FLOAT_TYPES = frozenset({F32, F64})
ARRAY_CODES = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "B",
               U64: "Q", I64: "q", F64: "d"}
# The fewest bytes one array item of each type takes: a string is at least its 8-byte length.
MIN_ITEM_BYTES = {vtype: struct.calcsize(fmt) for vtype, fmt in SCALAR_FORMATS.items()} | {STRING: 8}
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
LENGTH = struct.Struct("<Q")  # a string's length, just before its bytes

VOCABULARY = "tokenizer.ggml.tokens"  # the one string array looked up by index


def quote(text: str) -> str:
    """Text from the file as messages quote it: one short, printable line."""
    return f"'{printable(text, limit=60)}'"


@dataclass(frozen=True)
class Scalar:
    vtype: int
    value: int | float | bool


@dataclass(frozen=True)
class String:
    start: int
    length: int  # bytes


@dataclass(frozen=True)
class Array:
    elem_type: int
    count: int
    start: int  # the first item's first byte


Value = Scalar | String | Array


class StringArray:
    """The vocabulary: where each of its strings starts, decoded only when asked for.

    Its length sits in the 8 bytes before each string, so the starts are all the walk keeps
    (8 bytes a token, in one `array`, not a Python object per token).
    """

    def __init__(self, data: bytes, starts: array):
        self._data = data
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts)

    def byte_length(self, index: int) -> int:
        return LENGTH.unpack_from(self._data, self._starts[index] - 8)[0]

    def __getitem__(self, index: int) -> str:
        start = self._starts[index]
        return self._data[start:start + self.byte_length(index)].decode("utf-8", errors="replace")
