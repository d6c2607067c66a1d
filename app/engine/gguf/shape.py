"""What a model's memory depends on, read from its GGUF header alone: the memory plan's input.

`model_shape(path)` walks the header once (gguf_header.py's bounds-checked reader, no weights
read) and keeps what llama.cpp sizes its buffers from: every tensor's bytes grouped by the
layer llama.cpp assigns it to (the input layer, each repeating block, the output layer), the
attention geometry per layer (KV heads, key and value widths, which layers use a sliding
window), the vocabulary and merge counts. The picker asks for every listed model, and the
parameters panel again at each change of context length, so shapes are kept per file (its
path, size and modification time): the header is walked once per file version.

Which layers slide: `{arch}.attention.sliding_window_pattern` when the file has it (a list of
booleans, or a period), else the period llama.cpp hard-codes for the architecture
(src/models/<arch>.cpp at the llama.cpp that llama-cpp-python 0.3.36 vendors), as
`llama_hparams::set_swa_pattern` spreads it.
"""

from __future__ import annotations

import functools
import math
import mmap
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from ...common.text import printable
from .checks import LLAMA_MAX_LAYERS, MAX_CONTEXT, Invalid, Metadata, data_alignment
from .header import BOOL, GGML_MAX_DIMS, U32_MAX, Array, Corrupt, HeaderReader, Truncated, quote
from .modelfile import GGUF_MAGIC, MAX_KEYS, MAX_TENSORS, SUPPORTED_VERSIONS, ModelFileError

# Per architecture: (the period of its sliding-window layers, whether the dense layer comes
# first in each period), as llama.cpp's load_swa_pattern(ml, n, dense_first) calls say.
SWA_PERIODS: dict[str, tuple[int, bool]] = {
    "gemma2": (2, False), "gemma3": (6, False), "gemma3n": (5, False), "gemma-embedding": (6, False),
    "cohere2": (4, False), "exaone4": (4, False), "olmo2": (4, False), "gpt-oss": (2, False),
    "llama4": (4, False), "afmoe": (4, False), "smallthinker": (4, True), "mellum": (4, False),
    "plamo3": (8, False), "exaone-moe": (4, False),
}
_BLOCK = re.compile(rb"blk\.(\d+)\.")
# Tensors llama.cpp keeps with the input layer (always on the CPU: get_rows, not a matmul).
_INPUT = frozenset({b"token_embd.weight", b"token_embd_norm.weight", b"token_embd_norm.bias",
                    b"position_embd.weight", b"token_types.weight"})
_OUTPUT_PREFIXES = (b"output.", b"output_norm.")
_TIED_OUTPUT = b"token_embd.weight"  # llama.cpp loads it again as the output when output.weight is absent


@dataclass(frozen=True)
class TensorGroup:
    """The tensors llama.cpp puts on one layer's device."""

    nbytes: int = 0  # their bytes in the file (= in memory)
    by_type: tuple[tuple[int, int, int], ...] = ()  # (ggml type, rows ne[1], bytes) per matmul weight


@dataclass(frozen=True)
class ModelShape:
    """A model's memory-relevant facts, from its header. Per-layer tuples have n_layer items."""

    path: Path
    file_size: int
    architecture: str
    n_layer: int
    n_embd: int
    n_ff: int  # the widest feed-forward layer
    n_vocab: int
    n_merges: int
    context_length: int | None  # the training context (None: the file does not say)
    n_head: tuple[int, ...]
    n_head_kv: tuple[int, ...]
    head_dim_k: int
    head_dim_v: int  # 0: no V cache (multi-head latent attention keeps K only)
    n_swa: int  # the sliding window in tokens (0: none)
    swa_layers: tuple[bool, ...]
    input: TensorGroup
    blocks: tuple[TensorGroup, ...]
    output: TensorGroup
    other: TensorGroup  # tensors no layer claims (llama.cpp maps them with the rest of the file)
    tied_output: bool  # no output.weight: the output layer is token_embd loaded a second time
    header_bytes: int  # where the weights start

    @property
    def uses_swa(self) -> bool:
        return self.n_swa > 0 and any(self.swa_layers)

    @property
    def weights_bytes(self) -> int:
        return self.input.nbytes + sum(b.nbytes for b in self.blocks) + self.output.nbytes + self.other.nbytes


def model_shape(path: str | os.PathLike) -> ModelShape:
    """The shape of the model at `path`, or ModelFileError saying why it cannot be read."""
    path = Path(path)
    try:
        status = path.stat()
    except OSError as exc:
        raise ModelFileError(f"Could not read {printable(path.name)}: {exc.strerror or type(exc).__name__}") from None
    return _cached_shape(path, status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _cached_shape(path: Path, size: int, _mtime_ns: int) -> ModelShape:
    name = printable(path.name)
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _read(path, size, buf)
    except (Truncated, ValueError):
        raise ModelFileError(f"{name} is truncated: the file ends inside its header.") from None
    except (Corrupt, Invalid) as exc:
        raise ModelFileError(f"{name} is corrupt: {exc}.") from None
    except OSError as exc:
        raise ModelFileError(f"Could not read {name}: {exc.strerror or type(exc).__name__}") from None


def _read(path: Path, size: int, buf: mmap.mmap) -> ModelShape:
    name = printable(path.name)
    if size < 24 or bytes(buf[:4]) != GGUF_MAGIC:
        raise ModelFileError(f"{name} is not a GGUF model file.")
    reader = HeaderReader(buf)
    reader.pos = 4
    if reader.scalar("<I") not in SUPPORTED_VERSIONS:
        raise ModelFileError(f"{name} uses a GGUF version Hearth does not read.")
    tensor_count, kv_count = reader.scalar("<Q"), reader.scalar("<Q")
    if tensor_count > MAX_TENSORS or kv_count > MAX_KEYS:
        raise Corrupt("its header claims more tensors or keys than any model has")
    entries = {}
    for _ in range(kv_count):
        key = reader.key()
        entries[key] = reader.value(reader.scalar("<I"), key)
    meta = Metadata(entries, buf, reader.vocabulary)
    alignment = data_alignment(meta)
    tensors = _tensors(reader, tensor_count)
    header_bytes = -(-reader.pos // alignment) * alignment

    arch = meta.text("general.architecture") or ""
    def key(suffix: str) -> str:
        return f"{arch}.{suffix}"

    n_layer = meta.integer(key("block_count"), 1, LLAMA_MAX_LAYERS) or 0
    n_embd = meta.integer(key("embedding_length"), 1) or 0
    n_head = meta.per_layer(key("attention.head_count"), n_layer) or (0,) * n_layer
    n_head_kv = meta.per_layer(key("attention.head_count_kv"), n_layer) or n_head
    n_ff = max(meta.per_layer(key("feed_forward_length"), n_layer) or (0,))
    expert_ff = meta.integer(key("expert_feed_forward_length"), 0) or 0
    experts_ff = expert_ff * (meta.integer(key("expert_used_count"), 0) or 0)
    n_ff = max(n_ff, experts_ff)  # a mixture of experts: each token runs through its chosen experts
    first_heads = next((h for h in n_head if h), 0)
    head_dim_k = meta.integer(key("attention.key_length"), 0) or (n_embd // first_heads if first_heads else 0)
    head_dim_v = meta.integer(key("attention.value_length"), 0) or head_dim_k
    kv_lora_rank = meta.integer(key("attention.kv_lora_rank"), 0)
    if kv_lora_rank:  # multi-head latent attention: one compressed K row per token, no V
        head_dim_k, head_dim_v = kv_lora_rank + (meta.integer(key("rope.dimension_count"), 0) or 0), 0
        n_head_kv = tuple(1 if h else 0 for h in n_head)
    n_swa = meta.integer(key("attention.sliding_window"), 0) or 0
    merges = entries.get("tokenizer.ggml.merges")

    groups = _group(tensors, n_layer)
    return ModelShape(
        path=path, file_size=size, architecture=arch, n_layer=n_layer, n_embd=n_embd, n_ff=n_ff,
        n_vocab=meta.vocabulary_size() or 0,
        n_merges=merges.count if isinstance(merges, Array) else 0,
        context_length=meta.integer(key("context_length"), 0, MAX_CONTEXT),
        n_head=n_head, n_head_kv=n_head_kv, head_dim_k=head_dim_k, head_dim_v=head_dim_v,
        n_swa=n_swa, swa_layers=_swa_layers(meta, entries, arch, n_layer, n_swa),
        input=groups["input"], blocks=tuple(groups[i] for i in range(n_layer)), output=groups["output"],
        other=groups["other"], tied_output=not any(t[0].startswith(b"output.weight") for t in tensors),
        header_bytes=header_bytes,
    )


def _tensors(reader: HeaderReader, count: int) -> list[tuple[bytes, int, tuple[int, ...], int]]:
    """(name, ggml type, dims, bytes) of every tensor, bounds-checked as they are read."""
    found = []
    for _ in range(count):
        start, length = reader.raw_string()
        name = bytes(reader.buf[start:start + min(length, 64)])
        shown = quote(name.decode("utf-8", "replace"))
        n_dims = reader.scalar("<I")
        if n_dims > GGML_MAX_DIMS:
            raise Corrupt(f"the tensor {shown} has {n_dims:,} dimensions")
        dims = tuple(reader.scalar("<Q") for _ in range(n_dims))
        ggml_type = reader.scalar("<I")
        reader.scalar("<Q")  # its offset: the loader's business
        try:
            block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
        except (ValueError, KeyError):
            raise Corrupt(f"the tensor {shown} has an unknown type ({ggml_type:,})") from None
        n_elements = math.prod(dims)
        if n_elements >= 2**63:
            raise Corrupt(f"the tensor {shown} has an impossible shape")
        found.append((name, ggml_type, dims, n_elements // block_size * type_size))
    return found


def _group(tensors, n_layer: int) -> dict:
    """Tensor bytes per layer as llama.cpp assigns them (llama_model::load_tensors)."""
    sums: dict = {}
    weights: dict = {}
    for name, ggml_type, dims, nbytes in tensors:
        if name in _INPUT:
            where = "input"
        elif name.startswith(_OUTPUT_PREFIXES):
            where = "output"
        elif (match := _BLOCK.match(name)) and int(match.group(1)) < n_layer:
            where = int(match.group(1))
        else:
            where = "other"
        sums[where] = sums.get(where, 0) + nbytes
        if len(dims) == 2 and name.endswith(b".weight") and (where != "input" or name == _TIED_OUTPUT):
            # a matmul weight (token_embd is one only as the tied output)
            weights.setdefault(where, []).append((ggml_type, dims[1], nbytes))
    keys = ["input", "output", "other", *range(n_layer)]
    return {k: TensorGroup(sums.get(k, 0), tuple(weights.get(k, ()))) for k in keys}


def _swa_layers(meta: Metadata, entries: dict, arch: str, n_layer: int, n_swa: int) -> tuple[bool, ...]:
    """Which layers attend through a sliding window, as llama.cpp's hparams.is_swa(il) says:
    the file's list of flags, or a period (the file's, else the architecture's)."""
    if n_swa <= 0 or arch not in SWA_PERIODS:  # llama.cpp reads no window for the others
        return (False,) * n_layer
    pattern_key = f"{arch}.attention.sliding_window_pattern"
    entry = entries.get(pattern_key)
    if isinstance(entry, Array):
        return tuple(bool(v) for v in meta.numbers(pattern_key, BOOL, n_layer, "true or false per layer"))
    period, dense_first = SWA_PERIODS[arch]
    if entry is not None:
        period = meta.integer(pattern_key, 0, U32_MAX) or 0
    if dense_first:
        return tuple(period == 0 or il % period != 0 for il in range(n_layer))
    return tuple(period == 0 or il % period < period - 1 for il in range(n_layer))
