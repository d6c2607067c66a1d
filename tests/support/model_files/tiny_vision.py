"""A tiny, real vision pair for the image path: a language model and its multimodal projector
(an `mmproj-*.gguf`, GGUF architecture `clip`), both loadable by llama.cpp and libmtmd, with
random weights from a fixed seed, so the engine's image path runs through real llama.cpp in
milliseconds.

The projector is a `gemma3` one: what Gemma 3 4B's real mmproj is (a SigLIP vision tower, a
2-D average pool, the soft embedding RMS norm, a linear projection into the language model's
embedding space). Chosen over the alternatives because, in libmtmd:

- positions are plain (no M-RoPE, unlike the Qwen-VL types): an image takes as many positions
  as tokens, so "the prompt grows by the image's token count" holds exactly;
- the image size is fixed: every image is resized to IMAGE_SIZE x IMAGE_SIZE, so every image
  becomes the same IMAGE_TOKENS tokens whatever its shape (no tiling, unlike idefics3 or the
  LLaVA-UHD types, whose token count depends on the image);
- it has few tensors (one ViT block here, plus two projector tensors);
- it decodes the image's tokens with non-causal attention (`mtmd_decode_use_non_causal` is
  true), as a real Gemma 3 does: the pair exercises that path too, which needs the whole image
  in one micro-batch.

Sizes: a 64 px image cut into 8 px patches (8 x 8 = 64 patches), a 32-wide vision tower with
one block, pooled 2 x 2 (`clip.vision.projector.scale_factor`, as the converter writes for the
tiny test Gemma 3) into 4 x 4 = 16 image tokens, projected to 64 = the language model's
embedding length. The projector file is about 40 KB.

The language model is the tinyllama family of tiny_models.py, written by its own writer
(llama architecture, Llama 2 SentencePiece vocab, TinyLlama's chat template, 64-wide, 2
layers, about 5 MB): a real chat model whose embedding length equals the projector's output.
libmtmd wraps a gemma3 image in the text `<start_of_image>` ... `<end_of_image>`; with this
vocab those are ordinary text tokens, which is how llama.cpp treats them with any vocab that
lacks them.

Every clip key and tensor name is written here only, through gguf-py's own GGUFWriter methods
and TENSOR_NAMES table (the names llama.cpp's converter writes). `write_tiny_projector` writes
a projector for another embedding length, for the "mismatched projector" checks.

The pair is cached in tests/.cache/tiny-vision/<key>/ (the key hashes this file and everything
tiny_models' files depend on), as `tiny-vision.gguf` with `mmproj-tiny-vision.gguf` beside it,
the way a downloaded pair sits in a folder.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import MODEL_TENSOR, TENSOR_NAMES, GGUFType, GGUFWriter, LlamaFileType

from support.model_files import tiny_models as tiny
from support.model_files.tiny_gguf import write_gguf

CACHE_ROOT = tiny.TESTS / ".cache" / "tiny-vision"
MODEL_NAME = "tiny-vision.gguf"
PROJECTOR_NAME = "mmproj-tiny-vision.gguf"

LANGUAGE_FAMILY = "tinyllama"
PROJECTOR_TYPE = "gemma3"
IMAGE_SIZE = 64  # pixels a side; libmtmd resizes every image to it
PATCH_SIZE = 8
POOL = 2  # the average pool's kernel and stride, per side
IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE // POOL) ** 2
N_PATCHES = (IMAGE_SIZE // PATCH_SIZE) ** 2
V_EMBD = 32
V_HEAD = 2
V_FF = 48  # unlike V_EMBD: clip.cpp swaps ffn up/down of old files when down's input is n_embd
V_LAYER = 1
SEED = zlib.crc32(b"hearth-tiny-vision")


@dataclass(frozen=True)
class VisionPair:
    model: Path
    projector: Path
    image_tokens: int  # tokens (and positions) one image becomes
    projector_type: str
    image_size: int  # the side every image is resized to
    n_embd: int  # the model's embedding length = the projector's projection_dim


def _name(tensor: MODEL_TENSOR, suffix: str, block: int | None = None) -> str:
    name = TENSOR_NAMES[tensor]
    return f"{name.format(bid=block) if block is not None else name}.{suffix}"


def _projector_tensors(projection_dim: int):
    rng = np.random.default_rng(SEED)

    def matrix(*shape):  # numpy shape is ggml's reversed: (rows = outputs, cols = inputs)
        return (rng.standard_normal(shape, dtype=np.float32) * 0.1).astype(np.float16)

    def vector(n, around=0.0):
        return (around + rng.standard_normal(n, dtype=np.float32) * 0.02).astype(np.float32)

    yield _name(MODEL_TENSOR.V_ENC_EMBD_PATCH, "weight"), matrix(V_EMBD, 3, PATCH_SIZE, PATCH_SIZE)
    yield _name(MODEL_TENSOR.V_ENC_EMBD_PATCH, "bias"), vector(V_EMBD)
    yield _name(MODEL_TENSOR.V_ENC_EMBD_POS, "weight"), rng.standard_normal((N_PATCHES, V_EMBD), dtype=np.float32) * 0.1
    for block in range(V_LAYER):
        for tensor in (MODEL_TENSOR.V_ENC_ATTN_Q, MODEL_TENSOR.V_ENC_ATTN_K, MODEL_TENSOR.V_ENC_ATTN_V,
                       MODEL_TENSOR.V_ENC_ATTN_O):
            yield _name(tensor, "weight", block), matrix(V_EMBD, V_EMBD)
            yield _name(tensor, "bias", block), vector(V_EMBD)
        for norm in (MODEL_TENSOR.V_ENC_INPUT_NORM, MODEL_TENSOR.V_ENC_POST_ATTN_NORM):
            yield _name(norm, "weight", block), vector(V_EMBD, around=1.0)
            yield _name(norm, "bias", block), vector(V_EMBD)
        yield _name(MODEL_TENSOR.V_ENC_FFN_UP, "weight", block), matrix(V_FF, V_EMBD)
        yield _name(MODEL_TENSOR.V_ENC_FFN_UP, "bias", block), vector(V_FF)
        yield _name(MODEL_TENSOR.V_ENC_FFN_DOWN, "weight", block), matrix(V_EMBD, V_FF)
        yield _name(MODEL_TENSOR.V_ENC_FFN_DOWN, "bias", block), vector(V_EMBD)
    yield _name(MODEL_TENSOR.V_POST_NORM, "weight"), vector(V_EMBD, around=1.0)
    yield _name(MODEL_TENSOR.V_POST_NORM, "bias"), vector(V_EMBD)
    yield _name(MODEL_TENSOR.V_MM_SOFT_EMB_NORM, "weight"), vector(V_EMBD, around=1.0)
    # Gemma 3 stores the projection input-major: ggml ne = [projection_dim, V_EMBD].
    yield _name(MODEL_TENSOR.V_MM_INP_PROJ, "weight"), matrix(V_EMBD, projection_dim)


def write_tiny_projector(path: Path, projection_dim: int = tiny.N_EMBD) -> Path:
    """A gemma3 projector whose output (`clip.vision.projection_dim`, and the projection
    tensor's width, which is what libmtmd compares) is `projection_dim` wide: the tiny model's
    embedding length by default, anything else for a projector that does not match it."""

    def keys(writer: GGUFWriter) -> None:
        writer.add_type(GGUFType.MMPROJ)
        writer.add_name("hearth-tiny-vision-mmproj")
        writer.add_file_type(LlamaFileType.MOSTLY_F16)
        writer.add_clip_has_vision_encoder(True)
        writer.add_clip_projector_type(PROJECTOR_TYPE)
        writer.add_vision_projection_dim(projection_dim)
        writer.add_vision_image_size(IMAGE_SIZE)
        writer.add_vision_patch_size(PATCH_SIZE)
        writer.add_vision_embedding_length(V_EMBD)
        writer.add_vision_feed_forward_length(V_FF)
        writer.add_vision_block_count(V_LAYER)
        writer.add_vision_head_count(V_HEAD)
        writer.add_vision_attention_layernorm_eps(1e-6)
        writer.add_vision_use_gelu(True)
        writer.add_vision_projector_scale_factor(POOL)
        writer.add_vision_image_mean([0.5, 0.5, 0.5])
        writer.add_vision_image_std([0.5, 0.5, 0.5])

    return write_gguf(path, "clip", keys, _projector_tensors(projection_dim))


def _build(directory: Path) -> None:
    family = next(f for f in tiny.TINY_FAMILIES if f.name == LANGUAGE_FAMILY)
    vocab = tiny.read_metadata(tiny.VOCAB_DIR / family.vocab)
    tiny.write_model(family, tiny.load_families_json()[family.name], vocab, directory / MODEL_NAME)
    write_tiny_projector(directory / PROJECTOR_NAME)


def _key() -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(tiny.source_key().encode())
    return digest.hexdigest()[:16]


def ensure_tiny_vision_pair(cache_root: Path = CACHE_ROOT) -> VisionPair:
    """Build the pair once per source key; later calls return the cached files."""
    folder = tiny.cached_build(cache_root, _key(), _build)
    return VisionPair(folder / MODEL_NAME, folder / PROJECTOR_NAME, IMAGE_TOKENS, PROJECTOR_TYPE,
                      IMAGE_SIZE, tiny.N_EMBD)
