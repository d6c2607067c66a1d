"""A vision projector's header: what an mmproj GGUF (architecture "clip") says about itself.

A vision model is two files: the language model, and a projector that turns an image into
embeddings as wide as the model's own, which llama.cpp's multimodal library (libmtmd, its clip
loader) loads beside it. A projector is untrusted input like any model file, so it is read the
same way: header.py's walk (the magic, the version, every count weighed against the bytes left,
every tensor description checked), the data section's end checked against the file's size, and
every failure worded by modelfile.model_file_errors, naming the file. Then the values libmtmd
reads are checked as checks.py checks a model's (`Metadata`'s typed accessors): present, of the
right type, in the range clip.cpp accepts. It divides by the patch size and the head count, and
throws on a missing key or an image size past 8192; here each is a sentence instead.

A GGUF that is not a projector Hearth can use is refused, saying what it is: a language model
(its architecture is not "clip"), or a projector without a vision encoder (an audio-only one,
Ultravox's or Qwen2-Audio's: Hearth sends images only).

What the pairing and the memory plan need is kept (`ProjectorInfo`): how wide its output is
(libmtmd refuses a pair whose widths differ: library/projectors.py checks it first), the size
images are cut at, how many tokens one image becomes, the encoder's size. A projector's header
holds no vocabulary (a few hundred tensor descriptions), so reading one is cheap; a reading is
still kept per file version, as reading.py keeps a model's, since the scan asks for every
projector beside every listed model.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from ...common.text import printable
from .checks import LLAMA_MAX_LAYERS, MAX_WIDTH
from .header import FileVersion, Header, file_version, read_header
from .metadata import Invalid, Metadata
from .modelfile import ModelFileError, model_file_errors, regular_file_size
from .values import quote

ARCHITECTURE = "clip"  # what llama.cpp's converter writes as a projector's general.architecture
PROJECTORS_KEPT = 64  # file versions; a reading is a few dozen numbers
MAX_IMAGE_SIZE = 8192  # clip.cpp throws past it
MAX_PATCH_SIZE = 65535  # clip.cpp: "must be positive and less than 65536"

# The vision projector types the bundled libmtmd knows (clip-impl.h's PROJECTOR_TYPE_NAMES,
# less its audio-only ones); any other it refuses at load. Revisit when llama-cpp-python is upgraded.
VISION_PROJECTOR_TYPES = frozenset({
    "mlp", "mlp_norm", "ldp", "ldpv2", "resampler", "adapter", "qwen2vl_merger", "qwen2.5vl_merger",
    "qwen3vl_merger", "ling3vl", "step3vl", "gemma3", "gemma3nv", "gemma4v", "gemma4uv", "phi4", "idefics3",
    "pixtral", "internvl", "llama4", "qwen2.5o", "lfm2", "kimivl", "paddleocr", "lightonocr", "cogvlm",
    "janus_pro", "dots_ocr", "dots3note_v", "deepseekocr", "deepseekocr2", "deepseek4v", "glm4v", "glm5v",
    "youtuvl", "yasa2", "kimik25", "nemotron_v2_vl", "exaone4_5", "hunyuanvl", "minicpmv4_6", "mimovl",
    "minimax_m3", "granite4_vision", "muse-glimmer",
})
# Where libmtmd reads the width of a projector's output from a tensor (clip.cpp's
# clip_n_mmproj_embd) rather than from clip.vision.projection_dim: (tensor, dimension). Old LLaVA
# projectors wrote CLIP's own projection size (768) as projection_dim, so for them the tensor is
# the truth; for the others listed it agrees with the key. Any other type: projection_dim, which
# llama.cpp's converter writes as the language model's hidden size.
OUTPUT_WIDTH_TENSORS: dict[str, tuple[bytes, int]] = {
    "mlp": (b"mm.2.weight", 1),
    "mlp_norm": (b"mm.3.bias", 0),
    "ldp": (b"mm.model.mb_block.1.block.2.1.bias", 0),
    "ldpv2": (b"mm.model.peg.0.bias", 0),
    "gemma3": (b"mm.input_projection.weight", 0),
    "idefics3": (b"mm.model.fc.weight", 1),
}
# How many patches a side one image token covers, where the file does not say
# (clip.vision.projector.scale_factor or clip.vision.spatial_merge_size): clip.cpp's defaults.
DEFAULT_MERGE = {
    "gemma3": 4, "gemma4v": 3, "gemma4uv": 3, "ldp": 2, "ldpv2": 2, "adapter": 2, "qwen2vl_merger": 2,
    "qwen2.5vl_merger": 2, "qwen3vl_merger": 2, "ling3vl": 2, "qwen2.5o": 2, "glm4v": 2, "glm5v": 2,
    "mimovl": 2, "minimax_m3": 2, "youtuvl": 2, "exaone4_5": 2, "hunyuanvl": 2, "paddleocr": 2,
    "muse-glimmer": 2, "step3vl": 4, "minicpmv4_6": 4,
}
MERGE_KEYS = ("clip.vision.projector.scale_factor", "clip.vision.spatial_merge_size")


@dataclass(frozen=True)
class ProjectorInfo:
    """What a projector's header says, checked."""

    path: Path
    file_size: int
    name: str  # general.name, or the file's stem
    projector_type: str  # clip.projector_type, e.g. "gemma3"
    has_audio: bool  # an audio encoder too (a vision encoder it always has: one without is refused)
    projection_dim: int  # clip.vision.projection_dim
    output_width: int  # each image token's width: what libmtmd compares with the model's embedding length
    image_size: int  # the side, in pixels, images are brought to before they are cut into patches
    patch_size: int
    merge: int  # patches a side pooled or merged into one image token
    image_tokens: int  # what one image at image_size becomes (see image_tokens_for)
    embedding_length: int  # the vision encoder's width (clip.vision.embedding_length)
    feed_forward_length: int
    block_count: int
    head_count: int
    weights_bytes: int  # the data section: what llama.cpp reads into memory

    @property
    def patches(self) -> int:
        """Patches one image at image_size is cut into: the encoder's sequence length."""
        side = self.image_size // self.patch_size
        return side * side


def inspect_projector(path: str | os.PathLike) -> ProjectorInfo:
    """Read the projector at `path`, or raise ModelFileError saying what is wrong with it."""
    path = Path(path)
    regular_file_size(path, printable(path.name))
    with model_file_errors(path):
        return _reading(file_version(path))


def image_tokens_for(projector_type: str, image_size: int, patch_size: int, merge: int, meta: Metadata) -> int:
    """The tokens one image at the encoder's own size becomes, as clip.cpp's
    clip_n_output_tokens counts them for that size: patches a side divided by the merge, squared;
    a MiniCPM-V resampler's fixed query count. Projectors that take images at their own
    resolution (Qwen2-VL's kind, Pixtral) make more tokens of a larger image: this is the size
    llama.cpp reserves its buffers for, and the plan's figure."""
    if projector_type == "resampler":
        return meta.integer("clip.minicpmv_query_num", 1, MAX_WIDTH) or 64
    side = image_size // patch_size // merge
    return max(1, side * side)


@functools.lru_cache(maxsize=PROJECTORS_KEPT)
def _reading(version: FileVersion) -> ProjectorInfo:
    return projector_info(version, read_header(version))


def projector_info(version: FileVersion, header: Header) -> ProjectorInfo:
    """The projector at `version`, whose header is `header`; raises ModelFileError, or Invalid
    (model_file_errors words it)."""
    path, file_size = version.path, version.size
    name = printable(path.name)
    if header.data_size and header.data_start + header.data_size > file_size:
        raise ModelFileError(
            f"{name} is truncated: its weights end at byte {header.data_start + header.data_size:,}, past the end of "
            f"the file ({file_size:,} bytes). Download it again.")
    meta = header.metadata
    arch = meta.text("general.architecture")
    if arch != ARCHITECTURE:
        what = "does not say which architecture it is" if arch is None else f"is a {quote(arch)} model file"
        raise ModelFileError(f"{name} is not an image projector: it {what}. A projector (an mmproj file) "
                             f"has the architecture '{ARCHITECTURE}'.")
    if not header.tensors:
        raise ModelFileError(f"{name} holds no weights.")
    has_audio = bool(meta.flag("clip.has_audio_encoder"))
    if not meta.flag("clip.has_vision_encoder"):
        kind = "an audio projector, with no vision encoder" if has_audio else "a projector with no vision encoder"
        raise ModelFileError(f"{name} is {kind}: it cannot read images, and Hearth sends a model nothing else.")
    projector_type = _projector_type(meta)

    def required(suffix: str, low: int, high: int) -> int:
        key = f"clip.vision.{suffix}"
        value = meta.integer(key, low, high)
        if value is None:
            raise Invalid(f"its {key} is missing (llama.cpp needs it to read images)")
        return value

    embedding_length = required("embedding_length", 1, MAX_WIDTH)
    feed_forward_length = required("feed_forward_length", 1, MAX_WIDTH)
    block_count = required("block_count", 0, LLAMA_MAX_LAYERS)
    head_count = required("attention.head_count", 1, MAX_WIDTH)
    projection_dim = required("projection_dim", 1, MAX_WIDTH)
    image_size = required("image_size", 1, MAX_IMAGE_SIZE)
    patch_size = required("patch_size", 1, min(MAX_PATCH_SIZE, image_size))
    meta.number("clip.vision.attention.layer_norm_epsilon", 0.0)  # NaN or negative: a norm of garbage
    merge = next((value for key in MERGE_KEYS if (value := meta.integer(key, 1, MAX_WIDTH)) is not None),
                 DEFAULT_MERGE.get(projector_type, 1))
    return ProjectorInfo(
        path=path, file_size=file_size,
        name=printable(meta.text("general.name") or path.stem, limit=None),
        projector_type=projector_type, has_audio=has_audio, projection_dim=projection_dim,
        output_width=_output_width(header, projector_type, projection_dim),
        image_size=image_size, patch_size=patch_size, merge=merge,
        image_tokens=image_tokens_for(projector_type, image_size, patch_size, merge, meta),
        embedding_length=embedding_length, feed_forward_length=feed_forward_length,
        block_count=block_count, head_count=head_count, weights_bytes=header.data_size,
    )


def _projector_type(meta: Metadata) -> str:
    """clip.projector_type, or clip.vision.projector_type in a file with several encoders."""
    projector_type = meta.text("clip.projector_type") or meta.text("clip.vision.projector_type")
    if projector_type is None:
        raise Invalid("its clip.projector_type is missing (llama.cpp needs it to know the projector)")
    if projector_type not in VISION_PROJECTOR_TYPES:
        raise Invalid(f"its projector type is {quote(projector_type)}, which this version of llama.cpp "
                      "cannot read images with")
    return projector_type


def _output_width(header: Header, projector_type: str, projection_dim: int) -> int:
    """The width libmtmd gives each image token: a tensor's dimension for the types it reads it
    from (OUTPUT_WIDTH_TENSORS), else projection_dim."""
    wanted = OUTPUT_WIDTH_TENSORS.get(projector_type)
    if wanted is not None:
        name, dimension = wanted
        for tensor in header.tensors:
            if tensor.name == name and len(tensor.dims) > dimension:
                return tensor.dims[dimension]
    return projection_dim
