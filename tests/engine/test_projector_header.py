"""A projector's header (engine/gguf/projector.py): read through the same walk and the same
damage checks as model files, and refused with a clear message when it is no vision projector.

The files are real GGUFs written with gguf-py's GGUFWriter (the tiny vision pair's projector,
and clip headers with one key changed), then damaged byte by byte where the test is damage.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from support.model_files.tiny_gguf import write_gguf
from support.model_files.tiny_vision import GEMMA3_4B_SHAPE, TINY_SHAPE, ensure_tiny_vision_pair, write_projector

from app.engine.gguf.header import MAX_TENSORS
from app.engine.gguf.modelfile import ModelFileError
from app.engine.gguf.projector import inspect_projector

# A clip header as llama.cpp's converter writes one: key -> (GGUFWriter method, value).
CLIP_KEYS = {
    "clip.has_vision_encoder": ("add_bool", True),
    "clip.projector_type": ("add_string", "gemma3"),
    "clip.vision.projection_dim": ("add_uint32", 64),
    "clip.vision.image_size": ("add_uint32", 64),
    "clip.vision.patch_size": ("add_uint32", 8),
    "clip.vision.embedding_length": ("add_uint32", 32),
    "clip.vision.feed_forward_length": ("add_uint32", 48),
    "clip.vision.block_count": ("add_uint32", 1),
    "clip.vision.attention.head_count": ("add_uint32", 2),
    "clip.vision.attention.layer_norm_epsilon": ("add_float32", 1e-6),
}
PROJECTION = ("mm.input_projection.weight", np.zeros((32, 64), dtype=np.float32))  # ggml ne = [64, 32]


def clip_file(path: Path, arch: str = "clip", drop: tuple[str, ...] = (), tensors=(PROJECTION,), **changed) -> Path:
    """A clip header with CLIP_KEYS, less `drop`, with `changed` values (keys with "." as "__")."""
    keys = {key: spec for key, spec in CLIP_KEYS.items() if key not in drop}
    for name, value in changed.items():
        key = name.replace("__", ".")
        method = {bool: "add_bool", str: "add_string", float: "add_float32"}.get(type(value), "add_uint32")
        keys[key] = (method, value)

    def add(writer):
        for key, (method, value) in keys.items():
            getattr(writer, method)(key, value)

    return write_gguf(path, arch, add, tensors)


@pytest.fixture(scope="module")
def projector() -> Path:
    return ensure_tiny_vision_pair().projector


def test_reads_a_projector_s_header(projector):
    info = inspect_projector(projector)
    assert info.projector_type == "gemma3" and not info.has_audio
    assert (info.projection_dim, info.output_width) == (64, 64)  # the tiny model's embedding length
    assert (info.image_size, info.patch_size, info.merge) == (64, 8, 2)
    assert info.patches == TINY_SHAPE.patches and info.image_tokens == TINY_SHAPE.image_tokens == 16
    assert (info.embedding_length, info.feed_forward_length, info.block_count, info.head_count) == (32, 48, 1, 2)
    assert info.file_size == projector.stat().st_size
    assert 0 < info.weights_bytes < info.file_size


def test_gemma_3_s_real_shape_makes_its_256_tokens_an_image(tmp_path):
    shape = GEMMA3_4B_SHAPE.__class__(**{**GEMMA3_4B_SHAPE.__dict__, "blocks": 0})  # the real sizes, no blocks
    info = inspect_projector(write_projector(tmp_path / "mmproj-gemma.gguf", 2560, shape))
    assert info.image_tokens == 256 and info.patches == 4096 and info.output_width == 2560


def test_an_old_llava_projector_s_width_is_its_tensor_s_not_projection_dim(tmp_path):
    """Old LLaVA converters wrote CLIP's own 768 as projection_dim; libmtmd reads the width
    from the last projection matrix (mm.2.weight), and so does Hearth."""
    mlp = [("mm.0.weight", np.zeros((4096, 1024), dtype=np.float16)), ("mm.2.weight", np.zeros((4096, 32), dtype=np.float16))]
    info = inspect_projector(clip_file(tmp_path / "mmproj-llava.gguf", tensors=mlp, clip__projector_type="mlp",
                                       clip__vision__projection_dim=768))
    assert (info.projection_dim, info.output_width, info.merge) == (768, 4096, 1)


# --- damaged files: the model files' checks, the model files' words -----------------------------


def _damaged(source: Path, target: Path, change) -> Path:
    data = bytearray(source.read_bytes())
    target.write_bytes(bytes(change(data)))
    return target


@pytest.mark.parametrize(("damage", "said"), [
    (lambda data: data[:1000], "is truncated: the file ends inside its header"),
    (lambda data: data[:-100], "is truncated: its weights end at byte"),
    (lambda data: b"GGUX" + data[4:], "is not a GGUF model file (it does not start with 'GGUF')"),
    (lambda data: data[:8] + (MAX_TENSORS + 1).to_bytes(8, "little") + data[16:], "has a corrupt header: it claims"),
    (lambda data: data[:16] + (10_000).to_bytes(8, "little") + data[24:], "lists 10,000 metadata entries, which cannot fit"),
    (lambda data: b"", "only 0 bytes"),
], ids=["cut-in-header", "cut-in-weights", "bad-magic", "absurd-tensor-count", "absurd-key-count", "empty"])
def test_a_damaged_projector_is_refused_with_the_model_files_words(projector, tmp_path, damage, said):
    damaged = _damaged(projector, tmp_path / "mmproj-damaged.gguf", damage)
    with pytest.raises(ModelFileError) as refused:
        inspect_projector(damaged)
    assert said in str(refused.value) and "mmproj-damaged.gguf" in str(refused.value)


def test_a_missing_projector_is_said(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        inspect_projector(tmp_path / "mmproj-none.gguf")


# --- files that are not vision projectors ------------------------------------------------------


def test_a_language_model_is_not_a_projector():
    with pytest.raises(ModelFileError, match=r"tiny-vision.gguf is not an image projector: it is a 'llama' model file"):
        inspect_projector(ensure_tiny_vision_pair().model)


def test_an_audio_only_projector_is_refused(tmp_path):
    audio = clip_file(tmp_path / "mmproj-ultravox.gguf", clip__has_vision_encoder=False,
                      clip__has_audio_encoder=True, clip__projector_type="ultravox")
    with pytest.raises(ModelFileError, match="is an audio projector, with no vision encoder: it cannot read images"):
        inspect_projector(audio)


def test_a_projector_with_no_encoder_at_all_is_refused(tmp_path):
    with pytest.raises(ModelFileError, match="a projector with no vision encoder"):
        inspect_projector(clip_file(tmp_path / "mmproj-none.gguf", drop=("clip.has_vision_encoder",)))


@pytest.mark.parametrize(("changes", "said"), [
    ({"clip__projector_type": "teleporter"}, "projector type is 'teleporter', which this version of llama.cpp cannot"),
    ({"drop": ("clip.projector_type",)}, "clip.projector_type is missing"),
    ({"drop": ("clip.vision.projection_dim",)}, "clip.vision.projection_dim is missing"),
    ({"clip__vision__patch_size": 0}, "clip.vision.patch_size is 0"),
    ({"clip__vision__patch_size": 128}, "clip.vision.patch_size is 128 (expected a whole number from 1 to 64)"),
    ({"clip__vision__image_size": 9000}, "clip.vision.image_size is 9,000"),
    ({"clip__vision__attention__head_count": 0}, "clip.vision.attention.head_count is 0"),
    ({"clip__vision__embedding_length": 2**30}, "clip.vision.embedding_length is 1,073,741,824"),
    ({"clip__vision__attention__layer_norm_epsilon": math.nan}, "layer_norm_epsilon is NaN"),
    ({"clip__vision__projection_dim": "wide"}, "clip.vision.projection_dim is 'wide'"),
])
def test_values_llama_cpp_cannot_use_are_refused_naming_the_key(tmp_path, changes, said):
    with pytest.raises(ModelFileError) as refused:
        inspect_projector(clip_file(tmp_path / "mmproj-odd.gguf", **changes))
    assert said in str(refused.value) and str(refused.value).startswith("mmproj-odd.gguf is corrupt")


def test_a_projector_without_weights_is_refused(tmp_path):
    with pytest.raises(ModelFileError, match="holds no weights"):
        inspect_projector(clip_file(tmp_path / "mmproj-empty.gguf", tensors=()))
