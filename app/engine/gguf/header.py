"""The one walk over a GGUF file's header: the format, not its meaning.

Everything Hearth reads from a model file without loading it — its info (modelfile.py), its
memory shape (shape.py), the fingerprint saved states are keyed by (fingerprint.py) — is an
interpretation of the `Header` this walk returns, and one load asks for all three: reading.py
walks a file version (its path, size and modification time) once and keeps the answers.

Why our own reader: `gguf.GGUFReader` builds Python objects for every element of every
array, so a model with a 262k-token vocabulary takes tens of seconds to open. This walk reads
the header through `mmap` and `struct`, keeps only where each value lies (decoding is
`Metadata`'s job), and checks every tensor description as llama.cpp's reader does. Every
count from the file is weighed against the bytes that are really left before anything is
allocated for it, and the limits below bound what a hostile header can cost.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from .metadata import Metadata, data_alignment
from .values import (
    ARRAY,
    LENGTH,
    MIN_ITEM_BYTES,
    SCALAR_FORMATS,
    STRING,
    VOCABULARY,
    Array,
    Scalar,
    String,
    StringArray,
    Value,
    quote,
)

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
MIN_FILE_BYTES = 24  # the magic, the version and the two counts
# Hard caps well above any real model (the largest MoE files hold a few thousand tensors,
# a few hundred keys, and a vocabulary plus merges of under a million strings); a count
# above them is a corrupt or hostile header.
MAX_TENSORS = 1 << 18
MAX_KEYS = 100_000
MAX_HEADER_STRINGS = 2_000_000  # walking each costs time: this bounds a header to about a second
MAX_KEY_BYTES = 256
# The fewest bytes a tensor description and a key-value pair take.
_MIN_TENSOR_BYTES, _MIN_ENTRY_BYTES = 32, 13

# What the bundled llama.cpp's reader asserts on for a tensor (checked like the limits in
# checks.py; revisit when llama-cpp-python is upgraded).
GGML_MAX_DIMS = 4
GGML_MAX_NAME_BYTES = 63  # GGML_MAX_NAME is 64 with the terminating NUL

class BadHeader(Exception):
    """The file's header cannot be read as GGUF; the subclass says how."""


class Refused(BadHeader):
    """Not a GGUF file Hearth reads; the message completes a sentence that begins with the
    file's name ("… is not a GGUF model file …")."""


class Truncated(BadHeader):
    """The file ends inside its header."""


class Corrupt(BadHeader):
    """The header's structure contradicts itself; the message says where."""


@dataclass(frozen=True)
class Tensor:
    name: bytes
    ggml_type: int
    dims: tuple[int, ...]
    offset: int  # from the start of the data section
    nbytes: int


@dataclass(frozen=True, eq=False)
class Header:
    """A GGUF header, walked and checked: where each value lies, and the tensors' layout."""

    gguf_version: int
    data: bytes  # the file's first `end` bytes, where every located value lies
    entries: Mapping[str, Value]
    vocabulary: StringArray | None
    tensors: tuple[Tensor, ...]
    alignment: int
    end: int  # where the tensor descriptions end: the header the fingerprint hashes
    data_size: int  # the data section's bytes, as the tensors' sizes and alignment add up

    @property
    def data_start(self) -> int:
        """Where the weights start: the header's end, aligned."""
        return -(-self.end // self.alignment) * self.alignment

    @property
    def parameter_count(self) -> int:
        return sum(math.prod(tensor.dims) for tensor in self.tensors)

    @property
    def metadata(self) -> Metadata:
        return Metadata(self.entries, self.data, self.vocabulary)


@dataclass(frozen=True)
class FileVersion:
    """A file as it is now: a header read for one version is not the next version's."""

    path: Path
    size: int
    mtime_ns: int


def file_version(path: str | os.PathLike) -> FileVersion:
    """The version of the file at `path` now (OSError where there is none to read)."""
    path = Path(path)
    status = path.stat()
    return FileVersion(path, status.st_size, status.st_mtime_ns)


def read_header(version: FileVersion) -> Header:
    """The header of the file at `version`, walked; raises BadHeader, metadata.Invalid (its
    alignment) or OSError. Not kept: reading.py keeps what Hearth reads from it instead."""
    if version.size < MIN_FILE_BYTES:  # an empty file cannot even be mapped
        raise Refused(f"is not a GGUF model file (only {version.size} bytes).")
    with version.path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        return walk(buf)


def walk(buf: mmap.mmap | bytes) -> Header:
    """Walk the header at the start of `buf`, a whole GGUF file; raise BadHeader, or Invalid
    for a data alignment llama.cpp cannot use."""
    file_size = len(buf)
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise Refused("is not a GGUF model file (it does not start with 'GGUF').")
    reader = _Reader(buf)
    reader.pos = len(GGUF_MAGIC)
    version = reader.scalar("<I")
    if version not in SUPPORTED_VERSIONS:
        raise Refused(f"uses GGUF version {version:,}; Hearth reads versions 2 and 3.")
    tensor_count = reader.scalar("<Q")
    kv_count = reader.scalar("<Q")
    for count, cap, least, what in ((tensor_count, MAX_TENSORS, _MIN_TENSOR_BYTES, "tensors"),
                                    (kv_count, MAX_KEYS, _MIN_ENTRY_BYTES, "metadata entries")):
        if count > cap:
            raise Refused(f"has a corrupt header: it claims {count:,} {what}.")
        if count * least > file_size:
            raise Refused(f"is truncated or corrupt: its header lists {count:,} {what}, "
                          f"which cannot fit in {file_size:,} bytes.")

    entries: dict[str, Value] = {}
    for _ in range(kv_count):
        key = reader.key()
        if key in entries:  # llama.cpp refuses duplicates; which one would count is unclear
            raise Corrupt(f"its header holds the key {quote(key)} twice")
        entries[key] = reader.value(reader.scalar("<I"), key)
    alignment = data_alignment(Metadata(entries, buf, None))
    tensors, data_size = _tensor_infos(reader, tensor_count, alignment)

    data = bytes(buf[:reader.pos])  # the values' bytes, kept once the file is closed
    vocabulary = StringArray(data, reader.vocabulary_starts) if reader.vocabulary_starts is not None else None
    return Header(
        gguf_version=version, data=data, entries=entries, vocabulary=vocabulary, tensors=tensors,
        alignment=alignment, end=reader.pos, data_size=data_size,
    )


class _Reader:
    """Sequential little-endian reads over the file, with bounds checks.

    Values are not decoded here, only located: a string or an array is its position and size.
    """

    def __init__(self, buffer: mmap.mmap | bytes):
        self.buf = buffer
        self.size = len(buffer)
        self.pos = 0
        self.strings_left = MAX_HEADER_STRINGS
        self.vocabulary_starts: array | None = None

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

    def value(self, vtype: int, key: str) -> Value:
        if vtype in SCALAR_FORMATS:
            return Scalar(vtype, self.scalar(SCALAR_FORMATS[vtype]))
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
        if elem_type not in MIN_ITEM_BYTES:
            raise Corrupt(f"the metadata entry {quote(key)} has an unknown item type ({elem_type})")
        if count > (self.size - self.pos) // MIN_ITEM_BYTES[elem_type]:
            raise Corrupt(f"the metadata entry {quote(key)} lists {count:,} items, more than the rest of the file can hold")
        entry = Array(elem_type, count, self.pos)
        if elem_type == STRING:
            if count > self.strings_left:
                raise Corrupt(f"its header lists more than {MAX_HEADER_STRINGS:,} strings, far more than any model")
            self.strings_left -= count
            starts = self.strings(count, keep_starts=key == VOCABULARY)
            if key == VOCABULARY:
                self.vocabulary_starts = starts
        else:
            self.pos += count * MIN_ITEM_BYTES[elem_type]
        return entry

    def strings(self, count: int, keep_starts: bool) -> array | None:
        """Walk past `count` strings; return where each starts where asked (the vocabulary's).

        This is the slow part of the walk: a 128k-token vocabulary and 280k merges are 400k
        length-prefixed strings, so it is a tight loop without method calls per string.
        """
        buf, unpack_length = self.buf, LENGTH.unpack_from
        end, pos = self.size, self.pos
        # count <= the bytes left / 8 (checked by the caller), so this is at most their size.
        starts = array("Q", bytes(8 * count)) if keep_starts else None
        for index in range(count):
            if pos + 8 > end:
                raise Truncated
            (length,) = unpack_length(buf, pos)
            pos += 8
            if keep_starts:
                starts[index] = pos
            pos += length
        if pos > end:  # the last string, or one before it, runs past the end
            raise Truncated
        self.pos = pos
        return starts


def _tensor_infos(reader: _Reader, count: int, alignment: int) -> tuple[tuple[Tensor, ...], int]:
    """Every tensor description, checked as llama.cpp's reader checks it; and the size of the
    data section they describe.

    The tensors must lie one after another in the data section, each at the aligned end of
    the one before, so a tensor can neither overlap another nor point outside the section.
    """
    tensors: list[Tensor] = []
    names: set[bytes] = set()
    expected_offset = 0
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
        dims = tuple(reader.scalar("<Q") for _ in range(n_dims))
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
        tensors.append(Tensor(raw_name, ggml_type, dims, offset, nbytes))
    return tuple(tensors), expected_offset
