"""Read and validate a GGUF file's metadata without loading its weights.

Why our own reader: `gguf.GGUFReader` builds Python objects for every element of every
array, so a model with a 262k-token vocabulary takes tens of seconds to open. The model
picker inspects every file it lists, so this reader walks the header with `mmap` and
`struct`, decodes only the tokens it needs (the special ones), and checks that every
tensor's bytes really lie inside the file. llama.cpp never sees a file that fails here.
"""

from __future__ import annotations

import mmap
import os
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from gguf.constants import GGML_QUANT_SIZES, MODEL_ARCH_NAMES, GGMLQuantizationType, LlamaFileType

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
KNOWN_ARCHITECTURES = frozenset(MODEL_ARCH_NAMES.values())
# Hard caps well above any real model (the largest MoE files hold a few thousand tensors
# and a few hundred keys); a count above them is a corrupt or hostile header.
MAX_TENSORS = 1_000_000
MAX_KEYS = 100_000
MAX_DIMS = 8

# Token texts that end an assistant turn in the families Hearth supports (their generation
# configs). They count only where the model's own vocabulary marks them as control tokens:
# Gemma and Phi-3 carry "</s>" as an ordinary user-defined token (an HTML tag), and it must
# not end a reply there. The ids always come from the file, never from a table.
END_OF_TURN_TEXTS = (
    "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|end|>", "<|im_end|>",
    "<end_of_turn>", "</s>", "<|endoftext|>", "<eos>", "<|assistant|>",
)

_TOKEN_TYPE_CONTROL = 3

# GGUF value types: struct format for scalars, None for string (8) and array (9).
_SCALAR_FORMATS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}
_STRING, _ARRAY = 8, 9
_ARRAY_CODES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}


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
            "path": str(self.path),
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


_LENGTH = struct.Struct("<Q")


class _Truncated(Exception):
    pass


class _Corrupt(Exception):
    """The header contradicts itself; the message says where, for the user's error."""


class _HeaderReader:
    """Sequential little-endian reads over a memory map, with bounds checks."""

    def __init__(self, buffer: mmap.mmap):
        self.buf = buffer
        self.size = len(buffer)
        self.pos = 0

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

    def string(self) -> str:
        start, length = self.raw_string()
        return bytes(self.buf[start:start + length]).decode("utf-8", errors="replace")

    def value(self, vtype: int, key: str):
        if vtype in _SCALAR_FORMATS:
            return self.scalar(_SCALAR_FORMATS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            return self.array(key)
        raise _Corrupt(f"the metadata entry {key!r} has an unknown type ({vtype})")

    def array(self, key: str):
        elem_type = self.scalar("<I")
        count = self.scalar("<Q")
        if count > self.size - self.pos:  # every element takes at least one byte
            raise _Corrupt(f"the metadata entry {key!r} lists {count:,} items, more than the rest of the file can hold")
        if elem_type == _STRING:
            return _StringArray(self, count)
        if elem_type in _ARRAY_CODES:
            code = _ARRAY_CODES[elem_type]
            nbytes = count * array(code).itemsize
            if self.pos + nbytes > self.size:
                raise _Truncated
            values = array(code)
            values.frombytes(self.buf[self.pos:self.pos + nbytes])
            self.pos += nbytes
            return values
        if elem_type == _ARRAY:
            return [self.array(key) for _ in range(count)]
        raise _Corrupt(f"the metadata entry {key!r} has an unknown item type ({elem_type})")


class _StringArray:
    """A GGUF string array, walked once; items are decoded only when asked for.

    The walk is the slow part of inspecting a model: a 128k-token vocabulary and 280k merges
    are 400k length-prefixed strings. Only where each string starts is kept (its length sits
    in the 8 bytes before it), in a tight loop without method calls per string.
    """

    def __init__(self, reader: _HeaderReader, count: int):
        self._buf = buf = reader.buf
        unpack_length = _LENGTH.unpack_from
        end, pos = reader.size, reader.pos
        starts = array("Q", bytes(8 * count))
        for index in range(count):
            if pos + 8 > end:
                raise _Truncated
            (length,) = unpack_length(buf, pos)
            pos += 8
            starts[index] = pos
            pos += length
        if pos > end:  # the last string, or one before it, runs past the end
            raise _Truncated
        reader.pos = pos
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, index: int) -> str:
        start = self._starts[index]
        (length,) = _LENGTH.unpack_from(self._buf, start - 8)
        return bytes(self._buf[start:start + length]).decode("utf-8", errors="replace")


def inspect_model(path: str | os.PathLike) -> ModelInfo:
    """Read a GGUF's metadata, or raise ModelFileError saying what is wrong with it."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"Model file not found: {path}")
    if not path.is_file():
        raise ModelFileError(f"Not a file: {path}")
    file_size = path.stat().st_size
    if file_size < 24:
        raise ModelFileError(f"{path.name} is not a GGUF model file (only {file_size} bytes).")
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(path, file_size, buf)
    except _Truncated:
        raise ModelFileError(
            f"{path.name} is truncated: the file ends inside its header. "
            "It was probably not downloaded completely; download it again."
        ) from None
    except _Corrupt as exc:
        raise ModelFileError(
            f"{path.name} is truncated or corrupt: {exc}. If it was downloaded, download it again."
        ) from None
    except OSError as exc:
        raise ModelFileError(f"Could not read {path.name}: {exc.strerror or exc}") from None


def _parse(path: Path, file_size: int, buf: mmap.mmap) -> ModelInfo:
    reader = _HeaderReader(buf)
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise ModelFileError(f"{path.name} is not a GGUF model file (it does not start with 'GGUF').")
    reader.pos = 4
    version = reader.scalar("<I")
    if version not in SUPPORTED_VERSIONS:
        raise ModelFileError(f"{path.name} uses GGUF version {version}; Hearth reads versions 2 and 3.")
    tensor_count = reader.scalar("<Q")
    kv_count = reader.scalar("<Q")
    # A tensor description takes at least 32 bytes and a key-value pair at least 13.
    for count, cap, least, what in ((tensor_count, MAX_TENSORS, 32, "tensors"), (kv_count, MAX_KEYS, 13, "metadata entries")):
        if count > cap:
            raise ModelFileError(f"{path.name} has a corrupt header: it claims {count:,} {what}.")
        if count * least > file_size:
            raise ModelFileError(
                f"{path.name} is truncated or corrupt: its header lists {count:,} {what}, "
                f"which cannot fit in {file_size:,} bytes."
            )

    meta: dict[str, object] = {}
    for _ in range(kv_count):
        key = reader.string()
        meta[key] = reader.value(reader.scalar("<I"), key)

    tensors = [_read_tensor_info(reader, path) for _ in range(tensor_count)]
    alignment = int(meta.get("general.alignment", 32) or 32)
    data_start = -(-reader.pos // alignment) * alignment
    parameter_count = 0
    for name, n_elements, nbytes, offset in tensors:
        parameter_count += n_elements
        if data_start + offset + nbytes > file_size:
            raise ModelFileError(
                f"{path.name} is truncated: tensor {name!r} ends past the end of the file "
                f"({file_size:,} bytes). Download it again."
            )

    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise ModelFileError(f"{path.name} does not say which architecture it is (no general.architecture).")
    if arch not in KNOWN_ARCHITECTURES:
        raise ModelFileError(
            f"{path.name} is a '{arch}' model, an architecture this version of llama.cpp does not know."
        )
    if tensor_count == 0:
        raise ModelFileError(f"{path.name} holds no weights (it is a vocabulary-only file).")
    return _model_info(path, file_size, version, arch, meta, parameter_count)


def _read_tensor_info(reader: _HeaderReader, path: Path) -> tuple[str, int, int, int]:
    name = reader.string()
    n_dims = reader.scalar("<I")
    if n_dims > MAX_DIMS:
        raise ModelFileError(f"{path.name} has a corrupt tensor {name!r} with {n_dims} dimensions.")
    n_elements = 1
    for _ in range(n_dims):
        n_elements *= reader.scalar("<Q")
    ggml_type = reader.scalar("<I")
    offset = reader.scalar("<Q")
    try:
        block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
    except (ValueError, KeyError):
        raise ModelFileError(f"{path.name} uses tensor type {ggml_type}, which llama.cpp does not know.") from None
    return name, n_elements, n_elements // block_size * type_size, offset


def _model_info(path, file_size, version, arch, meta, parameter_count) -> ModelInfo:
    def arch_key(suffix: str):
        return meta.get(f"{arch}.{suffix}")

    tokens = meta.get("tokenizer.ggml.tokens")
    token_types = meta.get("tokenizer.ggml.token_type")
    special: dict[str, int] = {}
    if isinstance(tokens, _StringArray) and token_types is not None:
        for token_id, token_type in enumerate(token_types):
            if token_type == _TOKEN_TYPE_CONTROL:
                special.setdefault(tokens[token_id], token_id)

    def token(key: str) -> Token | None:
        token_id = meta.get(key)
        if token_id is None or not isinstance(tokens, _StringArray) or not 0 <= token_id < len(tokens):
            return None
        return Token(int(token_id), tokens[token_id])

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
        key.removeprefix("tokenizer.chat_template."): value
        for key, value in meta.items()
        if key.startswith("tokenizer.chat_template.") and isinstance(value, str)
    }
    size_label = meta.get("general.size_label")
    return ModelInfo(
        path=path,
        file_size=file_size,
        gguf_version=version,
        architecture=arch,
        name=str(meta.get("general.name") or path.stem),
        size_label=str(size_label) if size_label else None,
        parameter_count=int(meta.get("general.parameter_count") or parameter_count),
        quantization=_quantization(meta),
        context_length=_optional_int(arch_key("context_length")),
        block_count=_optional_int(arch_key("block_count")),
        chat_template=meta.get("tokenizer.chat_template") or None,
        named_chat_templates=named_templates,
        tokenizer_model=meta.get("tokenizer.ggml.model"),
        tokenizer_pre=meta.get("tokenizer.ggml.pre"),
        add_bos_token=meta.get("tokenizer.ggml.add_bos_token"),
        # llama.cpp's default for SentencePiece ("llama") vocabularies when the key is absent.
        add_space_prefix=meta.get("tokenizer.ggml.model") == "llama"
        and bool(meta.get("tokenizer.ggml.add_space_prefix", True)),
        bos=bos,
        eos=eos,
        special_tokens=special,
        end_of_turn=tuple(end_of_turn.values()),
    )


def _optional_int(value) -> int | None:
    return None if value is None else int(value)


def _quantization(meta: dict) -> str:
    """The file type llama.cpp's quantizer recorded, e.g. 'Q4_K_M'."""
    file_type = meta.get("general.file_type")
    if file_type is not None:
        try:
            name = LlamaFileType(int(file_type)).name
            return name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            pass
    return "unknown"
