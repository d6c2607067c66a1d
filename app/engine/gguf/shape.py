"""What a model's memory depends on, read from its GGUF header alone: the memory plan's input.

`shape_of` interprets the file's walked header (header.py: no weights read) into what
llama.cpp sizes its buffers from: every tensor's bytes grouped by the
layer llama.cpp assigns it to (the input layer, each repeating block, the output layer), the
attention geometry per layer (KV heads, key and value widths, which layers use a sliding
window), the vocabulary and merge counts. `reading.model_shape(path)` is the way in: the
picker asks for every listed model, and the parameters panel again at each change of context
length, so reading.py keeps shapes per file version (a shape is a few numbers per layer).

Which layers slide: `{arch}.attention.sliding_window_pattern` when the file has it (a list of
booleans, or a period), else the period llama.cpp hard-codes for the architecture
(src/models/<arch>.cpp at the llama.cpp that llama-cpp-python 0.3.36 vendors), as
`llama_hparams::set_swa_pattern` spreads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .checks import LLAMA_MAX_LAYERS, MAX_CONTEXT, MAX_WIDTH
from .header import FileVersion, Header, Tensor
from .metadata import Metadata
from .values import BOOL, U32_MAX, Array, Value

# Per architecture: (the period of its sliding-window layers, whether the dense layer comes
# first in each period), as llama.cpp's load_swa_pattern(ml, n, dense_first) calls say.
SWA_PERIODS: dict[str, tuple[int, bool]] = {
    "gemma2": (2, False), "gemma3": (6, False), "gemma3n": (5, False), "gemma-embedding": (6, False),
    "cohere2": (4, False), "exaone4": (4, False), "olmo2": (4, False), "gpt-oss": (2, False),
    "llama4": (4, False), "afmoe": (4, False), "smallthinker": (4, True), "mellum": (4, False),
    "plamo3": (8, False), "exaone-moe": (4, False),
}
# Windows that do not slide causally: llama.cpp's LLAMA_SWA_TYPE_CHUNKED (models/llama4.cpp:
# attention within fixed chunks) and LLAMA_SWA_TYPE_SYMMETRIC (the two embedding models).
NOT_SLIDING = frozenset({"llama4", "gemma-embedding", "modern-bert"})
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


def shape_of(version: FileVersion, header: Header) -> ModelShape:
    """The memory shape of the file at `version`, whose header is `header`."""
    meta = header.metadata
    arch = meta.text("general.architecture") or ""
    def key(suffix: str) -> str:
        return f"{arch}.{suffix}"

    n_layer = meta.integer(key("block_count"), 1, LLAMA_MAX_LAYERS) or 0
    n_embd = meta.integer(key("embedding_length"), 1) or 0
    n_head = meta.per_layer(key("attention.head_count"), n_layer, MAX_WIDTH) or (0,) * n_layer
    n_head_kv = meta.per_layer(key("attention.head_count_kv"), n_layer, MAX_WIDTH) or n_head
    n_ff = max(meta.per_layer(key("feed_forward_length"), n_layer, MAX_WIDTH) or (0,))
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
    merges = header.entries.get("tokenizer.ggml.merges")

    groups = _group(header.tensors, n_layer)
    return ModelShape(
        path=version.path, file_size=version.size, architecture=arch, n_layer=n_layer, n_embd=n_embd, n_ff=n_ff,
        n_vocab=meta.vocabulary_size() or 0,
        n_merges=merges.count if isinstance(merges, Array) else 0,
        context_length=meta.integer(key("context_length"), 0, MAX_CONTEXT),
        n_head=n_head, n_head_kv=n_head_kv, head_dim_k=head_dim_k, head_dim_v=head_dim_v,
        n_swa=n_swa, swa_layers=_swa_layers(meta, header.entries, arch, n_layer, n_swa),
        input=groups["input"], blocks=tuple(groups[i] for i in range(n_layer)), output=groups["output"],
        other=groups["other"], tied_output=not any(t.name.startswith(b"output.weight") for t in header.tensors),
        header_bytes=header.data_start,
    )


def _group(tensors: tuple[Tensor, ...], n_layer: int) -> dict[str | int, TensorGroup]:
    """Tensor bytes per layer as llama.cpp assigns them (llama_model::load_tensors)."""
    sums: dict[str | int, int] = {}
    weights: dict[str | int, list[tuple[int, int, int]]] = {}
    for tensor in tensors:
        name, dims, nbytes = tensor.name, tensor.dims, tensor.nbytes
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
            weights.setdefault(where, []).append((tensor.ggml_type, dims[1], nbytes))
    keys = ["input", "output", "other", *range(n_layer)]
    return {k: TensorGroup(sums.get(k, 0), tuple(weights.get(k, ()))) for k in keys}


def _swa_layers(meta: Metadata, entries: Mapping[str, Value], arch: str, n_layer: int, n_swa: int) -> tuple[bool, ...]:
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
