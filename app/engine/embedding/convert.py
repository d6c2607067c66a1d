"""A Hugging Face BERT sentence-embedding model (config.json, model.safetensors, tokenizer.json or
vocab.txt) made into a GGUF that llama.cpp loads, written the way llama.cpp's own
convert_hf_to_gguf.py writes `BertModel` (conversion/bert.py and base.py in llama.cpp of
llama-cpp-python 0.3.36), so the file is one llama.cpp already knows:

- architecture "bert", the hyperparameters TextModel writes (context length, embedding and
  feed-forward lengths, heads, layer-norm epsilon), attention not causal, and the pooling the
  sentence-transformers folder names (modules.json → 1_Pooling/config.json: MEAN for MiniLM);
- the WordPiece vocab as tokenizer.ggml.model "bert" in llama.cpp's "phantom space" form
  ("##ing" → "ing", "word" → "▁word", control tokens as they are), token types, the special
  tokens (CLS/SEP/PAD/UNK/MASK, and add_bos/add_eos from the tokenizer's post-processor, read by
  gguf's SpecialVocab), and the BertNormalizer's lowercase / strip_accents flags (which a newer
  gguf-py than the pinned 0.19.0 writes; llama.cpp 0.3.36 reads them);
- the tensors renamed by gguf's BERT name map; the pooler and masked-LM heads dropped, as
  convert_hf_to_gguf.py drops them (llama.cpp pools itself).

Weights: f16 for the 2-D matrices, f32 for vectors, norms, the position and token-type
embeddings (convert_hf_to_gguf.py's rule for its f16 output). f16 halves the file (MiniLM:
about 45 MB instead of 90) and changes an embedding by far less than the 0.999 cosine the
tests hold it to.

The safetensors file is read with numpy directly (an 8-byte little-endian header length, a JSON
header of dtype/shape/data_offsets, then the raw data), so neither torch nor the safetensors
package is needed. Not llama_cpp either: only engine/llama/ imports it.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

log = logging.getLogger(__name__)

# The architectures convert_hf_to_gguf.py's BertModel takes whose vocab is WordPiece
# (CamembertModel is SentencePiece; BertForSequenceClassification is a reranker, not an embedder).
BERT_ARCHITECTURES = frozenset({"BertModel", "BertForMaskedLM"})
# What llama.cpp's BERT graph computes its feed-forward with (LLM_FFN_GELU).
GELU_ACTIVATIONS = frozenset({"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast"})
POOLING_MODES = {
    "pooling_mode_mean_tokens": gguf.PoolingType.MEAN,
    "pooling_mode_cls_token": gguf.PoolingType.CLS,
    "pooling_mode_lasttoken": gguf.PoolingType.LAST,
}
# Tensors llama.cpp reads in f32 whatever the file type (convert_hf_to_gguf.py's list, the
# BERT ones).
F32_TENSORS = (gguf.MODEL_TENSOR.POS_EMBD, gguf.MODEL_TENSOR.TOKEN_TYPES)
# llama.cpp's keys for the BertNormalizer's flags (llama-arch.cpp), which gguf 0.19.0 lacks.
# Absent, llama.cpp lowercases and strips accents; a cased model needs them said.
NORMALIZER_LOWERCASE = "tokenizer.ggml.normalizer.lowercase"
NORMALIZER_STRIP_ACCENTS = "tokenizer.ggml.normalizer.strip_accents"
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "F64": np.float64}
_SAFETENSORS_HEADER_LIMIT = 100 * 1024 * 1024  # the safetensors format's own limit


class ConversionError(ValueError):
    """The folder is not a model this converter can make into a GGUF; the message says why."""


@dataclass(frozen=True)
class BertConfig:
    """What the GGUF needs from config.json, checked."""

    name: str
    n_layer: int
    n_embd: int
    n_ff: int
    n_head: int
    n_ctx: int
    n_vocab: int
    n_token_types: int
    layer_norm_eps: float


def read_config(model_dir: Path) -> BertConfig:
    """config.json as a BertConfig; a ConversionError naming the reason for anything else."""
    path = model_dir / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConversionError(f"{path} cannot be read as a model config: {exc}") from None
    if not isinstance(config, dict):
        raise ConversionError(f"{path} is not a model config (a JSON object).")
    architectures = config.get("architectures") or []
    model_type = config.get("model_type")
    if model_type != "bert" or not BERT_ARCHITECTURES.intersection(architectures):
        found = ", ".join(map(str, architectures)) or "none"
        raise ConversionError(
            f"{model_dir.name} is not a BERT embedding model (model_type {model_type!r}, architectures {found}): "
            f"only {', '.join(sorted(BERT_ARCHITECTURES))} can be converted. "
            "Choose an embedding model that is already a GGUF instead."
        )
    if (act := config.get("hidden_act", "gelu")) not in GELU_ACTIVATIONS:
        raise ConversionError(f"{model_dir.name} uses the activation {act!r}; llama.cpp's BERT computes GELU.")
    if (position := config.get("position_embedding_type", "absolute")) != "absolute":
        raise ConversionError(f"{model_dir.name} has {position!r} position embeddings; llama.cpp's BERT "
                              "reads absolute ones.")
    try:
        checked = BertConfig(
            name=str(config.get("_name_or_path") or model_dir.name).rsplit("/", 1)[-1],
            n_layer=int(config["num_hidden_layers"]),
            n_embd=int(config["hidden_size"]),
            n_ff=int(config["intermediate_size"]),
            n_head=int(config["num_attention_heads"]),
            n_ctx=int(config["max_position_embeddings"]),
            n_vocab=int(config["vocab_size"]),
            n_token_types=int(config.get("type_vocab_size", 1)),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConversionError(f"{path} lacks a valid hyperparameter: {exc}") from None
    if min(checked.n_layer, checked.n_embd, checked.n_ff, checked.n_head, checked.n_ctx, checked.n_vocab) <= 0 \
            or checked.n_embd % checked.n_head:
        raise ConversionError(f"{path} has impossible dimensions: {checked}")
    return checked


def pooling_type(model_dir: Path) -> gguf.PoolingType | None:
    """The pooling a sentence-transformers folder declares (its Pooling module's config), or
    None where it declares none (llama.cpp then uses the architecture's default)."""
    modules_path = model_dir / "modules.json"
    if not modules_path.is_file():
        return None
    try:
        modules = json.loads(modules_path.read_text(encoding="utf-8"))
        folder = next((m.get("path", "") for m in modules if str(m.get("type", "")).endswith("Pooling")), None)
        if folder is None:
            return None
        pooling = json.loads((model_dir / folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        raise ConversionError(f"{model_dir.name}'s pooling (modules.json) cannot be read: {exc}") from None
    for key, kind in POOLING_MODES.items():
        if pooling.get(key):
            return kind
    mode = pooling.get("pooling_mode")
    named = {"mean": gguf.PoolingType.MEAN, "cls": gguf.PoolingType.CLS, "lasttoken": gguf.PoolingType.LAST}
    if mode in named:
        return named[mode]
    raise ConversionError(f"{model_dir.name} pools in a way llama.cpp does not (only mean, CLS and last token).")


# --- the vocab ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WordPieceVocab:
    tokens: list[str]  # in llama.cpp's phantom-space form
    types: list[int]  # gguf.TokenType per token
    lowercase: bool | None  # the normalizer's flags, None where the tokenizer does not say
    strip_accents: bool | None


def read_vocab(model_dir: Path, n_vocab: int) -> WordPieceVocab:
    """The WordPiece vocab from tokenizer.json (or vocab.txt), typed and in phantom-space form,
    as BertModel.set_vocab writes it: ids the vocab lacks become UNUSED "[PAD<id>]" tokens."""
    by_id: dict[int, str] = {}
    added: dict[int, bool] = {}  # id -> special
    lowercase = strip_accents = None
    tokenizer_json = model_dir / "tokenizer.json"
    if tokenizer_json.is_file():
        tokenizer = json.loads(tokenizer_json.read_text(encoding="utf-8"))
        model = tokenizer.get("model") or {}
        if model.get("type") != "WordPiece":
            raise ConversionError(f"{model_dir.name}'s tokenizer is {model.get('type')!r}, not WordPiece.")
        by_id = {int(i): str(t) for t, i in model["vocab"].items()}
        for entry in tokenizer.get("added_tokens") or []:
            by_id[int(entry["id"])] = str(entry["content"])
            added[int(entry["id"])] = bool(entry.get("special"))
        lowercase, strip_accents = _normalizer_flags(tokenizer.get("normalizer") or {})
    elif (vocab_txt := model_dir / "vocab.txt").is_file():
        lines = vocab_txt.read_text(encoding="utf-8").splitlines()
        by_id = dict(enumerate(lines))
        added = {i: True for i, t in by_id.items() if t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
    else:
        raise ConversionError(f"{model_dir.name} has neither tokenizer.json nor vocab.txt.")
    if by_id and max(by_id) >= n_vocab:
        raise ConversionError(f"{model_dir.name}'s tokenizer has ids up to {max(by_id)}, past vocab_size {n_vocab}.")
    tokens: list[str] = []
    types: list[int] = []
    for token_id in range(n_vocab):
        token = by_id.get(token_id)
        if token is None:
            tokens.append(f"[PAD{token_id}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        if token_id in added:
            kind = gguf.TokenType.CONTROL if added[token_id] or _looks_special(token) else gguf.TokenType.USER_DEFINED
        else:
            kind = gguf.TokenType.NORMAL
        types.append(int(kind))
        tokens.append(_phantom(token, kind))
    return WordPieceVocab(tokens, types, lowercase, strip_accents)


def _phantom(token: str, kind: int) -> str:
    """llama.cpp's WPM tokenizer matches words with a leading "▁" and continuations bare."""
    if kind == gguf.TokenType.CONTROL:
        return token
    return token[2:] if token.startswith("##") else "\u2581" + token


def _looks_special(token: str) -> bool:
    return token.startswith("<|") and token.endswith("|>")


def _normalizer_flags(normalizer: dict) -> tuple[bool | None, bool | None]:
    """(lowercase, strip_accents) from a tokenizer.json normalizer, as gguf-py's SpecialVocab
    reads them after 0.19.0: a BertNormalizer's fields, Lowercase / StripAccents steps."""
    kind = normalizer.get("type")
    if kind == "BertNormalizer":
        return normalizer.get("lowercase"), normalizer.get("strip_accents")
    if kind == "Lowercase":
        return True, None
    if kind == "StripAccents":
        return None, True
    if kind == "Sequence":
        lowercase = strip = None
        for step in normalizer.get("normalizers") or []:
            low, acc = _normalizer_flags(step)
            lowercase = low if low is not None else lowercase
            strip = acc if acc is not None else strip
        return lowercase, strip
    return None, None


# --- the weights --------------------------------------------------------------------------------


def read_safetensors(path: Path) -> Iterator[tuple[str, np.ndarray]]:
    """Each tensor of a .safetensors file as a float numpy array (a view of a memory map where
    the dtype allows), in file order; BF16 widened to f32. Integer tensors (position ids) are
    skipped: no weight is an integer."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ConversionError(f"{path.name} is too short to be a safetensors file.")
        (length,) = struct.unpack("<Q", head)
        if length > _SAFETENSORS_HEADER_LIMIT:
            raise ConversionError(f"{path.name}'s header claims {length} bytes; it is not a safetensors file.")
        try:
            header = json.loads(f.read(length))
        except ValueError as exc:
            raise ConversionError(f"{path.name}'s header is not JSON: {exc}") from None
    data_start = 8 + length
    size = path.stat().st_size
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(entry.get("dtype"))
        if dtype is None:
            continue
        begin, end = (data_start + int(x) for x in entry["data_offsets"])
        shape = tuple(int(n) for n in entry["shape"])
        if not data_start <= begin <= end <= size or end - begin != np.dtype(dtype).itemsize * int(np.prod(shape)):
            raise ConversionError(f"{path.name}: the tensor {name} lies outside the file or has the wrong size.")
        array = mapped[begin:end].view(dtype).reshape(shape)
        if entry["dtype"] == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        yield name, array


def gguf_name(name_map: gguf.TensorNameMap, hf_name: str) -> str | None:
    """The GGUF name of a Hugging Face BERT tensor, or None for one llama.cpp has no use for
    (filter_tensors in convert_hf_to_gguf.py's BertModel)."""
    name = hf_name.removeprefix("bert.")
    if name.endswith(".gamma"):
        name = name[: -len(".gamma")] + ".weight"
    if name.endswith(".beta"):
        name = name[: -len(".beta")] + ".bias"
    if name in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias") or name.startswith("cls."):
        return None
    mapped = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
    if mapped is None:
        raise ConversionError(f"The tensor {hf_name} has no place in llama.cpp's BERT.")
    return mapped


def _stored(gguf_tensor: str, array: np.ndarray, f16: bool) -> np.ndarray:
    """convert_hf_to_gguf.py's type rule: vectors and norms, position and token-type embeddings
    stay f32; other matrices f16 where asked."""
    keep_f32 = (
        array.ndim <= 1
        or gguf_tensor.endswith("_norm.weight")
        or not gguf_tensor.endswith(".weight")
        or any(gguf_tensor.startswith(gguf.TENSOR_NAMES[kind]) for kind in F32_TENSORS)
    )
    return np.ascontiguousarray(array, dtype=np.float32 if keep_f32 or not f16 else np.float16)


# --- the whole ----------------------------------------------------------------------------------


def convert_bert(model_dir: Path, out: Path, f16: bool = True, name: str | None = None) -> Path:
    """Write `out`, the GGUF of the BERT model in `model_dir`; return it. `name`: the model's
    general.name (else the config's _name_or_path, which for a fine-tuned model often names
    the base it was trained from).

    Written beside `out` under a name of this process's own and renamed into place, so a crash
    never leaves a half-written GGUF under the name. Raises ConversionError (a ValueError)
    saying why a folder cannot be converted.
    """
    config = read_config(model_dir)
    weights = model_dir / "model.safetensors"
    if not weights.is_file():
        raise ConversionError(f"{model_dir.name} has no model.safetensors (a single-file safetensors model "
                              "is what can be converted).")
    vocab = read_vocab(model_dir, config.n_vocab)
    pooling = pooling_type(model_dir)
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, config.n_layer)
    arch = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT]

    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f"{out.name}.{os.getpid()}.partial")
    writer = gguf.GGUFWriter(partial, arch)
    try:
        _write_metadata(writer, config, vocab, pooling, f16, model_dir, name or config.name)
        seen: set[str] = set()
        for hf_name, array in read_safetensors(weights):
            target = gguf_name(name_map, hf_name)
            if target is None:
                continue
            writer.add_tensor(target, _stored(target, array, f16))
            seen.add(target)
        _check_complete(seen, config)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(partial, out)
    finally:
        writer.close()
        partial.unlink(missing_ok=True)
    log.info("converted %s into %s (%s)", model_dir, out, "f16" if f16 else "f32")
    return out


def _write_metadata(writer: gguf.GGUFWriter, config: BertConfig, vocab: WordPieceVocab,
                    pooling: gguf.PoolingType | None, f16: bool, model_dir: Path, name: str) -> None:
    writer.add_name(name)
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32)
    # TextModel.set_gguf_parameters, then BertModel's.
    writer.add_block_count(config.n_layer)
    writer.add_context_length(config.n_ctx)
    writer.add_embedding_length(config.n_embd)
    writer.add_feed_forward_length(config.n_ff)
    writer.add_head_count(config.n_head)
    writer.add_layer_norm_eps(config.layer_norm_eps)
    writer.add_causal_attention(False)
    if pooling is not None:
        writer.add_pooling_type(pooling)
    # BertModel.set_vocab. The pre-tokenizer names a BPE pre-tokenizer; llama.cpp reads it for
    # BPE vocabs only, so "default" stands where convert_hf_to_gguf.py would hash the tokenizer.
    writer.add_token_type_count(config.n_token_types)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    # CLS is written as BOS (the tokenizer's post-processor puts it first); llama.cpp reads no
    # separate CLS id, and gguf 0.19.0 has no key for one.
    special = gguf.SpecialVocab(model_dir, load_merges=False, n_vocab=config.n_vocab,
                                special_token_types=("bos", "eos", "unk", "sep", "pad", "mask"))
    special.add_to_gguf(writer, quiet=True)
    if vocab.lowercase is not None:
        writer.add_bool(NORMALIZER_LOWERCASE, vocab.lowercase)
    if vocab.strip_accents is not None:
        writer.add_bool(NORMALIZER_STRIP_ACCENTS, vocab.strip_accents)


def _check_complete(seen: set[str], config: BertConfig) -> None:
    """Every tensor llama.cpp's BERT loader requires is there (a truncated or foreign
    safetensors file fails here, not at load)."""
    required = {"token_embd.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"}
    for i in range(config.n_layer):
        for part in ("attn_q", "attn_k", "attn_v", "attn_output", "attn_output_norm", "ffn_up", "ffn_down",
                     "layer_output_norm"):
            required.add(f"blk.{i}.{part}.weight")
    missing = sorted(required - seen)
    if missing:
        raise ConversionError(f"model.safetensors lacks {len(missing)} tensors llama.cpp needs, "
                              f"{', '.join(missing[:3])} among them.")
