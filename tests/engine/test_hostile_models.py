"""An adversarial corpus of GGUF files: each must end in one short line naming the file.

Three sources, all generated here (support/model_files/gguf_corpus.py): the tiny real llama
model with one value made hostile, files packed byte by byte with a broken structure, and sparse copies of the
real Gemma model whose header was damaged (the weights are a hole, so each costs only its
header). For each: inspect_model raises ModelFileError with a one- or two-line message that
names the file, quickly, without allocating more than a few MB; a sample also goes through
`python -m app inspect` to check that the command line says one line and exits 1.

The hyperparameter cases are values the bundled llama.cpp aborts on (SIGABRT from a
GGML_ASSERT), found by loading each with it; `test_files_at_each_limit_pass_and_llama_cpp_survives_them`
loads the values just inside each limit with the real llama.cpp to show the limits are not
too strict and that what passes does not abort it.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from support.model_files import gguf_corpus as g

from app.engine.gguf.checks import LLAMA_MAX_EXPERTS, LLAMA_MAX_LAYERS
from app.engine.gguf.header import MAX_HEADER_STRINGS
from app.engine.gguf.modelfile import ModelFileError
from app.engine.gguf.reading import inspect_model

NAN, INF = float("nan"), float("inf")
MAX_SECONDS = 1.0
MAX_PYTHON_ALLOCATION = 24 * 2**20  # the real Gemma's vocabulary index and token types take ~3 MB
MAX_MESSAGE_CHARS = 400


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[Path, "g.RealHeader | None"], None]  # writes the file at the given path
    expected: str  # a regex the message must contain
    real: bool = False  # a damaged copy of the real Gemma model
    # Python's allocation tracing makes walking Gemma's 262k-token vocabulary take a second,
    # so the real model's copies are only timed, except the one with an inflated item count.
    traced: bool | None = None

    @property
    def measures_memory(self) -> bool:
        return not self.real if self.traced is None else self.traced


def tiny(*changes: tuple[str, g.Value | None], shape: g.Shape = g.Shape()):
    """The tiny llama model with `changes` to its metadata."""
    def build(path: Path, _real) -> None:
        model = g.tiny_llama(shape)
        for key, value in changes:
            model = model.set(key, value)
        model.write(path)
    return build


def packed(data: Callable[[], bytes]):
    def build(path: Path, _real) -> None:
        path.write_bytes(data())
    return build


def gemma(changes: dict | None = None, **options):
    """A sparse copy of the real Gemma with its header changed."""
    def build(path: Path, real: g.RealHeader) -> None:
        resolved = {key: value(real) if callable(value) else value for key, value in (changes or {}).items()}
        g.damaged_copy(real, path, resolved, **{k: v(real) if callable(v) else v for k, v in options.items()})
    return build


def header_only(*kvs: tuple[str | bytes, g.Value], tensors: int = 0, tail: bytes = b"\0" * 64) -> Callable[[], bytes]:
    return lambda: b"GGUF" + struct.pack("<IQQ", 3, tensors, len(kvs)) + b"".join(g.encode_kv(k, v) for k, v in kvs) + tail


def tiny_with_tensor(dims: tuple[int, ...], *, name: str = "token_embd.weight", ggml_type: int = 0,
                     offset: int = 0, extra: bytes = b"") -> Callable[[], bytes]:
    """The tiny model's metadata with one hand-made tensor description (and its bytes)."""
    def data() -> bytes:
        model = g.tiny_llama()
        head = b"GGUF" + struct.pack("<IQQ", 3, 1, len(model.metadata))
        head += b"".join(g.encode_kv(k, v) for k, v in model.metadata)
        encoded = name.encode()
        head += struct.pack("<Q", len(encoded)) + encoded + struct.pack("<I", len(dims))
        head += struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", ggml_type, offset)
        return head + b"\0" * (-len(head) % 32) + b"\0" * 4096 + extra
    return data


def vocabulary_with(index: int, text: str) -> g.Value:
    tokens, _, _ = g.vocabulary()
    tokens[index] = text
    return g.array(g.STRING, tokens)


def patched_array_count(key: str, count: Callable[[int], int]):
    """The real entry for `key` with its announced item count changed (its items unchanged)."""
    def value(real: g.RealHeader) -> g.Value:
        entry = dict(real.entries)[key]
        payload = entry[8 + len(key) + 4:]
        elem_type, old = struct.unpack_from("<IQ", payload)
        return g.raw(g.ARRAY, struct.pack("<IQ", elem_type, count(old)) + payload[12:])
    return value


def first_tensor_with_dims(n_dims: int):
    def infos(real: g.RealHeader) -> bytes:
        (length,) = struct.unpack_from("<Q", real.tensor_infos)
        at = 8 + length
        return real.tensor_infos[:at] + struct.pack("<I", n_dims) + real.tensor_infos[at + 4:]
    return infos


LONG = "x" * 160_000
TOKENS = "tokenizer.ggml.tokens"

HYPERPARAMETERS = [  # each of these made the bundled llama.cpp abort (or hang) when loaded
    Case("layers-0", tiny(("llama.block_count", g.u32(0)), shape=g.Shape(n_layer=0)), r"llama\.block_count is 0 \(expected 1 to 512 layers\)"),
    Case("layers-513", tiny(("llama.block_count", g.u32(LLAMA_MAX_LAYERS + 1))), r"block_count is 513"),
    Case("layers-max-u32", tiny(("llama.block_count", g.u32(2**32 - 1)))  , r"block_count is 4,294,967,295"),
    Case("rms-eps-nan", tiny(("llama.attention.layer_norm_rms_epsilon", g.f32(NAN))), r"layer_norm_rms_epsilon is NaN \(expected a finite number above 0\)"),
    Case("rms-eps-negative", tiny(("llama.attention.layer_norm_rms_epsilon", g.f32(-1e-30))), r"layer_norm_rms_epsilon is -1e-30"),
    Case("rms-eps-inf", tiny(("llama.attention.layer_norm_rms_epsilon", g.f32(INF))), r"layer_norm_rms_epsilon is inf"),
    Case("rms-eps-zero", tiny(("llama.attention.layer_norm_rms_epsilon", g.f32(0.0))), r"layer_norm_rms_epsilon is 0\.0 "),
    Case("norm-eps-nan", tiny(("llama.attention.layer_norm_epsilon", g.f32(NAN))), r"layer_norm_epsilon is NaN"),
    Case("kv-heads-0", tiny(("llama.attention.head_count_kv", g.u32(0))), r"head_count_kv is 0 in layer 0, which does not divide its 4 attention heads"),
    Case("kv-heads-3", tiny(shape=g.Shape(n_head_kv=3)), r"head_count_kv is 3 in layer 0"),
    Case("kv-heads-more-than-heads", tiny(shape=g.Shape(n_head=2, n_head_kv=4)), r"head_count_kv is 4 in layer 0, which does not divide its 2"),
    Case("kv-heads-per-layer-0", tiny(("llama.attention.head_count_kv", g.array(g.U32, [2, 0]))), r"head_count_kv is 0 in layer 1"),
    Case("layer-without-heads-holding-attention", tiny(("llama.attention.head_count", g.array(g.U32, [4, 0])), ("llama.attention.head_count_kv", g.array(g.U32, [2, 0]))), r"head_count gives layer 1 no attention heads, but the layer holds attention weights"),
    Case("head-size-odd", tiny(("llama.rope.dimension_count", None), shape=g.Shape(n_embd=28)), r"its attention heads are 7 values wide, which RoPE cannot rotate"),
    Case("experts-over-max", tiny(("llama.expert_count", g.u32(LLAMA_MAX_EXPERTS + 1)), ("llama.expert_used_count", g.u32(2))), r"expert_count is 1,025 \(expected at most 1,024 experts\)"),
    Case("experts-used-more", tiny(("llama.expert_count", g.u32(4)), ("llama.expert_used_count", g.u32(8))), r"expert_used_count is 8 \(expected 1 to 4"),
    Case("experts-used-none", tiny(("llama.expert_count", g.u32(4))), r"expert_used_count is missing \(expected 1 to 4"),
    Case("experts-used-without-experts", tiny(("llama.expert_used_count", g.u32(2))), r"expert_used_count is 2 \(expected 0: the model has no experts\)"),
    Case("expert-groups-all", tiny(("llama.expert_count", g.u32(8)), ("llama.expert_used_count", g.u32(2)), ("llama.expert_group_count", g.u32(8))), r"expert_group_count is 8 \(expected fewer than its 8 experts\)"),
    Case("expert-groups-uneven", tiny(("llama.expert_count", g.u32(8)), ("llama.expert_used_count", g.u32(2)), ("llama.expert_group_count", g.u32(3)), ("llama.expert_group_used_count", g.u32(1))), r"expert_group_count is 3 \(expected a divisor"),
    Case("expert-groups-used-all", tiny(("llama.expert_count", g.u32(8)), ("llama.expert_used_count", g.u32(2)), ("llama.expert_group_count", g.u32(2)), ("llama.expert_group_used_count", g.u32(2))), r"expert_group_used_count is 2 \(expected 1 to 1\)"),
    Case("rope-scaling-unknown", tiny(("llama.rope.scaling.type", g.string("bogus"))), r"rope\.scaling\.type is 'bogus' \(expected one of linear, longrope, none, yarn\)"),
    Case("rope-dims-odd", tiny(("llama.rope.dimension_count", g.u32(7))), r"rope\.dimension_count is 7 \(expected an even number up to the head size, 8\)"),
    Case("rope-dims-zero", tiny(("llama.rope.dimension_count", g.u32(0))), r"rope\.dimension_count is 0"),
    Case("rope-dims-wider-than-head", tiny(("llama.rope.dimension_count", g.u32(16))), r"rope\.dimension_count is 16"),
    Case("rope-freq-base-nan", tiny(("llama.rope.freq_base", g.f32(NAN))), r"rope\.freq_base is NaN"),
    Case("rope-factor-negative", tiny(("llama.rope.scaling.factor", g.f32(-2.0))), r"rope\.scaling\.factor is -2\.0 \(expected a finite number of at least 0\)"),
    Case("embedding-0", tiny(("llama.embedding_length", g.u32(0))), r"embedding_length is 0 \(expected a whole number from 1"),
    Case("context-0", tiny(("llama.context_length", g.u32(0))), r"context_length is 0"),
    Case("context-2-31", tiny(("llama.context_length", g.u32(2**31))), r"context_length is 2,147,483,648"),
    Case("feed-forward-per-layer-3-for-2", tiny(("llama.feed_forward_length", g.array(g.U32, [64, 64, 64]))), r"feed_forward_length lists 3 values for 2 layers"),
    Case("heads-per-layer-1-for-2", tiny(("llama.attention.head_count", g.array(g.U32, [4]))), r"head_count lists 1 values for 2 layers"),
]

WRONG_TYPES = [  # each raised a Python exception (a traceback from `hearth inspect`) or got past
    Case("layers-float", tiny(("llama.block_count", g.f32(1.5))), r"block_count is 1\.5 \(expected 1 to 512 layers\)"),
    Case("layers-text", tiny(("llama.block_count", g.string("2"))), r"block_count is '2' \(expected"),
    Case("layers-bool", tiny(("llama.block_count", g.boolean(True))), r"block_count is true \(expected"),
    Case("layers-list", tiny(("llama.block_count", g.array(g.U32, [2]))), r"block_count is a list of 1 item "),
    Case("context-inf", tiny(("llama.context_length", g.scalar(g.F64, INF))), r"context_length is inf"),
    Case("rope-scaling-number", tiny(("llama.rope.scaling.type", g.u32(1))), r"rope\.scaling\.type is 1 \(expected text\)"),
    Case("bos-float", tiny(("tokenizer.ggml.bos_token_id", g.f32(1.5))), r"bos_token_id is 1\.5 \(expected a token number\)"),
    Case("bos-bool", tiny(("tokenizer.ggml.bos_token_id", g.boolean(True))), r"bos_token_id is true"),
    Case("bos-negative", tiny(("tokenizer.ggml.bos_token_id", g.scalar(g.I32, -1))), r"bos_token_id is -1"),
    Case("eos-text", tiny(("tokenizer.ggml.eos_token_id", g.string("</s>"))), r"eos_token_id is '</s>'"),
    Case("eot-list", tiny(("tokenizer.ggml.eot_token_id", g.array(g.U32, [1, 2]))), r"eot_token_id is a list of 2 items"),
    Case("architecture-list", tiny(("general.architecture", g.array(g.STRING, ["llama"]))), r"general\.architecture is a list of 1 item \(expected text\)"),
    Case("name-list", tiny(("general.name", g.array(g.U32, [1]))), r"general\.name is a list"),
    Case("size-label-number", tiny(("general.size_label", g.scalar(g.I64, 7))), r"general\.size_label is 7 \(expected text\)"),
    Case("template-number", tiny(("tokenizer.chat_template", g.u32(5))), r"tokenizer\.chat_template is 5 \(expected text\)"),
    Case("template-list", tiny(("tokenizer.chat_template", g.array(g.STRING, ["{{ a }}", "{{ b }}"]))), r"tokenizer\.chat_template is a list of 2 items"),
    Case("named-template-number", tiny(("tokenizer.chat_template.tool_use", g.f32(1.0))), r"tokenizer\.chat_template\.tool_use is 1\.0 \(expected text\)"),
    Case("tokenizer-model-list", tiny(("tokenizer.ggml.model", g.array(g.STRING, ["llama"]))), r"tokenizer\.ggml\.model is a list"),
    Case("vocabulary-numbers", tiny((TOKENS, g.array(g.U32, range(263)))), r"tokenizer\.ggml\.tokens is a list of 263 items \(expected a list of texts\)"),
    Case("vocabulary-text", tiny((TOKENS, g.string("<s>"))), r"tokenizer\.ggml\.tokens is '<s>'"),
    Case("vocabulary-empty", tiny((TOKENS, g.array(g.STRING, [])), ("tokenizer.ggml.scores", None), ("tokenizer.ggml.token_type", None)), r"its tokenizer\.ggml\.tokens lists no tokens"),
    Case("byte-tokens-missing", tiny(("tokenizer.ggml.token_type", g.array(g.I32, [2, 3, 3] + [1] * 260))), r"its SentencePiece vocabulary lacks 256 of the 256 byte tokens"),
    Case("token-types-short", tiny(("tokenizer.ggml.token_type", g.array(g.I32, [1] * 10))), r"token_type lists 10 values for 263 tokens"),
    Case("token-types-long", tiny(("tokenizer.ggml.token_type", g.array(g.I32, [1] * 300))), r"token_type lists 300 values for 263 tokens"),
    Case("token-types-bytes", tiny(("tokenizer.ggml.token_type", g.array(g.U8, [1] * 263))), r"token_type is a list of 263 items \(expected a list of 32-bit token types\)"),
    Case("scores-texts", tiny(("tokenizer.ggml.scores", g.array(g.STRING, ["0"] * 263))), r"scores is a list of 263 items \(expected a list of 32-bit scores\)"),
    Case("scores-short", tiny(("tokenizer.ggml.scores", g.array(g.F32, [0.0] * 5))), r"scores lists 5 values for 263 tokens"),
    Case("merges-numbers", tiny(("tokenizer.ggml.merges", g.array(g.U32, [1, 2]))), r"merges is a list of 2 items \(expected a list of texts\)"),
    Case("add-bos-number", tiny(("tokenizer.ggml.add_bos_token", g.u32(1))), r"add_bos_token is 1 \(expected true or false\)"),
    Case("space-prefix-text", tiny(("tokenizer.ggml.add_space_prefix", g.string("true"))), r"add_space_prefix is 'true' \(expected true or false\)"),
    Case("alignment-0", tiny(("general.alignment", g.u32(0))), r"general\.alignment is 0 \(expected a power of two stored as a uint32\)"),
    Case("alignment-3", tiny(("general.alignment", g.u32(3))), r"general\.alignment is 3 \(expected a power of two\)"),
    Case("alignment-text", tiny(("general.alignment", g.string("32"))), r"general\.alignment is '32'"),
    Case("alignment-u64", tiny(("general.alignment", g.scalar(g.U64, 32))), r"general\.alignment is 32 \(expected a power of two stored as a uint32\)"),
    Case("file-type-float", tiny(("general.file_type", g.f32(15.0))), r"general\.file_type is 15\.0 \(expected a whole number"),
    Case("parameter-count-nan", tiny(("general.parameter_count", g.scalar(g.F64, NAN))), r"general\.parameter_count is NaN"),
    Case("vocab-size-negative", tiny(("llama.vocab_size", g.scalar(g.I32, -5))), r"vocab_size is -5"),
]

SIZES_AND_STRUCTURE = [  # memory blow-ups, echoed megabytes, recursion, and broken layouts
    Case("nested-lists-deep", tiny(("hostile.nesting", g.nested_array(100_000))), r"'hostile\.nesting' is a list of lists, which llama\.cpp cannot read"),
    Case("nested-lists-two", tiny(("hostile.nesting", g.nested_array(2))), r"list of lists"),
    Case("duplicate-key", packed(header_only(("general.name", g.string("a")), ("general.name", g.string("b")))), r"holds the key 'general\.name' twice"),
    Case("unknown-value-type", packed(header_only(("key", g.raw(99, b"\0" * 8)))), r"'key' has an unknown type \(99\)"),
    Case("unknown-item-type", packed(header_only(("key", g.raw(g.ARRAY, struct.pack("<IQ", 42, 1)))))  , r"'key' has an unknown item type \(42\)"),
    Case("key-160kb", packed(header_only((LONG, g.u32(1)), tail=b"\0" * 160_100)), r"its header holds a key 160,000 bytes long"),
    Case("architecture-160kb", tiny(("general.architecture", g.string(LONG))), r"general\.architecture is 160,000 bytes of text \(expected at most 1,024\)"),
    Case("name-5kb", tiny(("general.name", g.string("n" * 5000))), r"general\.name is 5,000 bytes of text"),
    Case("template-2mb", tiny(("tokenizer.chat_template", g.string("{{ x }}" * 300_000))), r"chat_template is 2,100,000 bytes of text \(expected at most 1,048,576\)"),
    Case("bos-token-1kb", tiny((TOKENS, vocabulary_with(1, "<" * 1000))), r"bos_token_id names a token 1,000 bytes long"),
    Case("string-count-plausible", tiny((TOKENS, g.raw(g.ARRAY, struct.pack("<IQ", g.STRING, 10_000) + b"\0" * 8))), r"truncated"),
    Case("number-count-past-end", tiny(("tokenizer.ggml.scores", g.raw(g.ARRAY, struct.pack("<IQ", g.F32, 2**40)))), r"'tokenizer\.ggml\.scores' lists 1,099,511,627,776 items, more than the rest of the file can hold"),
    Case("strings-past-header-budget", packed(lambda: header_only(
        ("general.architecture", g.string("llama")),
        (TOKENS, g.raw(g.ARRAY, struct.pack("<IQ", g.STRING, MAX_HEADER_STRINGS + 1))),
        tail=bytes(8 * (MAX_HEADER_STRINGS + 2)))()), r"more than 2,000,000 strings"),
    Case("tensor-5-dims", packed(tiny_with_tensor((32, 1, 1, 1, 1))), r"token_embd\.weight' has 5 dimensions \(llama\.cpp allows 4\)"),
    Case("tensor-name-100-bytes", packed(tiny_with_tensor((32,), name="t" * 100)), r"has a name 100 bytes long \(llama\.cpp allows 63\)"),
    Case("tensor-offset-wrong", packed(tiny_with_tensor((32,), offset=64)), r"starts at byte 64 of the data instead of 0"),
    Case("tensor-type-unknown", packed(tiny_with_tensor((32,), ggml_type=99)), r"has type 99, which llama\.cpp does not know"),
    Case("tensor-shape-overflow", packed(tiny_with_tensor((2**62, 4))), r"impossible shape"),
    Case("tensor-partial-block", packed(tiny_with_tensor((100, 1), ggml_type=12)), r"rows of 100 values, not whole blocks of 256"),
    Case("tensor-past-end", packed(tiny_with_tensor((2**20, 64))), r"truncated: its weights end at byte"),
]


def _tensor_twice() -> bytes:
    model = g.tiny_llama()
    _, dims, data = model.tensors[1]
    return g.GGUF(model.metadata, [model.tensors[0], ("token_embd.weight", dims, data)]).to_bytes()


SIZES_AND_STRUCTURE.append(Case("tensor-twice", packed(_tensor_twice), r"holds the tensor 'token_embd\.weight' twice"))

REAL_MODEL = [  # sparse copies of the real Gemma 3 270M with a damaged header
    Case("gemma-layers-0", gemma({"gemma3.block_count": g.u32(0)}), r"gemma3\.block_count is 0", real=True),
    Case("gemma-layers-1000", gemma({"gemma3.block_count": g.u32(1000)}), r"gemma3\.block_count is 1,000", real=True),
    Case("gemma-eps-nan", gemma({"gemma3.attention.layer_norm_rms_epsilon": g.f32(NAN)}), r"layer_norm_rms_epsilon is NaN", real=True),
    Case("gemma-eps-negative", gemma({"gemma3.attention.layer_norm_rms_epsilon": g.f32(-1e-6)}), r"layer_norm_rms_epsilon is -1e-06", real=True),
    Case("gemma-kv-heads-3", gemma({"gemma3.attention.head_count_kv": g.u32(3)}), r"head_count_kv is 3 in layer 0", real=True),
    Case("gemma-rope-odd", gemma({"gemma3.rope.dimension_count": g.u32(255)}), r"rope\.dimension_count is 255 \(expected an even number up to the head size, 256\)", real=True),
    Case("gemma-rope-wide", gemma({"gemma3.rope.dimension_count": g.u32(512)}), r"rope\.dimension_count is 512", real=True),
    Case("gemma-rope-zero-hangs", gemma({"gemma3.rope.dimension_count": g.u32(0)}), r"rope\.dimension_count is 0", real=True),
    Case("gemma-rope-scaling", gemma({"gemma3.rope.scaling.type": g.string("dynamic")}), r"rope\.scaling\.type is 'dynamic'", real=True),
    Case("gemma-experts", gemma({"gemma3.expert_count": g.u32(5000), "gemma3.expert_used_count": g.u32(2)}), r"expert_count is 5,000", real=True),
    # The example: a count the file size makes plausible, which had inspect allocate
    # eight bytes per announced string (2 GB for this 253 MB file) before walking them.
    Case("gemma-vocabulary-count-200m", gemma({TOKENS: patched_array_count(TOKENS, lambda n: 200_000_000)}),
         r"'tokenizer\.ggml\.tokens' lists 200,000,000 items, more than the rest of the file can hold", real=True, traced=True),
    Case("gemma-vocabulary-count-x8", gemma({TOKENS: patched_array_count(TOKENS, lambda n: n * 8)}), r"truncated", real=True, traced=True),
    Case("gemma-vocabulary-count-x4", gemma({TOKENS: patched_array_count(TOKENS, lambda n: n * 4)}), r"truncated", real=True, traced=True),
    Case("gemma-scores-count-plus-1", gemma({"tokenizer.ggml.scores": patched_array_count("tokenizer.ggml.scores", lambda n: n + 1)}), r"truncated|corrupt", real=True),
    Case("gemma-token-types-short", gemma({"tokenizer.ggml.token_type": g.array(g.I32, [1] * 10)}), r"token_type lists 10 values for 262,144 tokens", real=True),
    Case("gemma-byte-tokens-retyped", gemma({"tokenizer.ggml.token_type": g.array(g.I32, [1] * 262_144)}), r"lacks 256 of the 256 byte tokens", real=True),
    Case("gemma-vocabulary-text", gemma({TOKENS: g.string("x")}), r"tokenizer\.ggml\.tokens is 'x' \(expected a list of texts\)", real=True),
    Case("gemma-architecture-160kb", gemma({"general.architecture": g.string(LONG)}), r"general\.architecture is 160,000 bytes of text", real=True),
    Case("gemma-template-2mb", gemma({"tokenizer.chat_template": g.string("x" * 2_000_000)}), r"chat_template is 2,000,000 bytes of text", real=True),
    Case("gemma-weights-cut", gemma(size=lambda real: real.data_size), r"truncated: its weights end at byte", real=True),
    Case("gemma-alignment-0", gemma({"general.alignment": g.u32(0)}), r"general\.alignment is 0", real=True),
    Case("gemma-bos-float", gemma({"tokenizer.ggml.bos_token_id": g.f32(2.0)}), r"bos_token_id is 2\.0 \(expected a token number\)", real=True),
    Case("gemma-one-entry-too-many", gemma(counts=lambda real: (None, len(real.entries) + 1)), r"truncated|corrupt", real=True),
    Case("gemma-one-tensor-too-many", gemma(counts=lambda real: (real.tensor_count + 1, None)), r"truncated|corrupt", real=True),
    Case("gemma-tensor-9-dims", gemma(tensor_infos=first_tensor_with_dims(9)), r"has 9 dimensions", real=True),
    Case("gemma-nested-lists", gemma({"general.tags": g.nested_array(50_000)}), r"'general\.tags' is a list of lists", real=True),
]

CORPUS = HYPERPARAMETERS + WRONG_TYPES + SIZES_AND_STRUCTURE + REAL_MODEL


def test_the_corpus_is_large_and_its_names_unique():
    assert len(CORPUS) >= 60
    assert len({case.id for case in CORPUS}) == len(CORPUS)


@pytest.fixture(scope="module")
def real_header(gemma_path):
    return g.read_real_header(gemma_path)


@pytest.fixture
def built(request, tmp_path):
    """The case's file, written under its own name so the message can be checked for it."""
    case: Case = request.param
    path = tmp_path / f"{case.id}.gguf"
    case.build(path, request.getfixturevalue("real_header") if case.real else None)
    return case, path


@pytest.mark.parametrize("built", CORPUS, ids=[case.id for case in CORPUS], indirect=True)
def test_each_hostile_file_is_refused_in_one_short_line_naming_it(built):
    case, path = built
    started = time.perf_counter()
    with pytest.raises(ModelFileError) as refused:
        inspect_model(path)
    elapsed = time.perf_counter() - started
    message = str(refused.value)
    assert message.startswith(path.name) or f" {path.name}" in message
    assert len(message) <= MAX_MESSAGE_CHARS and "\n" not in message, message
    assert "did not expect" not in message  # refused by a check, not by the last-resort net
    assert re.search(case.expected, message), message
    assert elapsed < MAX_SECONDS, f"{elapsed:.2f} s"
    if case.measures_memory:
        assert _peak_allocation(path) < MAX_PYTHON_ALLOCATION


def _peak_allocation(path: Path) -> int:
    """The most memory Python held at once while inspecting `path` (the memory map aside)."""
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError):
            inspect_model(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_damaged_copies_of_the_real_model_are_sparse(real_header, gemma_path, tmp_path):
    path = tmp_path / "sparse.gguf"
    gemma({"gemma3.block_count": g.u32(0)})(path, real_header)
    assert path.stat().st_size == gemma_path.stat().st_size
    assert path.stat().st_blocks * 512 < 16 * 2**20  # the header only, not 253 MB


CLI_SAMPLE = ["layers-0", "rms-eps-nan", "template-number", "nested-lists-deep", "key-160kb"]


@pytest.mark.parametrize("built", [c for c in CORPUS if c.id in CLI_SAMPLE], ids=CLI_SAMPLE, indirect=True)
def test_hearth_inspect_says_one_line_and_exits_1(built):
    _, path = built
    result = subprocess.run([sys.executable, "-m", "app", "inspect", str(path)], capture_output=True, text=True,
                            timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hearth: error: {path.name}"), result.stderr
    assert "Traceback" not in result.stderr and len(lines[0]) <= MAX_MESSAGE_CHARS


# --- the limits are llama.cpp's, not stricter ---------------------------------------------------

AT_THE_LIMITS = {  # each passes inspection; llama.cpp either loads it or refuses it, never aborts
    "layers-512": [("llama.block_count", g.u32(LLAMA_MAX_LAYERS))],
    "experts-1024": [("llama.expert_count", g.u32(LLAMA_MAX_EXPERTS)), ("llama.expert_used_count", g.u32(2))],
    "kv-heads-1": [("llama.attention.head_count_kv", g.u32(1))],
    "rope-scaling-yarn": [("llama.rope.scaling.type", g.string("yarn"))],
    "context-1": [("llama.context_length", g.u32(1))],
    "tiny-epsilon": [("llama.attention.layer_norm_rms_epsilon", g.f32(1e-30))],
    "bos-out-of-range": [("tokenizer.ggml.bos_token_id", g.u32(99_999))],
    "unknown-token-types": [("tokenizer.ggml.token_type", g.array(g.I32, [99] * 3 + [g.BYTE_TYPE] * 256 + [99] * 4))],
    "heads-per-layer": [("llama.attention.head_count", g.array(g.U32, [4, 4]))],
    "no-rope-key": [("llama.rope.dimension_count", None)],  # the whole 8-wide head is rotated
}

_LOAD_EACH = """
import sys
from llama_cpp import Llama
for path in sys.argv[1:]:
    try:
        llm = Llama(model_path=path, n_ctx=64, n_threads=1, verbose=False)
    except ValueError:
        print("refused", path, flush=True)
        continue
    llm.create_completion("hello", max_tokens=2)
    print("loaded", path, flush=True)
    llm.close()
"""


def test_files_at_each_limit_pass_and_llama_cpp_survives_them(tmp_path):
    paths = []
    for name, changes in AT_THE_LIMITS.items():
        path = tmp_path / f"{name}.gguf"
        tiny(*changes)(path, None)
        inspect_model(path)  # not refused by Hearth
        paths.append(str(path))
    paths.append(str(g.tiny_llama().write(tmp_path / "unchanged.gguf")))
    # A subprocess: if llama.cpp aborted, it would take the test run with it.
    result = subprocess.run([sys.executable, "-c", _LOAD_EACH, *paths], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"llama.cpp died ({result.returncode}) after: {result.stdout[-500:]}"
    outcomes = dict(line.split(" ", 1)[::-1] for line in result.stdout.splitlines())
    assert set(outcomes) == set(paths)
    assert outcomes[str(tmp_path / "unchanged.gguf")] == "loaded"  # the tiny model is a real one
    assert outcomes[str(tmp_path / "context-1.gguf")] == "loaded"
