"""The memory plan: llama.cpp's own figures for the KV cache and the reserved compute buffer,
sliding-window and per-layer caches from the header, where offloaded layers go, the verdict,
the largest context, GPU layers Auto, and `hearth inspect --plan`'s JSON.

Expected sizes come from llama.cpp, not from the plan: its log lines for the real Gemma 3 270M
(one load below; the others were read from loads of the same file with llama-cpp-python
0.3.36, "llama_kv_cache: size = ..."), and the tensors a test writes itself. How close the
plan's totals come to a process's resident memory is bench/memory_plan.py's job.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.model_files.gguf_corpus import BOOL, U32, Shape, array, damaged_copy, read_real_header, tiny_llama, u32

from app.engine import machine
from app.engine.gguf.modelfile import ModelFileError
from app.engine.gguf.reading import model_shape
from app.engine.memory_plan import (
    ACCURACY,
    MIB,
    VRAM_MARGIN,
    WHOLE_WINDOW_CACHE,
    WINDOW_CHECKPOINTS,
    Fit,
    auto_gpu_layers,
    gpu_layers_for,
    keeps_checkpoints,
    largest_context,
    plan,
)
from app.engine.types import FlashAttention, KvCacheType, LoadOptions

ROOT = Path(__file__).resolve().parents[2]
FREE = 1 << 40  # more than any plan here
F16, Q8_0 = KvCacheType.F16, KvCacheType.Q8_0
GEMMA_LAYERS = 18
GEMMA_TOKEN_EMBD = 178_257_920  # 640 x 262144 Q8_0
GEMMA_Q4_K_BLOCK_WEIGHTS = 13_271_040  # the 27 Q4_K matmul weights AVX2 repacks (llama.cpp: CPU_REPACK 12.66 MiB)


def options(n_ctx: int, kv_k: KvCacheType = F16, kv_v: KvCacheType = F16, **more) -> LoadOptions:
    return LoadOptions(n_ctx=n_ctx, kv_type_k=kv_k, kv_type_v=kv_v, flash_attn=FlashAttention.ON, **more)


@pytest.fixture(scope="module")
def llama_cpp_says(gemma_path):
    """One real load of Gemma 3 as the engine makes it (a window-sized sliding cache, flash
    attention), K q8_0 and V f16: what llama.cpp logs about its KV cache and its CPU compute
    buffer, in MiB."""
    from llama_cpp import Llama
    from llama_cpp import llama_cpp as llama_c

    from app.engine.llama import log_shim as llama_log

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    llama_log.install()
    logger = logging.getLogger("llama.cpp")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        llm = Llama(str(gemma_path), n_ctx=1024, flash_attn=True, swa_full=WHOLE_WINDOW_CACHE,
                    type_k=llama_c.GGML_TYPE_Q8_0, type_v=llama_c.GGML_TYPE_F16, verbose=True)
        llm.close()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    kv = [float(m.group(1)) for line in lines if (m := re.search(r"llama_kv_cache: size =\s+([\d.]+) MiB", line))]
    compute = [float(m.group(1)) for line in lines
               if (m := re.search(r"CPU compute buffer size =\s+([\d.]+) MiB", line))]
    assert len(kv) == 2 and len(compute) == 1, lines  # the full and the sliding-window cache
    return {"kv": sum(kv), "compute": compute[0]}


def test_kv_cache_is_what_llama_cpp_allocates_for_gemma(gemma_path, llama_cpp_says):
    planned = plan(gemma_path, options(1024, Q8_0, F16), free_ram=FREE)
    assert planned.kv_bytes / MIB == pytest.approx(llama_cpp_says["kv"], abs=0.005)


def test_reserved_compute_buffer_is_what_llama_cpp_reserves(gemma_path, llama_cpp_says):
    """On a GPU the whole reservation is taken: the plan's device compute buffer is llama.cpp's
    worst-case graph, which its CPU reservation shows (a full ubatch's logits)."""
    planned = plan(gemma_path, options(1024, Q8_0, F16), gpu_layers=GEMMA_LAYERS + 1, free_ram=FREE, free_vram=FREE)
    assert planned.compute_vram / MIB == pytest.approx(llama_cpp_says["compute"], abs=0.005)


@pytest.mark.parametrize(("n_ctx", "swa_full", "full_mib", "window_mib"), [
    (2048, True, 6.0, 30.0),  # every sliding-window cell kept (swa_full, Hearth's engine before #31)
    (2048, False, 6.0, 15.0),  # llama.cpp's default and the engine's: 512 window + 512 ubatch = 1024 cells
    (3000, False, 9.0, 15.0),  # the context padded to 3072 cells; the window stays 1024
    (100, True, 0.75, 3.75),  # padded to 256 cells
])
def test_sliding_window_layers_are_sized_as_llama_cpp_sizes_them(gemma_path, n_ctx, swa_full, full_mib, window_mib):
    """Gemma 3: 3 global layers and 15 sliding-window ones (5:1), f16. Figures from llama.cpp's
    log: 'llama_kv_cache: size = ...' for the non-SWA and the SWA cache."""
    planned = plan(gemma_path, LoadOptions(n_ctx=n_ctx), free_ram=FREE, swa_full=swa_full)
    assert planned.kv_bytes / MIB == pytest.approx(full_mib + window_mib)


def test_q8_0_cache_is_llama_cpp_s_at_32k(gemma_path):
    """llama.cpp: 51.00 + 255.00 MiB for q8_0 K and V at 32768 cells with swa_full (f16: 96 +
    480); with the engine's window-sized cache the 15 sliding layers hold 1024 cells each."""
    assert plan(gemma_path, options(32768, Q8_0, Q8_0), free_ram=FREE, swa_full=True).kv_bytes == 306 * MIB
    assert plan(gemma_path, options(32768), free_ram=FREE, swa_full=True).kv_bytes == 576 * MIB
    assert plan(gemma_path, options(32768, Q8_0, Q8_0), free_ram=FREE).kv_bytes == 51 * MIB + 15 * 1024 * 2 * 272
    assert plan(gemma_path, options(32768), free_ram=FREE).kv_bytes == (96 + 15) * MIB


def test_window_checkpoints_are_planned_in_ram_for_sliding_layers_only(gemma_path, tmp_path):
    """Each checkpoint holds the 15 sliding layers' 512 window cells (llama/window_checkpoints.py),
    wherever the layers are; a whole window cache needs none, a model without a window has none,
    and neither has a window that does not slide (llama.cpp's chunked one: Llama 4)."""
    window = plan(gemma_path, options(4096), free_ram=FREE)
    assert window.checkpoints_ram == WINDOW_CHECKPOINTS * 15 * 512 * 1024
    assert window.total_ram == (window.weights_ram + window.kv_ram + window.checkpoints_ram + window.compute_ram
                                + window.runtime_ram)
    assert plan(gemma_path, options(4096), free_ram=FREE, swa_full=True).checkpoints_ram == 0
    # A context the window-sized cache holds whole (1,024 cells here): nothing ever leaves it.
    assert plan(gemma_path, options(1024), free_ram=FREE).checkpoints_ram == 0
    assert plan(gemma_path, options(1280), free_ram=FREE).checkpoints_ram == WINDOW_CHECKPOINTS * 15 * 512 * 1024
    none_slide = damaged_copy(read_real_header(gemma_path), tmp_path / "flags.gguf",
                              {"gemma3.attention.sliding_window_pattern": array(BOOL, [False] * 18)})
    assert plan(none_slide, options(4096), free_ram=FREE).checkpoints_ram == 0
    assert keeps_checkpoints("gemma3", 512, 4096, 512, swa_full=False)
    assert not keeps_checkpoints("gemma3", 512, 4096, 512, swa_full=True)
    assert not keeps_checkpoints("gemma3", 512, 1024, 512, swa_full=False)
    assert not keeps_checkpoints("llama4", 8192, 32768, 512, swa_full=False)  # chunked: llama.cpp keeps the chunk


def test_per_layer_kv_heads_and_the_window_pattern_come_from_the_header(gemma_path, tmp_path):
    real = read_real_header(gemma_path)
    two_heads = damaged_copy(real, tmp_path / "two.gguf", {"gemma3.attention.head_count_kv": array(U32, [2] * 18)})
    assert plan(two_heads, options(2048), free_ram=FREE, swa_full=True).kv_bytes == 2 * 36 * MIB

    # A period of 3: layers 0,1 slide and 2 is global, six times. 6 global layers x 2048 cells
    # + 12 sliding ones x 1024 cells, 1 KiB a cell (256 K and 256 V values in f16).
    period_3 = damaged_copy(real, tmp_path / "p3.gguf", {"gemma3.attention.sliding_window_pattern": u32(3)})
    assert plan(period_3, options(2048), free_ram=FREE, swa_full=False).kv_bytes == (6 * 2048 + 12 * 1024) * 1024

    none_slide = damaged_copy(real, tmp_path / "flags.gguf",
                              {"gemma3.attention.sliding_window_pattern": array(BOOL, [False] * 18)})
    assert plan(none_slide, options(2048), free_ram=FREE, swa_full=False).kv_bytes == 36 * MIB


def test_the_plan_reads_nothing_past_the_header(gemma_path, tmp_path):
    """A file cut right after its header plans as the whole model: no weight is read."""
    real = read_real_header(gemma_path)
    whole = damaged_copy(real, tmp_path / "whole.gguf")
    cut = damaged_copy(real, tmp_path / "cut.gguf", size=whole.stat().st_size - real.data_size)
    assert plan(cut, options(2048), free_ram=FREE) == plan(gemma_path, options(2048), free_ram=FREE)


def test_a_damaged_header_is_a_model_file_error(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 16)
    with pytest.raises(ModelFileError):
        plan(bad, free_ram=FREE)


# --- where the layers go ------------------------------------------------------------------------


@pytest.fixture
def tiny(tmp_path) -> Path:
    """4 layers of 32 (f32): token_embd 263 x 32, no output.weight (tied), KV 2 heads x 8."""
    return tiny_llama(Shape(n_layer=4)).write(tmp_path / "tiny.gguf")


TINY_EMBD = 263 * 32 * 4
TINY_BLOCK = (32 + 32 * 32 + 16 * 32 * 2 + 32 * 32 + 32 + 3 * 64 * 32) * 4  # norms, q, k, v, out, ffn
TINY_KV_PER_LAYER = 1024 * 2 * 16 * 2  # 1024 cells, K and V of 2 heads x 16, f16


def test_the_output_layer_goes_to_the_gpu_first_and_the_embeddings_stay(tiny, monkeypatch):
    monkeypatch.setattr(machine, "repacked_types", lambda: {})
    on_cpu = plan(tiny, options(1024), free_ram=FREE)
    assert (on_cpu.weights_vram, on_cpu.kv_vram) == (0, 0)
    assert on_cpu.weights_ram == TINY_EMBD + 32 * 4 + 4 * TINY_BLOCK  # + output_norm
    assert on_cpu.kv_ram == 4 * TINY_KV_PER_LAYER

    output_only = plan(tiny, options(1024), gpu_layers=1, free_ram=FREE, free_vram=FREE)
    assert output_only.weights_vram == 32 * 4 + TINY_EMBD  # output_norm and token_embd again (tied)
    assert output_only.weights_ram == TINY_EMBD + 4 * TINY_BLOCK
    assert output_only.kv_vram == 0

    two = plan(tiny, options(1024), gpu_layers=2, free_ram=FREE, free_vram=FREE)
    assert two.weights_vram == output_only.weights_vram + TINY_BLOCK  # the last block
    assert (two.kv_ram, two.kv_vram) == (3 * TINY_KV_PER_LAYER, TINY_KV_PER_LAYER)

    everything = plan(tiny, options(1024), gpu_layers=99, free_ram=FREE, free_vram=FREE)
    assert everything.gpu_layers == everything.total_layers == 5
    assert everything.weights_ram == TINY_EMBD and everything.kv_ram == 0
    assert everything.compute_vram > 0 and everything.compute_ram < on_cpu.compute_ram


def test_flash_attention_auto_is_planned_as_the_engine_resolves_it(tiny):
    """Auto: off on the CPU with an F16 cache (load_checks.flash_attention_for), so the plan
    counts the attention scores of a full context; on with a layer offloaded or a q8_0 V."""
    auto = LoadOptions(n_ctx=1024)
    cpu = plan(tiny, auto, free_ram=FREE)
    assert not cpu.flash_attn
    assert plan(tiny, auto, gpu_layers=1, free_ram=FREE, free_vram=FREE).flash_attn
    assert plan(tiny, LoadOptions(n_ctx=1024, kv_type_v=Q8_0), free_ram=FREE).flash_attn
    on = plan(tiny, options(1024), free_ram=FREE)
    # 512 tokens x 1024 cells: the scores of 4 heads in f32, and the mask in f32, not f16
    assert cpu.compute_ram - on.compute_ram == 512 * 1024 * (4 * 4 + 4 - 2)


def test_gpu_layers_auto_fills_free_vram_less_llama_cpp_s_margin(tiny):
    three = plan(tiny, options(1024), gpu_layers=3, free_ram=FREE, free_vram=FREE).total_vram
    assert auto_gpu_layers(tiny, options(1024), free_vram=VRAM_MARGIN + three) == 3
    assert auto_gpu_layers(tiny, options(1024), free_vram=VRAM_MARGIN + three - 1) == 2
    assert auto_gpu_layers(tiny, options(1024), free_vram=FREE) == 5
    assert auto_gpu_layers(tiny, options(1024), free_vram=None) == 0


def test_the_layers_planned_are_the_layers_the_engine_loads(tiny):
    """gpu_layers_for decides for the engine, the window's plan and `inspect --plan` alike:
    Auto (None) is auto_gpu_layers, not every layer; free VRAM is asked only for Auto."""
    three = plan(tiny, options(1024), gpu_layers=3, free_ram=FREE, free_vram=FREE).total_vram
    asked = []

    def free_vram():
        asked.append(1)
        return VRAM_MARGIN + three

    auto = replace(options(1024), n_gpu_layers=None)
    assert gpu_layers_for(tiny, auto, offloads=True, free_vram=free_vram) == 3 and asked == [1]
    assert gpu_layers_for(tiny, replace(auto, n_gpu_layers=5), offloads=True, free_vram=free_vram) == 5
    assert gpu_layers_for(tiny, auto, offloads=False, free_vram=free_vram) == 0
    assert gpu_layers_for(tiny, replace(auto, n_gpu_layers=5), offloads=False, free_vram=free_vram) == 0
    assert asked == [1]


def test_repacked_weights_count_twice_only_when_mapped(gemma_path, monkeypatch):
    """AVX2 repacks Q4_K weights into a copy; the mapped file pages stay (llama.cpp's
    CPU_REPACK buffer is 12.66 MiB for this file, beside the 235.16 MiB mapped)."""
    monkeypatch.setattr(machine, "repacked_types", lambda: {12: 8})  # Q4_K, rows a multiple of 8
    mapped = plan(gemma_path, options(2048), free_ram=FREE)
    read = plan(gemma_path, options(2048, use_mmap=False), free_ram=FREE)
    monkeypatch.setattr(machine, "repacked_types", lambda: {})
    plain = plan(gemma_path, options(2048), free_ram=FREE)
    assert mapped.weights_ram - plain.weights_ram == GEMMA_Q4_K_BLOCK_WEIGHTS
    assert read.weights_ram == plain.weights_ram == model_shape(gemma_path).weights_bytes


# --- the verdict ------------------------------------------------------------------------------


def test_fits_with_room_for_the_plan_s_error_tight_up_to_free(gemma_path):
    total = plan(gemma_path, options(2048), free_ram=FREE).total_ram
    assert plan(gemma_path, options(2048), free_ram=int(total * ACCURACY) + 1).fit is Fit.FITS
    assert plan(gemma_path, options(2048), free_ram=total).fit is Fit.TIGHT
    assert plan(gemma_path, options(2048), free_ram=total - 1).fit is Fit.DOES_NOT_FIT


def test_vram_verdict_keeps_the_margin_and_the_worse_verdict_wins(tiny):
    vram = plan(tiny, options(1024), gpu_layers=5, free_ram=FREE, free_vram=FREE).total_vram
    assert plan(tiny, options(1024), gpu_layers=5, free_ram=FREE, free_vram=vram + VRAM_MARGIN).fit is Fit.FITS
    assert plan(tiny, options(1024), gpu_layers=5, free_ram=FREE, free_vram=vram).fit is Fit.TIGHT
    assert plan(tiny, options(1024), gpu_layers=5, free_ram=FREE, free_vram=vram - 1).fit is Fit.DOES_NOT_FIT
    assert plan(tiny, options(1024), gpu_layers=0, free_ram=FREE, free_vram=0).fit is Fit.FITS  # no layer there


def test_largest_context_is_the_largest_that_fits(gemma_path):
    free = int(plan(gemma_path, options(8192), free_ram=FREE).total_ram * ACCURACY) + 1
    found = plan(gemma_path, options(2048), free_ram=free).largest_context
    assert found == 8192
    assert plan(gemma_path, options(found + 256), free_ram=free).fit is not Fit.FITS
    assert largest_context(gemma_path, options(2048), free_ram=FREE) == 32768  # the trained context
    assert largest_context(gemma_path, options(2048), free_ram=MIB) == 0


def test_summary_says_the_verdict_and_the_numbers(gemma_path):
    tight = plan(gemma_path, options(32768), free_ram=plan(gemma_path, options(32768), free_ram=FREE).total_ram)
    assert tight.summary.startswith("Tight: 500 MiB of 500 MiB free RAM")
    assert "KV cache 111 MiB for 32,768 tokens and 22 MiB of window checkpoints" in tight.summary
    assert f"up to {tight.largest_context:,} tokens fit" in tight.summary


# --- free memory, and the command line ----------------------------------------------------------


def test_free_ram_is_memavailable_or_psutil_s(tmp_path, monkeypatch):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemAvailable:    1234567 kB\n")
    monkeypatch.setattr(machine, "MEMINFO", meminfo)
    assert machine.free_ram() == 1234567 * 1024
    monkeypatch.setattr(machine, "MEMINFO", tmp_path / "absent")
    import psutil

    assert machine.free_ram() == pytest.approx(psutil.virtual_memory().available, rel=0.2)


def test_planning_does_not_import_llama_cpp():
    code = ("import sys; from app.engine.memory_plan import plan; from app.engine.machine import free_ram; "
            "plan('models/gemma-3-270m-q4_k_m.gguf', free_ram=free_ram()); assert 'llama_cpp' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_inspect_plan_prints_the_plan_as_json(gemma_path, capsys):
    from app.cli.args import UsageError
    from app.cli.plan import add_plan_arguments, run_plan

    parser = argparse.ArgumentParser()
    parser.add_argument("model", type=Path)
    add_plan_arguments(parser)
    args = parser.parse_args([str(gemma_path), "--plan", "--ctx", "2048", "--kv-type", "q8_0", "--gpu-layers", "4"])
    assert run_plan(args) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["n_ctx"] == 2048 and shown["options"]["kv_type"] == "q8_0"
    assert shown["ram"]["kv_cache"] == (2048 * 3 + 1024 * 15) * 2 * 272  # q8_0: 256 values in 8 blocks of 34 bytes
    assert shown["ram"]["window_checkpoints"] == WINDOW_CHECKPOINTS * 512 * 15 * 2 * 272
    assert shown["gpu_layers"] == 0  # this build cannot offload: the engine would load on the CPU
    assert shown["fit"] in {"fits", "tight", "does_not_fit"} and shown["summary"]
    with pytest.raises(SystemExit):
        parser.parse_args([str(gemma_path), "--plan", "--ctx", "0"])
    with pytest.raises(UsageError, match=r"^--ctx must be between 64"):  # as `chat` and `serve` refuse it
        run_plan(parser.parse_args([str(gemma_path), "--plan", "--ctx", "10"]))
