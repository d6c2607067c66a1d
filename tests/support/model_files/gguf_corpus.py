"""Build GGUF files byte by byte, so tests can write any value a hostile file could hold.

`gguf.GGUFWriter` refuses or converts the values these tests need (a float where a count
goes, an array of arrays, a string array announced as longer than it is), so this writes the
format directly: a header, typed key-value pairs, tensor descriptions and the data section.

- `tiny_llama()` is a real, loadable llama.cpp model (two layers, 32 wide, a 262-token
  SentencePiece vocabulary with byte fallback); `tiny_llama(**changes)` the same model with
  hyperparameters changed and its tensors shaped to match, so llama.cpp gets past its shape
  checks to the hyperparameter it is being tested on.
- `damaged_copy()` rewrites a real model's header with changed metadata and leaves the
  weights as a hole (a sparse file of the original size): a 253 MB model costs a few MB.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from support.model_files.tiny_gguf import ECHO_TEMPLATE

# GGUF value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
_FORMATS = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
            U64: "<Q", I64: "<q", F64: "<d"}
GGML_F32 = 0
ALIGNMENT = 32


@dataclass(frozen=True)
class Value:
    """One encoded metadata value: its GGUF type and its bytes (after the type field)."""

    vtype: int
    payload: bytes


def scalar(vtype: int, value) -> Value:
    return Value(vtype, struct.pack(_FORMATS[vtype], value))


def u32(value: int) -> Value:
    return scalar(U32, value)


def f32(value: float) -> Value:
    return scalar(F32, value)


def boolean(value: bool) -> Value:
    return scalar(BOOL, value)


def _string_bytes(text: str | bytes) -> bytes:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def string(text: str | bytes) -> Value:
    return Value(STRING, _string_bytes(text))


def array(elem_type: int, items, count: int | None = None) -> Value:
    """An array of scalars or strings; `count` overrides the announced number of items."""
    items = list(items)
    if elem_type == STRING:
        body = b"".join(_string_bytes(item) for item in items)
    elif elem_type == ARRAY:
        body = b"".join(item.payload for item in items)  # each item an array Value
    else:
        body = b"".join(struct.pack(_FORMATS[elem_type], item) for item in items)
    announced = len(items) if count is None else count
    return Value(ARRAY, struct.pack("<IQ", elem_type, announced) + body)


def nested_array(depth: int) -> Value:
    """An array holding an array holding ... `depth` levels, the innermost one empty."""
    return Value(ARRAY, struct.pack("<IQ", ARRAY, 1) * (depth - 1) + struct.pack("<IQ", U32, 0))


def raw(vtype: int, payload: bytes) -> Value:
    """Any type number with any bytes after it (unknown types, truncated values)."""
    return Value(vtype, payload)


def encode_kv(key: str | bytes, value: Value) -> bytes:
    return _string_bytes(key) + struct.pack("<I", value.vtype) + value.payload


# --- a tiny, real llama model ------------------------------------------------------------------

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")
WORDS = ("▁hello", "▁world", "▁the", "▁a")
TOKEN_TYPES = {"<unk>": 2, "<s>": 3, "</s>": 3}  # unknown, control
BYTE_TYPE, NORMAL_TYPE = 6, 1


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """SentencePiece-style tokens with all 256 byte tokens, so any text can be tokenized."""
    tokens = [*SPECIAL_TOKENS, *(f"<0x{b:02X}>" for b in range(256)), *WORDS]
    scores = [0.0] * len(SPECIAL_TOKENS) + [0.0] * 256 + [-float(i) for i in range(len(WORDS))]
    types = [TOKEN_TYPES[t] for t in SPECIAL_TOKENS] + [BYTE_TYPE] * 256 + [NORMAL_TYPE] * len(WORDS)
    return tokens, scores, types


@dataclass(frozen=True)
class Shape:
    """The hyperparameters the tiny model's tensors are shaped by."""

    n_embd: int = 32
    n_layer: int = 2
    n_head: int = 4
    n_head_kv: int = 2
    n_ff: int = 64
    context: int = 128


@dataclass
class GGUF:
    """A GGUF file as parts: metadata in order, then tensors (name, ggml dims, data)."""

    metadata: list[tuple[str | bytes, Value]] = field(default_factory=list)
    tensors: list[tuple[str, tuple[int, ...], bytes]] = field(default_factory=list)
    version: int = 3
    alignment: int = ALIGNMENT

    def set(self, key: str, value: Value | None) -> "GGUF":
        """Replace `key`'s value (None removes it); a new key goes at the end."""
        kept = [(k, v) for k, v in self.metadata if k != key]
        if value is not None:
            position = next((i for i, (k, _) in enumerate(self.metadata) if k == key), len(kept))
            kept.insert(position, (key, value))
        return replace(self, metadata=kept)

    def header(self, tensor_count: int | None = None, kv_count: int | None = None) -> bytes:
        head = b"GGUF" + struct.pack(
            "<IQQ", self.version,
            len(self.tensors) if tensor_count is None else tensor_count,
            len(self.metadata) if kv_count is None else kv_count,
        )
        kvs = b"".join(encode_kv(k, v) for k, v in self.metadata)
        infos, offset = [], 0
        for name, dims, data in self.tensors:
            infos.append(_string_bytes(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
                         + struct.pack("<IQ", GGML_F32, offset))
            offset += len(data) + (-len(data) % self.alignment)
        return head + kvs + b"".join(infos)

    def to_bytes(self) -> bytes:
        head = self.header()
        out = [head, b"\0" * (-len(head) % self.alignment)]
        for _, _, data in self.tensors:
            out += [data, b"\0" * (-len(data) % self.alignment)]
        return b"".join(out)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.to_bytes())
        return path


def tiny_llama(shape: Shape = Shape(), name: str = "Tiny Llama") -> GGUF:
    """A loadable two-layer llama model whose tensors follow `shape`."""
    tokens, scores, types = vocabulary()
    head_dim = shape.n_embd // shape.n_head if shape.n_head else 0
    metadata = [
        ("general.architecture", string("llama")),
        ("general.name", string(name)),
        ("general.file_type", u32(0)),
        ("llama.context_length", u32(shape.context)),
        ("llama.embedding_length", u32(shape.n_embd)),
        ("llama.block_count", u32(shape.n_layer)),
        ("llama.feed_forward_length", u32(shape.n_ff)),
        ("llama.attention.head_count", u32(shape.n_head)),
        ("llama.attention.head_count_kv", u32(shape.n_head_kv)),
        ("llama.attention.layer_norm_rms_epsilon", f32(1e-5)),
        ("llama.rope.dimension_count", u32(head_dim)),
        ("llama.rope.freq_base", f32(10000.0)),
        ("tokenizer.ggml.model", string("llama")),
        ("tokenizer.ggml.tokens", array(STRING, tokens)),
        ("tokenizer.ggml.scores", array(F32, scores)),
        ("tokenizer.ggml.token_type", array(I32, types)),
        ("tokenizer.ggml.bos_token_id", u32(1)),
        ("tokenizer.ggml.eos_token_id", u32(2)),
        ("tokenizer.ggml.unknown_token_id", u32(0)),
        ("tokenizer.ggml.add_bos_token", boolean(True)),
        ("tokenizer.chat_template", string(ECHO_TEMPLATE)),
    ]
    return GGUF(metadata, list(_llama_tensors(shape, len(tokens))))


def _llama_tensors(shape: Shape, n_vocab: int):
    rng = np.random.default_rng(7)
    head_dim = shape.n_embd // shape.n_head if shape.n_head else 0
    n_kv = shape.n_head_kv * head_dim

    def weight(inputs: int, outputs: int):  # ggml order: ne0 = inputs
        data = (rng.standard_normal((outputs, inputs), dtype=np.float32) * 0.02).tobytes()
        return (inputs, outputs), data

    def norm(n: int):
        return (n,), np.ones(n, dtype=np.float32).tobytes()

    yield ("token_embd.weight", *weight(shape.n_embd, n_vocab))
    yield ("output_norm.weight", *norm(shape.n_embd))
    for i in range(shape.n_layer):
        yield (f"blk.{i}.attn_norm.weight", *norm(shape.n_embd))
        yield (f"blk.{i}.attn_q.weight", *weight(shape.n_embd, shape.n_head * head_dim))
        yield (f"blk.{i}.attn_k.weight", *weight(shape.n_embd, n_kv))
        yield (f"blk.{i}.attn_v.weight", *weight(shape.n_embd, n_kv))
        yield (f"blk.{i}.attn_output.weight", *weight(shape.n_head * head_dim, shape.n_embd))
        yield (f"blk.{i}.ffn_norm.weight", *norm(shape.n_embd))
        yield (f"blk.{i}.ffn_gate.weight", *weight(shape.n_embd, shape.n_ff))
        yield (f"blk.{i}.ffn_up.weight", *weight(shape.n_embd, shape.n_ff))
        yield (f"blk.{i}.ffn_down.weight", *weight(shape.n_ff, shape.n_embd))


# --- damaged copies of a real model -------------------------------------------------------------


@dataclass(frozen=True)
class RealHeader:
    """A real model's header taken apart: its metadata entries as raw bytes, its tensor
    descriptions as one block, and how many bytes of weights follow."""

    version: int
    tensor_count: int
    entries: tuple[tuple[str, bytes], ...]  # key -> the entry's bytes (key, type, value)
    tensor_infos: bytes
    alignment: int
    data_size: int


def read_real_header(path: Path) -> RealHeader:
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        pos = 4
        version, n_tensors, n_kv = struct.unpack_from("<IQQ", buf, pos)
        pos += 20
        entries = []
        alignment = ALIGNMENT
        for _ in range(n_kv):
            start = pos
            (length,) = struct.unpack_from("<Q", buf, pos)
            key = bytes(buf[pos + 8:pos + 8 + length]).decode()
            pos += 8 + length
            (vtype,) = struct.unpack_from("<I", buf, pos)
            pos += 4
            if key == "general.alignment":
                (alignment,) = struct.unpack_from("<I", buf, pos)
            pos = _skip_value(buf, pos, vtype)
            entries.append((key, bytes(buf[start:pos])))
        infos_start = pos
        for _ in range(n_tensors):
            (length,) = struct.unpack_from("<Q", buf, pos)
            pos += 8 + length
            (n_dims,) = struct.unpack_from("<I", buf, pos)
            pos += 4 + 8 * n_dims + 4 + 8
        infos = bytes(buf[infos_start:pos])
        data_start = pos + (-pos % alignment)
        return RealHeader(version, n_tensors, tuple(entries), infos, alignment, len(buf) - data_start)


def _skip_value(buf, pos: int, vtype: int) -> int:
    if vtype in _FORMATS:
        return pos + struct.calcsize(_FORMATS[vtype])
    if vtype == STRING:
        return pos + 8 + struct.unpack_from("<Q", buf, pos)[0]
    elem_type, count = struct.unpack_from("<IQ", buf, pos)
    pos += 12
    if elem_type in _FORMATS:
        return pos + count * struct.calcsize(_FORMATS[elem_type])
    for _ in range(count):
        pos = _skip_value(buf, pos, elem_type)
    return pos


def damaged_copy(
    real: RealHeader,
    dest: Path,
    changes: dict[str, Value | None] | None = None,
    *,
    tensor_infos: bytes | None = None,
    counts: tuple[int | None, int | None] = (None, None),
    size: int | None = None,
) -> Path:
    """Write `real` with metadata `changes` (None removes a key) as a sparse file.

    The header is written for real; the weights are a hole of their original size (reading
    it gives zeros, and it takes no disk). `counts` overrides the announced tensor and
    metadata counts; `size` truncates or extends the file to that many bytes.
    """
    changes = dict(changes or {})
    entries = []
    for key, entry in real.entries:
        if key in changes:
            value = changes.pop(key)
            if value is not None:
                entries.append(encode_kv(key, value))
        else:
            entries.append(entry)
    entries += [encode_kv(key, value) for key, value in changes.items() if value is not None]
    tensor_count, kv_count = counts
    header = b"GGUF" + struct.pack(
        "<IQQ", real.version,
        real.tensor_count if tensor_count is None else tensor_count,
        len(entries) if kv_count is None else kv_count,
    )
    header += b"".join(entries) + (real.tensor_infos if tensor_infos is None else tensor_infos)
    data_start = len(header) + (-len(header) % real.alignment)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("wb") as out:
        out.write(header)
    os.truncate(dest, data_start + real.data_size if size is None else size)
    return dest
