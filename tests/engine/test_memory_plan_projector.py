"""The memory plan of a vision model: its projector (the tiny vision pair's, and gemma3
projectors of other shapes written for the test) counted where libmtmd puts it, what encoding
one image takes, the image's tokens, and what that does to the verdict and to GPU layers Auto.

The compute buffer is checked against llama.cpp itself: libmtmd's log of the buffer it
reserves, for a real load of each projector through llama-cpp-python's own binding.
"""

from __future__ import annotations

import logging
import re

import pytest
from support.model_files.tiny_vision import TINY_SHAPE, ProjectorShape, ensure_tiny_vision_pair, write_projector

from app.engine.gguf.modelfile import ModelFileError
from app.engine.gguf.projector import inspect_projector
from app.engine.memory_plan import (
    MIB,
    PREPARED_BYTES_PER_PIXEL,
    PROJECTOR_BASE,
    Fit,
    auto_gpu_layers,
    compute_buffer_bytes,
    largest_context,
    plan,
)

FREE = 1 << 40
# Gemma 3's vision tower at its real width and image size, two blocks of its 27 (from the second
# on, a block's peak is the same).
GEMMA_TWO_BLOCKS = ProjectorShape(image_size=896, patch_size=14, pool=4, embd=1152, heads=16, ffn=4304, blocks=2)


@pytest.fixture(scope="module")
def pair():
    return ensure_tiny_vision_pair()


def libmtmd_reserves(model, projector) -> float:
    """The CPU compute buffer libmtmd logs (MiB) when it loads `projector` beside `model`."""
    from llama_cpp import Llama
    from llama_cpp import mtmd_cpp as mtmd

    from app.engine.llama import log_shim

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    log_shim.install()
    log_shim.install_multimodal()
    logger = logging.getLogger("llama.cpp")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    llm = Llama(str(model), n_ctx=256, verbose=False)
    try:
        params = mtmd.mtmd_context_params_default()
        params.use_gpu = False
        params.n_threads = 1
        ctx = mtmd.mtmd_init_from_file(str(projector).encode(), llm._model.model, params)
        assert ctx, lines
        mtmd.mtmd_free(ctx)
    finally:
        llm.close()
        logger.removeHandler(handler)
        logger.setLevel(level)
    sizes = [float(m.group(1)) for line in lines if (m := re.search(r"CPU compute buffer size =\s+([\d.]+) MiB", line))]
    assert sizes, lines
    return sizes[-1]


@pytest.mark.parametrize("shape", [TINY_SHAPE, GEMMA_TWO_BLOCKS], ids=["tiny", "gemma3-width"])
def test_the_planned_compute_buffer_is_what_libmtmd_reserves(pair, tmp_path, shape):
    projector = write_projector(tmp_path / "mmproj-shape.gguf", pair.n_embd, shape)
    planned = compute_buffer_bytes(inspect_projector(projector)) / MIB
    assert planned == pytest.approx(libmtmd_reserves(pair.model, projector), abs=0.005)


def test_on_the_cpu_the_projector_and_one_image_s_encoding_are_ram(pair):
    info = inspect_projector(pair.projector)
    text = plan(pair.model, free_ram=FREE)
    vision = plan(pair.model, free_ram=FREE, projector=pair.projector)
    expected = (info.weights_bytes + compute_buffer_bytes(info) + PROJECTOR_BASE
                + PREPARED_BYTES_PER_PIXEL * info.image_size ** 2 + info.image_tokens * info.output_width * 4
                + 2 * info.patches * max(info.embedding_length, info.feed_forward_length))
    assert vision.projector_ram == expected and vision.projector_vram == 0
    assert vision.total_ram == text.total_ram + expected and vision.total_vram == text.total_vram == 0
    assert vision.image_tokens == pair.image_tokens == 16 and text.image_tokens == 0
    assert (vision.weights_ram, vision.kv_ram, vision.compute_ram) == (text.weights_ram, text.kv_ram, text.compute_ram)


def test_with_layers_offloaded_its_weights_and_buffer_go_to_the_gpu(pair):
    info = inspect_projector(pair.projector)
    layers = 3  # the tiny model's 2 blocks and its output layer
    text = plan(pair.model, gpu_layers=layers, free_ram=FREE, free_vram=FREE)
    vision = plan(pair.model, gpu_layers=layers, free_ram=FREE, free_vram=FREE, projector=info)
    assert vision.projector_vram == info.weights_bytes + compute_buffer_bytes(info)
    assert vision.total_vram == text.total_vram + vision.projector_vram
    assert vision.projector_ram == PROJECTOR_BASE + PREPARED_BYTES_PER_PIXEL * 64 ** 2 + 16 * 64 * 4  # prepared on the CPU
    assert vision.total_ram == text.total_ram + vision.projector_ram


def test_a_projector_that_does_not_fit_changes_the_verdict_and_the_largest_context(pair, tmp_path):
    big = write_projector(tmp_path / "mmproj-big.gguf", pair.n_embd, GEMMA_TWO_BLOCKS)
    text = plan(pair.model, free_ram=FREE)
    free = int(text.total_ram * 1.2)  # the text model fits with room for the plan's error
    assert plan(pair.model, free_ram=free).fit is Fit.FITS
    vision = plan(pair.model, free_ram=free, projector=big)
    assert vision.fit is Fit.DOES_NOT_FIT and vision.largest_context == 0
    assert largest_context(pair.model, free_ram=free) > 0


def test_gpu_layers_auto_leaves_room_for_the_projector(pair, tmp_path):
    big = inspect_projector(write_projector(tmp_path / "mmproj-big.gguf", pair.n_embd, GEMMA_TWO_BLOCKS))
    every_layer = plan(pair.model, gpu_layers=3, free_ram=FREE, free_vram=FREE)
    free_vram = every_layer.total_vram + (1 << 30) + 1  # llama.cpp's margin, and all three layers fit
    assert auto_gpu_layers(pair.model, free_vram=free_vram) == 3
    assert auto_gpu_layers(pair.model, free_vram=free_vram, projector=big) < 3


def test_it_says_the_projector_in_its_summary_and_its_json(pair):
    cpu = plan(pair.model, free_ram=FREE, projector=pair.projector)
    assert "projector" in cpu.summary and "16 tokens" in cpu.summary
    assert cpu.to_json()["projector"] == {"ram": cpu.projector_ram, "vram": 0, "image_tokens": 16}
    assert plan(pair.model, free_ram=FREE).to_json()["projector"] is None
    gpu = plan(pair.model, gpu_layers=3, free_ram=FREE, free_vram=FREE, projector=pair.projector)
    assert re.search(r"VRAM \(3/3 layers, projector [\d.]+ KiB for an image of 16 tokens\)", gpu.summary)


def test_a_damaged_projector_is_a_model_file_error(pair, tmp_path):
    cut = tmp_path / "mmproj-cut.gguf"
    cut.write_bytes(pair.projector.read_bytes()[:-64])
    with pytest.raises(ModelFileError, match="mmproj-cut.gguf is truncated"):
        plan(pair.model, free_ram=FREE, projector=cut)
