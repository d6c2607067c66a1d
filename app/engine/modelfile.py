"""Read and validate a GGUF file's metadata without loading its weights.

Why our own reader: `gguf.GGUFReader` builds Python objects for every element of every
array, so a model with a 262k-token vocabulary takes tens of seconds to open. The model
picker inspects every file it lists, so this reader walks the header with `mmap` and
`struct`, decodes only the tokens it needs (the special ones), and checks that every
tensor's bytes really lie inside the file.

A model file is untrusted input. llama.cpp trusts its hyperparameters and stops the whole
process (a failed `GGML_ASSERT`, SIGABRT) on some it cannot use: no layers, a NaN epsilon,
an unknown RoPE scaling type, more experts than it supports. So every value Hearth or
llama.cpp reads goes through one typed, range-checked accessor (`_Metadata`), the limits
llama.cpp asserts on are checked here, and llama.cpp never sees a file that fails: it is
reported like any other corrupt file, in a line that names it. Every count from the file is
weighed against the bytes that are really left before anything is allocated for it.
"""

from __future__ import annotations

import errno
import logging
import math
import mmap
import os
import stat
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from gguf.constants import GGML_QUANT_SIZES, MODEL_ARCH_NAMES, GGMLQuantizationType, LlamaFileType

from .text import printable

log = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
KNOWN_ARCHITECTURES = frozenset(MODEL_ARCH_NAMES.values())
# Hard caps well above any real model (the largest MoE files hold a few thousand tensors,
# a few hundred keys, and a vocabulary plus merges of under a million strings); a count
# above them is a corrupt or hostile header.
MAX_TENSORS = 1 << 18
MAX_KEYS = 100_000
MAX_HEADER_STRINGS = 2_000_000  # walking each costs time: this bounds a header to about a second
MAX_KEY_BYTES = 256
MAX_TEXT_BYTES = 1024  # a name, a size label, an architecture or tokenizer name
MAX_TEMPLATE_BYTES = 1 << 20  # real chat templates are a few KB, the largest tens of KB
MAX_TOKEN_BYTES = 256  # a special token's text (real ones are a few characters)

# What the bundled llama.cpp asserts on. Each was checked by loading a file with a value just
# past it (tests/engine/test_hostile_models.py builds them); revisit when llama-cpp-python
# is upgraded.
LLAMA_MAX_LAYERS = 512
LLAMA_MAX_EXPERTS = 1024
GGML_MAX_DIMS = 4
GGML_MAX_NAME_BYTES = 63  # GGML_MAX_NAME is 64 with the terminating NUL
ROPE_SCALING_TYPES = frozenset({"none", "linear", "yarn", "longrope"})
MAX_CONTEXT = 2**31 - 1  # llama-cpp-python reads the training context as a C int
MAX_WIDTH = 1 << 20  # embedding, feed-forward, head sizes and head counts: real ones are < 65536

# Token texts that end an assistant turn in the families Hearth supports (their generation
# configs). They count only where the model's own vocabulary marks them as control tokens:
# Gemma and Phi-3 carry "</s>" as an ordinary user-defined token (an HTML tag), and it must
# not end a reply there. The ids always come from the file, never from a table.
END_OF_TURN_TEXTS = (
    "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|end|>", "<|im_end|>",
    "<end_of_turn>", "</s>", "<|endoftext|>", "<eos>", "<|assistant|>",
)

_TOKEN_TYPE_CONTROL, _TOKEN_TYPE_BYTE = 3, 6
_BYTE_TOKENS = frozenset(f"<0x{byte:02X}>" for byte in range(256))  # SentencePiece's byte fallback
_VOCABULARY = "tokenizer.ggml.tokens"  # the one string array looked up by index
_CHAT_TEMPLATE = "tokenizer.chat_template"
_ATTENTION_WEIGHTS = ("attn_q", "attn_k", "attn_v", "attn_qkv")  # blk.N.<name>.weight

# GGUF value types.
_U8, _I8, _U16, _I16, _U32, _I32, _F32, _BOOL, _STRING, _ARRAY, _U64, _I64, _F64 = range(13)
_SCALAR_FORMATS = {
    _U8: "<B", _I8: "<b", _U16: "<H", _I16: "<h", _U32: "<I", _I32: "<i", _F32: "<f", _BOOL: "<?",
    _U64: "<Q", _I64: "<q", _F64: "<d",
}
_INTEGER_TYPES = frozenset({_U8, _I8, _U16, _I16, _U32, _I32, _U64, _I64})
_FLOAT_TYPES = frozenset({_F32, _F64})
_ARRAY_CODES = {_U8: "B", _I8: "b", _U16: "H", _I16: "h", _U32: "I", _I32: "i", _F32: "f", _BOOL: "B",
                _U64: "Q", _I64: "q", _F64: "d"}
# The fewest bytes one array item of each type takes: a string is at least its 8-byte length.
_MIN_ITEM_BYTES = {vtype: struct.calcsize(fmt) for vtype, fmt in _SCALAR_FORMATS.items()} | {_STRING: 8}
_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1


class ModelFileError(Exception):
    """A model file that Hearth cannot use; the message is written for the user."""


@dataclass(frozen=True)
class Token:
    id: int
    text: str


@dataclass(frozen=True)
class ModelInfo:
    """What a GGUF file says about itself, read from its header alone."""

    path: Path
    file_size: int
    gguf_version: int
    architecture: str
    name: str
    size_label: str | None
    parameter_count: int
    quantization: str
    context_length: int | None
    block_count: int | None
    chat_template: str | None
    named_chat_templates: dict[str, str]
    tokenizer_model: str | None
    tokenizer_pre: str | None
    add_bos_token: bool | None
    add_space_prefix: bool  # SentencePiece writes a "▁" before the first word of a text
    bos: Token | None
    eos: Token | None
    special_tokens: dict[str, int] = field(repr=False)  # control tokens: text -> id
    end_of_turn: tuple[Token, ...] = ()

    @property
    def has_chat_template(self) -> bool:
        return bool(self.chat_template)

    def to_json(self) -> dict:
        """A plain dict for `hearth inspect` and the model picker."""
        return {
            "path": printable(str(self.path), limit=None),
            "file_size": self.file_size,
            "gguf_version": self.gguf_version,
            "architecture": self.architecture,
            "name": self.name,
            "size_label": self.size_label,
            "parameter_count": self.parameter_count,
            "quantization": self.quantization,
            "context_length": self.context_length,
            "block_count": self.block_count,
            "tokenizer_model": self.tokenizer_model,
            "tokenizer_pre": self.tokenizer_pre,
            "add_bos_token": self.add_bos_token,
            "add_space_prefix": self.add_space_prefix,
            "bos_token": _token_json(self.bos),
            "eos_token": _token_json(self.eos),
            "end_of_turn_tokens": [_token_json(t) for t in self.end_of_turn],
            "has_chat_template": self.has_chat_template,
            "chat_template": self.chat_template,
            "named_chat_templates": self.named_chat_templates,
        }


def _token_json(token: Token | None) -> dict | None:
    return None if token is None else {"id": token.id, "text": token.text}


def _quote(text: str) -> str:
    return f"'{printable(text, limit=60)}'"


def _key(key: str) -> str:
    """A metadata key as messages name it (keys come from the file too)."""
    return printable(key, limit=60)


# --- reading the header -------------------------------------------------------------------------

_LENGTH = struct.Struct("<Q")


class _Truncated(Exception):
    pass


class _Corrupt(Exception):
    """The header's structure contradicts itself; the message says where."""


class _Invalid(Exception):
    """A value that is the wrong type or out of range; the message names the key."""


@dataclass(frozen=True)
class _Scalar:
    vtype: int
    value: int | float | bool


@dataclass(frozen=True)
class _String:
    start: int
    length: int  # bytes


@dataclass(frozen=True)
class _Array:
    elem_type: int
    count: int
    start: int  # the first item's first byte


class _HeaderReader:
    """Sequential little-endian reads over a memory map, with bounds checks.

    Values are not decoded here, only located: a string or an array is its position and size,
    so a hostile header costs what it is, never a multiple of it.
    """

    def __init__(self, buffer: mmap.mmap):
        self.buf = buffer
        self.size = len(buffer)
        self.pos = 0
        self.strings_left = MAX_HEADER_STRINGS
        self.vocabulary: _StringArray | None = None

    def scalar(self, fmt: str):
        width = struct.calcsize(fmt)
        if self.pos + width > self.size:
            raise _Truncated
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += width
        return value

    def raw_string(self) -> tuple[int, int]:
        """Return (offset, length) of a string and skip past it."""
        length = self.scalar("<Q")
        if length > self.size - self.pos:
            raise _Truncated
        start = self.pos
        self.pos += length
        return start, length

    def key(self) -> str:
        start, length = self.raw_string()
        if length > MAX_KEY_BYTES:
            raise _Corrupt(f"its header holds a key {length:,} bytes long")
        return bytes(self.buf[start:start + length]).decode("utf-8", errors="replace")

    def value(self, vtype: int, key: str) -> _Scalar | _String | _Array:
        if vtype in _SCALAR_FORMATS:
            return _Scalar(vtype, self.scalar(_SCALAR_FORMATS[vtype]))
        if vtype == _STRING:
            return _String(*self.raw_string())
        if vtype == _ARRAY:
            return self.array(key)
        raise _Corrupt(f"the metadata entry {_quote(key)} has an unknown type ({vtype})")

    def array(self, key: str) -> _Array:
        elem_type = self.scalar("<I")
        count = self.scalar("<Q")
        if elem_type == _ARRAY:  # llama.cpp's reader refuses them too
            raise _Corrupt(f"the metadata entry {_quote(key)} is a list of lists, which llama.cpp cannot read")
        if elem_type not in _MIN_ITEM_BYTES:
            raise _Corrupt(f"the metadata entry {_quote(key)} has an unknown item type ({elem_type})")
        if count > (self.size - self.pos) // _MIN_ITEM_BYTES[elem_type]:
            raise _Corrupt(f"the metadata entry {_quote(key)} lists {count:,} items, more than the rest of the file can hold")
        entry = _Array(elem_type, count, self.pos)
        if elem_type == _STRING:
            if count > self.strings_left:
                raise _Corrupt(f"its header lists more than {MAX_HEADER_STRINGS:,} strings, far more than any model")
            self.strings_left -= count
            strings = _StringArray(self, count, keep_index=key == _VOCABULARY)
            if key == _VOCABULARY:
                self.vocabulary = strings
        else:
            self.pos += count * _MIN_ITEM_BYTES[elem_type]
        return entry


class _StringArray:
    """A GGUF string array, walked once; items are decoded only when asked for.

    The walk is the slow part of inspecting a model: a 128k-token vocabulary and 280k merges
    are 400k length-prefixed strings. Only the vocabulary keeps where each string starts (its
    length sits in the 8 bytes before it), in a tight loop without method calls per string;
    every other string array is only walked past.
    """

    def __init__(self, reader: _HeaderReader, count: int, keep_index: bool):
        self._buf = buf = reader.buf
        unpack_length = _LENGTH.unpack_from
        end, pos = reader.size, reader.pos
        # count <= the bytes left / 8 (checked by the caller), so this is at most their size.
        starts = array("Q", bytes(8 * count)) if keep_index else None
        for index in range(count):
            if pos + 8 > end:
                raise _Truncated
            (length,) = unpack_length(buf, pos)
            pos += 8
            if keep_index:
                starts[index] = pos
            pos += length
        if pos > end:  # the last string, or one before it, runs past the end
            raise _Truncated
        reader.pos = pos
        self._starts = starts or array("Q")

    def __len__(self) -> int:
        return len(self._starts)

    def byte_length(self, index: int) -> int:
        return _LENGTH.unpack_from(self._buf, self._starts[index] - 8)[0]

    def __getitem__(self, index: int) -> str:
        start = self._starts[index]
        return bytes(self._buf[start:start + self.byte_length(index)]).decode("utf-8", errors="replace")


class _Metadata:
    """The header's key-value pairs, read only as the type and range each use needs.

    The one place where a value from the file becomes a Python value: every method checks the
    GGUF type (a count is an integer, never a float, a bool or a list), the range, and for
    text its size, and raises _Invalid naming the key and the value otherwise.
    """

    def __init__(self, entries: dict[str, _Scalar | _String | _Array], buf: mmap.mmap,
                 vocabulary: _StringArray | None):
        self._entries = entries
        self._buf = buf
        self.vocabulary = vocabulary

    def keys(self):
        return self._entries.keys()

    def integer(self, key: str, low: int = 0, high: int = _U32_MAX, what: str | None = None,
                types: frozenset[int] = _INTEGER_TYPES) -> int | None:
        """A whole number from `low` to `high`, stored as one of `types` (a bool is not one)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not (isinstance(entry, _Scalar) and entry.vtype in types and low <= entry.value <= high):
            raise self.invalid(key, f"expected {what or f'a whole number from {low:,} to {high:,}'}")
        return entry.value

    def number(self, key: str, minimum: float = 0.0, *, above: bool = False) -> float | None:
        """A finite float at least (or, with `above`, more than) `minimum`."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expected = f"expected a finite number {'above' if above else 'of at least'} {minimum:g}"
        if not (isinstance(entry, _Scalar) and entry.vtype in _FLOAT_TYPES):
            raise self.invalid(key, expected)
        value = entry.value
        if not math.isfinite(value) or value < minimum or (above and value == minimum):
            raise self.invalid(key, expected)
        return value

    def flag(self, key: str) -> bool | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not (isinstance(entry, _Scalar) and entry.vtype == _BOOL):
            raise self.invalid(key, "expected true or false")
        return entry.value

    def text(self, key: str, limit: int = MAX_TEXT_BYTES) -> str | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not isinstance(entry, _String):
            raise self.invalid(key, "expected text")
        if entry.length > limit:
            raise _Invalid(f"its {_key(key)} is {entry.length:,} bytes of text (expected at most {limit:,})")
        return bytes(self._buf[entry.start:entry.start + entry.length]).decode("utf-8", errors="replace")

    def vocabulary_size(self) -> int | None:
        """How many tokens the vocabulary lists; it must be a list of texts."""
        entry = self._entries.get(_VOCABULARY)
        if entry is None:
            return None
        if not (isinstance(entry, _Array) and entry.elem_type == _STRING):
            raise self.invalid(_VOCABULARY, "expected a list of texts")
        return entry.count

    def strings(self, key: str) -> None:
        """Check that `key`, if present, is a list of texts (llama.cpp reads it as one)."""
        entry = self._entries.get(key)
        if entry is not None and not (isinstance(entry, _Array) and entry.elem_type == _STRING):
            raise self.invalid(key, "expected a list of texts")

    def numbers(self, key: str, elem_type: int, count: int | None, what: str) -> array | None:
        """A list of exactly `elem_type` items, as many as `count` (None: any number).

        llama.cpp reads these lists as raw C arrays of that type and length, so a list of
        another type or length is refused rather than converted.
        """
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not (isinstance(entry, _Array) and entry.elem_type == elem_type):
            raise self.invalid(key, f"expected a list of {what}")
        if count is not None and entry.count != count:
            raise _Invalid(f"its {_key(key)} lists {entry.count:,} values for {count:,} tokens")
        values = array(_ARRAY_CODES[elem_type])
        values.frombytes(self._buf[entry.start:entry.start + entry.count * values.itemsize])
        return values

    def per_layer(self, key: str, n_layer: int, high: int = MAX_WIDTH) -> tuple[int, ...] | None:
        """A value llama.cpp takes either once for every layer or as a list of one per layer."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if isinstance(entry, _Scalar):
            return (self.integer(key, 0, high),) * n_layer
        if not (isinstance(entry, _Array) and entry.elem_type in _INTEGER_TYPES):
            raise self.invalid(key, "expected a whole number, or a list of one per layer")
        if entry.count != n_layer:
            raise _Invalid(f"its {_key(key)} lists {entry.count:,} values for {n_layer:,} layers")
        values = self.numbers(key, entry.elem_type, n_layer, "whole numbers")
        if not all(0 <= value <= high for value in values):
            raise _Invalid(f"its {_key(key)} holds a value outside 0 to {high:,}")
        return tuple(values)

    def invalid(self, key: str, expected: str) -> _Invalid:
        return _Invalid(f"its {_key(key)} is {self.describe(key)} ({expected})")

    def describe(self, key: str) -> str:
        """The value of `key` as a message shows it: short, whatever the file holds."""
        entry = self._entries.get(key)
        if entry is None:
            return "missing"
        if isinstance(entry, _String):
            head = bytes(self._buf[entry.start:entry.start + min(entry.length, 240)]).decode("utf-8", errors="replace")
            return _quote(head if entry.length <= 240 else head + "…")
        if isinstance(entry, _Array):
            return f"a list of {entry.count:,} item{'' if entry.count == 1 else 's'}"
        if entry.vtype == _BOOL:
            return "true" if entry.value else "false"
        if entry.vtype in _FLOAT_TYPES:
            if math.isnan(entry.value):
                return "NaN"
            shown = f"{entry.value:.7g}"  # a float that looks whole still reads as a float: "2.0"
            return shown + ".0" if shown.lstrip("-").isdigit() else shown
        return f"{entry.value:,}"


def inspect_model(path: str | os.PathLike) -> ModelInfo:
    """Read a GGUF's metadata, or raise ModelFileError saying what is wrong with it."""
    path = Path(path)
    name = printable(path.name)
    file_size = _regular_file_size(path, name)
    if file_size < 24:
        raise ModelFileError(f"{name} is not a GGUF model file (only {file_size} bytes).")
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(path, file_size, buf)
    except _Truncated:
        raise ModelFileError(
            f"{name} is truncated: the file ends inside its header. "
            "It was probably not downloaded completely; download it again."
        ) from None
    except _Corrupt as exc:
        raise ModelFileError(
            f"{name} is truncated or corrupt: {exc}. If it was downloaded, download it again."
        ) from None
    except _Invalid as exc:
        raise ModelFileError(
            f"{name} is corrupt: {exc}. Hearth will not load it; if it was downloaded, download it again."
        ) from None
    except OSError as exc:
        raise ModelFileError(f"Could not read {name}: {exc.strerror or type(exc).__name__}") from None
    except ModelFileError:
        raise
    except Exception:  # a reader bug on one odd file must not become a traceback or a crash report
        log.exception("inspecting %s failed", path)
        raise ModelFileError(f"Hearth could not read {name}: it is damaged in a way Hearth did not expect "
                             "(the log has the details).") from None


def _regular_file_size(path: Path, name: str) -> int:
    """The file's size, or a ModelFileError saying why there is no file to read."""
    try:
        status = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise ModelFileError(f"{name} is a link to a file that is not there.") from None
        raise ModelFileError(f"Model file not found: {printable(str(path), limit=200)}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ModelFileError(f"{name} is a symbolic link that leads back to itself (a link loop).") from None
        if exc.errno == errno.EACCES:
            raise ModelFileError(f"Hearth may not read {name} (permission denied).") from None
        raise ModelFileError(f"Could not read {name}: {exc.strerror or type(exc).__name__}") from None
    if not stat.S_ISREG(status.st_mode):
        raise ModelFileError(f"Not a file: {printable(str(path), limit=200)}")
    return status.st_size


def _parse(path: Path, file_size: int, buf: mmap.mmap) -> ModelInfo:
    name = printable(path.name)
    reader = _HeaderReader(buf)
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise ModelFileError(f"{name} is not a GGUF model file (it does not start with 'GGUF').")
    reader.pos = 4
    version = reader.scalar("<I")
    if version not in SUPPORTED_VERSIONS:
        raise ModelFileError(f"{name} uses GGUF version {version:,}; Hearth reads versions 2 and 3.")
    tensor_count = reader.scalar("<Q")
    kv_count = reader.scalar("<Q")
    # A tensor description takes at least 32 bytes and a key-value pair at least 13.
    for count, cap, least, what in ((tensor_count, MAX_TENSORS, 32, "tensors"), (kv_count, MAX_KEYS, 13, "metadata entries")):
        if count > cap:
            raise ModelFileError(f"{name} has a corrupt header: it claims {count:,} {what}.")
        if count * least > file_size:
            raise ModelFileError(
                f"{name} is truncated or corrupt: its header lists {count:,} {what}, "
                f"which cannot fit in {file_size:,} bytes."
            )

    entries: dict[str, _Scalar | _String | _Array] = {}
    for _ in range(kv_count):
        key = reader.key()
        if key in entries:  # llama.cpp refuses duplicates; which one would count is unclear
            raise _Corrupt(f"its header holds the key {_quote(key)} twice")
        entries[key] = reader.value(reader.scalar("<I"), key)
    meta = _Metadata(entries, buf, reader.vocabulary)

    alignment = _alignment(meta)
    parameter_count, data_size, tensor_names = _read_tensor_infos(reader, tensor_count, alignment)
    data_start = -(-reader.pos // alignment) * alignment
    if data_size and data_start + data_size > file_size:
        raise ModelFileError(
            f"{name} is truncated: its weights end at byte {data_start + data_size:,}, past the end of "
            f"the file ({file_size:,} bytes). Download it again."
        )

    arch = meta.text("general.architecture")
    if arch is None:
        raise ModelFileError(f"{name} does not say which architecture it is (no general.architecture).")
    if arch not in KNOWN_ARCHITECTURES:
        raise ModelFileError(f"{name} is a {_quote(arch)} model, an architecture this version of llama.cpp does not know.")
    if tensor_count == 0:
        raise ModelFileError(f"{name} holds no weights (it is a vocabulary-only file).")
    if arch != "clip":  # llama.cpp reads no hyperparameters from a vision projector
        _check_hyperparameters(meta, arch, tensor_names)
    return _model_info(path, file_size, version, arch, meta, parameter_count)


def _alignment(meta: _Metadata) -> int:
    """The data section's alignment: llama.cpp reads it as a uint32 power of two."""
    key = "general.alignment"
    value = meta.integer(key, 1, _U32_MAX, what="a power of two stored as a uint32", types=frozenset({_U32}))
    if value is None:
        return 32
    if value & (value - 1):
        raise meta.invalid(key, "expected a power of two")
    return value


def _read_tensor_infos(reader: _HeaderReader, count: int, alignment: int) -> tuple[int, int, set[bytes]]:
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
        shown = _quote(raw_name.decode("utf-8", errors="replace"))
        if length > GGML_MAX_NAME_BYTES:
            raise _Corrupt(f"the tensor {shown} has a name {length:,} bytes long (llama.cpp allows {GGML_MAX_NAME_BYTES})")
        if raw_name in names:
            raise _Corrupt(f"it holds the tensor {shown} twice")
        names.add(raw_name)
        n_dims = reader.scalar("<I")
        if n_dims > GGML_MAX_DIMS:
            raise _Corrupt(f"the tensor {shown} has {n_dims:,} dimensions (llama.cpp allows {GGML_MAX_DIMS})")
        dims = [reader.scalar("<Q") for _ in range(n_dims)]
        n_elements = math.prod(dims)
        if any(dim >= 2**63 for dim in dims) or n_elements >= 2**63:
            raise _Corrupt(f"the tensor {shown} has an impossible shape")
        ggml_type = reader.scalar("<I")
        offset = reader.scalar("<Q")
        try:
            block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
        except (ValueError, KeyError):
            raise _Corrupt(f"the tensor {shown} has type {ggml_type:,}, which llama.cpp does not know") from None
        if dims and dims[0] % block_size:
            raise _Corrupt(f"the tensor {shown} has rows of {dims[0]:,} values, not whole blocks of {block_size}")
        if offset != expected_offset:
            raise _Corrupt(f"the tensor {shown} starts at byte {offset:,} of the data instead of {expected_offset:,}")
        nbytes = n_elements // block_size * type_size
        expected_offset += nbytes + (-nbytes % alignment)
        parameters += n_elements
    return parameters, expected_offset, names


# --- the hyperparameters llama.cpp trusts -----------------------------------------------------


def _check_hyperparameters(meta: _Metadata, arch: str, tensor_names: set[bytes]) -> None:
    """Refuse the values llama.cpp aborts on (and their obvious neighbours) before it sees them.

    Absent keys are llama.cpp's to refuse (it says which, without aborting); these are the
    present ones that would get past it to an assertion, at load or at the first reply.
    """
    def key(suffix: str) -> str:
        return f"{arch}.{suffix}"

    meta.integer(key("context_length"), 1, MAX_CONTEXT)
    n_embd = meta.integer(key("embedding_length"), 1, MAX_WIDTH)
    n_layer = meta.integer(key("block_count"), 1, LLAMA_MAX_LAYERS, what=f"1 to {LLAMA_MAX_LAYERS} layers")
    meta.integer(key("vocab_size"), 0, _U32_MAX)
    for epsilon in ("attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "attention.group_norm_epsilon"):
        meta.number(key(epsilon), 0.0, above=True)  # NaN or negative: GGML_ASSERT(eps >= 0)
    for base in ("rope.freq_base", "rope.freq_base_swa"):
        meta.number(key(base), 0.0, above=True)
    for factor in ("rope.scaling.factor", "rope.scale_linear", "rope.scaling.attn_factor"):
        meta.number(key(factor), 0.0)
    scaling = meta.text(key("rope.scaling.type"))
    if scaling is not None and scaling not in ROPE_SCALING_TYPES:
        raise _Invalid(f"its {_key(key('rope.scaling.type'))} is {_quote(scaling)} "
                       f"(expected one of {', '.join(sorted(ROPE_SCALING_TYPES))})")
    _check_experts(meta, key)
    if n_layer is not None:
        _check_attention(meta, key, n_layer, n_embd, tensor_names)


def _check_experts(meta: _Metadata, key) -> None:
    """llama.cpp's mixture-of-experts assertions, in the order it makes them."""
    n_expert = meta.integer(key("expert_count"), 0, LLAMA_MAX_EXPERTS,
                            what=f"at most {LLAMA_MAX_EXPERTS:,} experts") or 0
    used = meta.integer(key("expert_used_count")) or 0
    groups = meta.integer(key("expert_group_count")) or 0
    groups_used = meta.integer(key("expert_group_used_count")) or 0
    if n_expert == 0:
        for suffix, value in (("expert_used_count", used), ("expert_group_count", groups)):
            if value:
                raise meta.invalid(key(suffix), "expected 0: the model has no experts")
        return
    if not 1 <= used <= n_expert:
        raise meta.invalid(key("expert_used_count"), f"expected 1 to {n_expert:,}, its expert count")
    if groups >= n_expert:
        raise meta.invalid(key("expert_group_count"), f"expected fewer than its {n_expert:,} experts")
    if groups > 1:
        if n_expert % groups:
            raise meta.invalid(key("expert_group_count"), f"expected a divisor of its {n_expert:,} experts")
        if not 0 < groups_used < groups:
            raise meta.invalid(key("expert_group_used_count"), f"expected 1 to {groups - 1:,}")


def _check_attention(meta: _Metadata, key, n_layer: int, n_embd: int | None, tensor_names: set[bytes]) -> None:
    """Head counts and sizes, per layer where the file gives them per layer."""
    meta.per_layer(key("feed_forward_length"), n_layer)
    heads = meta.per_layer(key("attention.head_count"), n_layer)
    kv_heads = meta.per_layer(key("attention.head_count_kv"), n_layer) or heads
    for layer, (n_head, n_kv) in enumerate(zip(heads or (), kv_heads or ())):
        if n_head and (n_kv == 0 or n_head % n_kv):  # grouped-query attention shares K/V heads evenly
            raise _Invalid(f"its {_key(key('attention.head_count_kv'))} is {n_kv:,} in layer {layer}, "
                           f"which does not divide its {n_head:,} attention heads")
        if not n_head and any(f"blk.{layer}.{w}.weight".encode() in tensor_names for w in _ATTENTION_WEIGHTS):
            # llama.cpp shapes the weights by layer 0 and the graph by each layer: a failed assert
            raise _Invalid(f"its {_key(key('attention.head_count'))} gives layer {layer} no attention heads, "
                           "but the layer holds attention weights")
    key_length = meta.integer(key("attention.key_length"), 1, MAX_WIDTH)
    meta.integer(key("attention.value_length"), 1, MAX_WIDTH)
    key_length_swa = meta.integer(key("attention.key_length_swa"), 1, MAX_WIDTH)
    meta.integer(key("attention.value_length_swa"), 1, MAX_WIDTH)
    # llama.cpp sizes heads by the first layer's head count; with none it uses no RoPE at all.
    if not heads or heads[0] == 0:
        return
    head_size = key_length or (n_embd // heads[0] if n_embd else None)
    _check_rope_dimensions(meta, key("rope.dimension_count"), head_size, rotates_whole_head=True)
    _check_rope_dimensions(meta, key("rope.dimension_count_swa"), key_length_swa or head_size, rotates_whole_head=False)


def _check_rope_dimensions(meta: _Metadata, key: str, head_size: int | None, rotates_whole_head: bool) -> None:
    """RoPE rotates pairs of values within a head: an odd count, or more than the head holds,
    fails a GGML_ASSERT at the first reply, and 0 makes it never return. Without the key,
    llama.cpp rotates the whole head, so then the head size itself must be even."""
    rotated = meta.integer(key, 0, _U32_MAX)
    if rotated is None:
        if rotates_whole_head and head_size is not None and (head_size == 0 or head_size % 2):
            raise _Invalid(f"its attention heads are {head_size:,} values wide, which RoPE cannot rotate "
                           "(expected an even size)")
        return
    if rotated == 0 or rotated % 2 or (head_size is not None and rotated > head_size):
        limit = f" up to the head size, {head_size:,}" if head_size else ""
        raise meta.invalid(key, f"expected an even number{limit}")


# --- what Hearth itself reads -------------------------------------------------------------------


def _model_info(path: Path, file_size: int, version: int, arch: str, meta: _Metadata, parameter_count: int) -> ModelInfo:
    n_tokens = meta.vocabulary_size()
    if n_tokens == 0:  # llama.cpp asserts n_vocab > 0 at the first reply
        raise _Invalid(f"its {_VOCABULARY} lists no tokens")
    token_types = meta.numbers("tokenizer.ggml.token_type", _I32, n_tokens, "32-bit token types")
    meta.numbers("tokenizer.ggml.scores", _F32, n_tokens, "32-bit scores")
    meta.strings("tokenizer.ggml.merges")
    tokenizer_model = meta.text("tokenizer.ggml.model")
    vocabulary = meta.vocabulary if n_tokens else None

    special: dict[str, int] = {}
    byte_tokens: set[str] = set()
    if vocabulary is not None and token_types is not None:
        for token_id, token_type in enumerate(token_types):
            if token_type == _TOKEN_TYPE_CONTROL and vocabulary.byte_length(token_id) <= MAX_TOKEN_BYTES:
                special.setdefault(vocabulary[token_id], token_id)
            elif token_type == _TOKEN_TYPE_BYTE and vocabulary.byte_length(token_id) == 6:
                byte_tokens.add(vocabulary[token_id])
    if vocabulary is not None and tokenizer_model == "llama" and len(byte_tokens & _BYTE_TOKENS) < 256:
        # A text with a character the vocabulary lacks falls back to these by name; llama.cpp
        # throws through its C interface where one is missing, which aborts the process.
        raise _Invalid(f"its SentencePiece vocabulary lacks {256 - len(byte_tokens & _BYTE_TOKENS)} of the 256 "
                       "byte tokens <0x00>…<0xFF> (llama.cpp stops on text that needs them)")

    def token(key: str) -> Token | None:
        # Out of range is llama.cpp's "bad special token" warning, not an error: it ignores it.
        token_id = meta.integer(key, 0, _U64_MAX, what="a token number")
        if token_id is None or vocabulary is None or token_id >= len(vocabulary):
            return None
        if vocabulary.byte_length(token_id) > MAX_TOKEN_BYTES:
            raise _Invalid(f"its {_key(key)} names a token {vocabulary.byte_length(token_id):,} bytes long "
                           f"(expected at most {MAX_TOKEN_BYTES})")
        return Token(token_id, vocabulary[token_id])

    bos, eos = token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")
    end_of_turn: dict[int, Token] = {}
    for candidate in (token("tokenizer.ggml.eot_token_id"), token("tokenizer.ggml.eom_token_id"), eos):
        if candidate is not None:
            end_of_turn[candidate.id] = candidate
    for text in END_OF_TURN_TEXTS:
        if text in special and special[text] not in end_of_turn:
            # A BOS that doubles as end-of-text (Phi-4's <|endoftext|>) still ends a turn.
            end_of_turn[special[text]] = Token(special[text], text)

    named_templates = {
        key.removeprefix(_CHAT_TEMPLATE + "."): meta.text(key, MAX_TEMPLATE_BYTES)
        for key in meta.keys()
        if key.startswith(_CHAT_TEMPLATE + ".")
    }
    return ModelInfo(
        path=path,
        file_size=file_size,
        gguf_version=version,
        architecture=arch,
        name=printable(meta.text("general.name") or path.stem, limit=None),
        size_label=meta.text("general.size_label") or None,
        parameter_count=meta.integer("general.parameter_count", 0, _U64_MAX) or parameter_count,
        quantization=_quantization(meta),
        context_length=meta.integer(f"{arch}.context_length", 0, MAX_CONTEXT),
        block_count=meta.integer(f"{arch}.block_count", 0, LLAMA_MAX_LAYERS),
        chat_template=meta.text(_CHAT_TEMPLATE, MAX_TEMPLATE_BYTES) or None,
        named_chat_templates=named_templates,
        tokenizer_model=tokenizer_model,
        tokenizer_pre=meta.text("tokenizer.ggml.pre"),
        add_bos_token=meta.flag("tokenizer.ggml.add_bos_token"),
        # llama.cpp's default for SentencePiece ("llama") vocabularies when the key is absent.
        add_space_prefix=tokenizer_model == "llama" and meta.flag("tokenizer.ggml.add_space_prefix") is not False,
        bos=bos,
        eos=eos,
        special_tokens=special,
        end_of_turn=tuple(end_of_turn.values()),
    )


def _quantization(meta: _Metadata) -> str:
    """The file type llama.cpp's quantizer recorded, e.g. 'Q4_K_M'; a newer one is 'unknown'."""
    file_type = meta.integer("general.file_type", 0, _U32_MAX)
    if file_type is not None:
        try:
            return LlamaFileType(file_type).name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            pass
    return "unknown"
