"""Locate the values in a GGUF file's header without decoding them: the format, not its meaning.

Why our own reader: `gguf.GGUFReader` builds Python objects for every element of every
array, so a model with a 262k-token vocabulary takes tens of seconds to open. The model
picker inspects every file it lists, so this reader walks the header with `mmap` and
`struct`, keeps only where each value lies (decoding is `gguf_checks.Metadata`'s job), and
checks that every tensor's bytes really lie inside the file. Every count from the file is
weighed against the bytes that are really left before anything is allocated for it.
"""

from __future__ import annotations

import math
import mmap
import struct
from array import array
from dataclasses import dataclass

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from ...common.text import printable

MAX_HEADER_STRINGS = 2_000_000  # walking each costs time: this bounds a header to about a second
MAX_KEY_BYTES = 256
VOCABULARY = "tokenizer.ggml.tokens"  # the one string array looked up by index

# What the bundled llama.cpp's reader asserts on for a tensor (checked like the limits in
# gguf_checks.py; revisit when llama-cpp-python is upgraded).
GGML_MAX_DIMS = 4
GGML_MAX_NAME_BYTES = 63  # GGML_MAX_NAME is 64 with the terminating NUL

# GGUF value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_SCALAR_FORMATS = {
    U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
    U64: "<Q", I64: "<q", F64: "<d",
}
INTEGER_TYPES = frozenset({U8, I8, U16, I16, U32, I32, U64, I64})
FLOAT_TYPES = frozenset({F32, F64})
ARRAY_CODES = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "B",
               U64: "Q", I64: "q", F64: "d"}
# The fewest bytes one array item of each type takes: a string is at least its 8-byte length.
_MIN_ITEM_BYTES = {vtype: struct.calcsize(fmt) for vtype, fmt in _SCALAR_FORMATS.items()} | {STRING: 8}
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
_LENGTH = struct.Struct("<Q")


def quote(text: str) -> str:
    """Text from the file as messages quote it: one short, printable line."""
    return f"'{printable(text, limit=60)}'"


class Truncated(Exception):
    pass


class Corrupt(Exception):
    """The header's structure contradicts itself; the message says where."""



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


class HeaderReader:
    """Sequential little-endian reads over a memory map, with bounds checks.

    Values are not decoded here, only located: a string or an array is its position and size,
    so a hostile header costs what it is, never a multiple of it.
    """

    def __init__(self, buffer: mmap.mmap):
        self.buf = buffer
        self.size = len(buffer)
        self.pos = 0
        self.strings_left = MAX_HEADER_STRINGS
        self.vocabulary: StringArray | None = None

    def scalar(self, fmt: str):
        width = struct.calcsize(fmt)
        if self.pos + width > self.size:
            raise Truncated
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += width
        return value

    def raw_string(self) -> tuple[int, int]:
        """Return (offset, length) of a string and skip past it."""
        length = self.scalar("<Q")
        if length > self.size - self.pos:
            raise Truncated
        start = self.pos
        self.pos += length
        return start, length

    def key(self) -> str:
        start, length = self.raw_string()
        if length > MAX_KEY_BYTES:
            raise Corrupt(f"its header holds a key {length:,} bytes long")
        return bytes(self.buf[start:start + length]).decode("utf-8", errors="replace")

    def value(self, vtype: int, key: str) -> Scalar | String | Array:
        if vtype in _SCALAR_FORMATS:
            return Scalar(vtype, self.scalar(_SCALAR_FORMATS[vtype]))
        if vtype == STRING:
            return String(*self.raw_string())
        if vtype == ARRAY:
            return self.array(key)
        raise Corrupt(f"the metadata entry {quote(key)} has an unknown type ({vtype})")

    def array(self, key: str) -> Array:
        elem_type = self.scalar("<I")
        count = self.scalar("<Q")
        if elem_type == ARRAY:  # llama.cpp's reader refuses them too
            raise Corrupt(f"the metadata entry {quote(key)} is a list of lists, which llama.cpp cannot read")
        if elem_type not in _MIN_ITEM_BYTES:
            raise Corrupt(f"the metadata entry {quote(key)} has an unknown item type ({elem_type})")
        if count > (self.size - self.pos) // _MIN_ITEM_BYTES[elem_type]:
            raise Corrupt(f"the metadata entry {quote(key)} lists {count:,} items, more than the rest of the file can hold")
        entry = Array(elem_type, count, self.pos)
        if elem_type == STRING:
            if count > self.strings_left:
                raise Corrupt(f"its header lists more than {MAX_HEADER_STRINGS:,} strings, far more than any model")
            self.strings_left -= count
            strings = StringArray(self, count, keep_index=key == VOCABULARY)
            if key == VOCABULARY:
                self.vocabulary = strings
        else:
            self.pos += count * _MIN_ITEM_BYTES[elem_type]
        return entry


class StringArray:
    """A GGUF string array, walked once; items are decoded only when asked for.

    The walk is the slow part of inspecting a model: a 128k-token vocabulary and 280k merges
    are 400k length-prefixed strings. Only the vocabulary keeps where each string starts (its
    length sits in the 8 bytes before it), in a tight loop without method calls per string;
    every other string array is only walked past.
    """

    def __init__(self, reader: HeaderReader, count: int, keep_index: bool):
        self._buf = buf = reader.buf
        unpack_length = _LENGTH.unpack_from
        end, pos = reader.size, reader.pos
        # count <= the bytes left / 8 (checked by the caller), so this is at most their size.
        starts = array("Q", bytes(8 * count)) if keep_index else None
        for index in range(count):
            if pos + 8 > end:
                raise Truncated
            (length,) = unpack_length(buf, pos)
            pos += 8
            if keep_index:
                starts[index] = pos
            pos += length
        if pos > end:  # the last string, or one before it, runs past the end
            raise Truncated
        reader.pos = pos
        self._starts = starts or array("Q")

    def __len__(self) -> int:
        return len(self._starts)

    def byte_length(self, index: int) -> int:
        return _LENGTH.unpack_from(self._buf, self._starts[index] - 8)[0]

    def __getitem__(self, index: int) -> str:
        start = self._starts[index]
        return bytes(self._buf[start:start + self.byte_length(index)]).decode("utf-8", errors="replace")


def read_tensor_infos(reader: HeaderReader, count: int, alignment: int) -> tuple[int, int, set[bytes]]:
    """Check every tensor description as llama.cpp's reader does; return the parameter count,
    the size of the data section and the tensors' names.

    The tensors must lie one after another in the data section, each at the aligned end of
    the one before, so a tensor can neither overlap another nor point outside the file.
    """
    names: set[bytes] = set()
    parameters = expected_offset = 0
    for _ in range(count):
        start, length = reader.raw_string()
        raw_name = bytes(reader.buf[start:start + min(length, 240)])
        shown = quote(raw_name.decode("utf-8", errors="replace"))
        if length > GGML_MAX_NAME_BYTES:
            raise Corrupt(f"the tensor {shown} has a name {length:,} bytes long (llama.cpp allows {GGML_MAX_NAME_BYTES})")
        if raw_name in names:
            raise Corrupt(f"it holds the tensor {shown} twice")
        names.add(raw_name)
        n_dims = reader.scalar("<I")
        if n_dims > GGML_MAX_DIMS:
            raise Corrupt(f"the tensor {shown} has {n_dims:,} dimensions (llama.cpp allows {GGML_MAX_DIMS})")
        dims = [reader.scalar("<Q") for _ in range(n_dims)]
        n_elements = math.prod(dims)
        if any(dim >= 2**63 for dim in dims) or n_elements >= 2**63:
            raise Corrupt(f"the tensor {shown} has an impossible shape")
        ggml_type = reader.scalar("<I")
        offset = reader.scalar("<Q")
        try:
            block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
        except (ValueError, KeyError):
            raise Corrupt(f"the tensor {shown} has type {ggml_type:,}, which llama.cpp does not know") from None
        if dims and dims[0] % block_size:
            raise Corrupt(f"the tensor {shown} has rows of {dims[0]:,} values, not whole blocks of {block_size}")
        if offset != expected_offset:
            raise Corrupt(f"the tensor {shown} starts at byte {offset:,} of the data instead of {expected_offset:,}")
        nbytes = n_elements // block_size * type_size
        expected_offset += nbytes + (-nbytes % alignment)
        parameters += n_elements
    return parameters, expected_offset, names
