"""A tiny, real vision pair for the image path: a language model and its multimodal projector
(an `mmproj-*.gguf`, GGUF architecture `clip`), both loadable by llama.cpp and libmtmd, with
random weights from a fixed seed, so the engine's image path runs through real llama.cpp in
milliseconds.

The projector is a `gemma3` one: what Gemma 3 4B's real mmproj is (a SigLIP vision tower, a
2-D average pool, the soft embedding RMS norm, a linear projection into the language model's
embedding space). Chosen over the alternatives because, in libmtmd:

- positions are plain (no M-RoPE, unlike the Qwen-VL types): an image takes as many positions
  as tokens, so "the prompt grows by the image's token count" holds exactly;
- the image size is fixed: every image is resized to a square of the projector's image size, so
  every image becomes the same number of image tokens whatever its shape (no tiling, unlike
  idefics3 or the LLaVA-UHD types, whose token count depends on the image);
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
a projector for another embedding length, for the "mismatched projector" checks; `write_projector`
one of another shape (TINY_SHAPE is the pair's; GEMMA3_4B_SHAPE, the real Gemma 3 4B's sizes, is
what bench/image_turns.py times).

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
SEED = zlib.crc32(b"hearth-tiny-vision")


@dataclass(frozen=True)
class ProjectorShape:
    """The sizes of a gemma3 projector: its vision tower and the pool after it."""

    image_size: int  # pixels a side; libmtmd resizes every image to it
    patch_size: int
    pool: int  # the average pool's kernel and stride, per side
    embd: int
    heads: int
    ffn: int  # unlike embd: clip.cpp swaps ffn up/down of old files when down's input is n_embd
    blocks: int

    @property
    def patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2

    @property
    def image_tokens(self) -> int:
        return (self.image_size // self.patch_size // self.pool) ** 2


TINY_SHAPE = ProjectorShape(image_size=64, patch_size=8, pool=2, embd=32, heads=2, ffn=48, blocks=1)
# Gemma 3 4B's real projector (and 12B's, 27B's): SigLIP so400m at 896 px in 14 px patches, 27
# blocks 1152 wide, pooled 4 x 4 into 256 image tokens. For bench/image_turns.py, which writes it
# with random weights (fewer blocks where asked) to time libmtmd's encoding at the real size.
GEMMA3_4B_SHAPE = ProjectorShape(image_size=896, patch_size=14, pool=4, embd=1152, heads=16, ffn=4304, blocks=27)


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


def _projector_tensors(projection_dim: int, shape: ProjectorShape):
    rng = np.random.default_rng(SEED)
    embd, ffn = shape.embd, shape.ffn

    def matrix(*dims):  # numpy shape is ggml's reversed: (rows = outputs, cols = inputs)
        return (rng.standard_normal(dims, dtype=np.float32) * 0.1).astype(np.float16)

    def vector(n, around=0.0):
        return (around + rng.standard_normal(n, dtype=np.float32) * 0.02).astype(np.float32)

    yield _name(MODEL_TENSOR.V_ENC_EMBD_PATCH, "weight"), matrix(embd, 3, shape.patch_size, shape.patch_size)
    yield _name(MODEL_TENSOR.V_ENC_EMBD_PATCH, "bias"), vector(embd)
    yield _name(MODEL_TENSOR.V_ENC_EMBD_POS, "weight"), rng.standard_normal((shape.patches, embd), dtype=np.float32) * 0.1
    for block in range(shape.blocks):
        for tensor in (MODEL_TENSOR.V_ENC_ATTN_Q, MODEL_TENSOR.V_ENC_ATTN_K, MODEL_TENSOR.V_ENC_ATTN_V,
                       MODEL_TENSOR.V_ENC_ATTN_O):
            yield _name(tensor, "weight", block), matrix(embd, embd)
            yield _name(tensor, "bias", block), vector(embd)
        for norm in (MODEL_TENSOR.V_ENC_INPUT_NORM, MODEL_TENSOR.V_ENC_POST_ATTN_NORM):
            yield _name(norm, "weight", block), vector(embd, around=1.0)
            yield _name(norm, "bias", block), vector(embd)
        yield _name(MODEL_TENSOR.V_ENC_FFN_UP, "weight", block), matrix(ffn, embd)
        yield _name(MODEL_TENSOR.V_ENC_FFN_UP, "bias", block), vector(ffn)
        yield _name(MODEL_TENSOR.V_ENC_FFN_DOWN, "weight", block), matrix(embd, ffn)
        yield _name(MODEL_TENSOR.V_ENC_FFN_DOWN, "bias", block), vector(embd)
    yield _name(MODEL_TENSOR.V_POST_NORM, "weight"), vector(embd, around=1.0)
    yield _name(MODEL_TENSOR.V_POST_NORM, "bias"), vector(embd)
    yield _name(MODEL_TENSOR.V_MM_SOFT_EMB_NORM, "weight"), vector(embd, around=1.0)
    # Gemma 3 stores the projection input-major: ggml ne = [projection_dim, embd].
    yield _name(MODEL_TENSOR.V_MM_INP_PROJ, "weight"), matrix(embd, projection_dim)


def write_tiny_projector(path: Path, projection_dim: int = tiny.N_EMBD) -> Path:
    """A gemma3 projector whose output (`clip.vision.projection_dim`, and the projection
    tensor's width, which is what libmtmd compares) is `projection_dim` wide: the tiny model's
    embedding length by default, anything else for a projector that does not match it."""
    return write_projector(path, projection_dim, TINY_SHAPE)


def write_projector(path: Path, projection_dim: int, shape: ProjectorShape) -> Path:
    """A gemma3 projector of `shape` (random weights, f16 matrices) projecting into a language
    model `projection_dim` wide."""

    def keys(writer: GGUFWriter) -> None:
        writer.add_type(GGUFType.MMPROJ)
        writer.add_name("hearth-tiny-vision-mmproj")
        writer.add_file_type(LlamaFileType.MOSTLY_F16)
        writer.add_clip_has_vision_encoder(True)
        writer.add_clip_projector_type(PROJECTOR_TYPE)
        writer.add_vision_projection_dim(projection_dim)
        writer.add_vision_image_size(shape.image_size)
        writer.add_vision_patch_size(shape.patch_size)
        writer.add_vision_embedding_length(shape.embd)
        writer.add_vision_feed_forward_length(shape.ffn)
        writer.add_vision_block_count(shape.blocks)
        writer.add_vision_head_count(shape.heads)
        writer.add_vision_attention_layernorm_eps(1e-6)
        writer.add_vision_use_gelu(True)
        writer.add_vision_projector_scale_factor(shape.pool)
        writer.add_vision_image_mean([0.5, 0.5, 0.5])
        writer.add_vision_image_std([0.5, 0.5, 0.5])

    return write_gguf(path, "clip", keys, _projector_tensors(projection_dim, shape))


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
    return VisionPair(folder / MODEL_NAME, folder / PROJECTOR_NAME, TINY_SHAPE.image_tokens, PROJECTOR_TYPE,
                      TINY_SHAPE.image_size, tiny.N_EMBD)
