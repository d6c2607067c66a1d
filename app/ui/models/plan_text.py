"""A memory plan in the window's words: one short line, its full numbers, and its tone.

The parameters panel's plan line, the model list's fit column and the "does not fit" question
all say a plan (engine/memory_plan.py) the same way, in memory's units (binary: "584 MiB",
"18.7 GiB"), as `hearth inspect --plan`, llama.cpp's log and the operating system say memory.
"""

from __future__ import annotations

from ...common.units import byte_size
from ...engine.memory_plan import Fit, MemoryPlan
from ..widgets.colors import Tone

VERDICTS = {Fit.FITS: "fits", Fit.TIGHT: "tight", Fit.DOES_NOT_FIT: "does not fit"}
TONES = {Fit.FITS: Tone.MUTED, Fit.TIGHT: Tone.NORMAL, Fit.DOES_NOT_FIT: Tone.ERROR}
HOW = ("Planned from the file's header (no weights read), against the memory free now, with the "
       "loaded model still in it: a new model or a reload holds both until it is ready. Measured "
       "within 15% of the real use on the CPU; \"tight\" is within that margin.")


def memory(count: int) -> str:
    return byte_size(count, memory=True)


def verdict(plan: MemoryPlan) -> str:
    return VERDICTS[plan.fit]


def short_line(plan: MemoryPlan) -> str:
    """"Memory: 584 MiB of 18.7 GiB free — fits" (and the GPU's share, when layers go there)."""
    line = f"Memory: {memory(plan.total_ram)} of {memory(plan.free_ram)} free"
    if plan.gpu_layers:
        free = "?" if plan.free_vram is None else memory(plan.free_vram)
        line += f", GPU {memory(plan.total_vram)} of {free}"
    return f"{line} — {verdict(plan)}"


def details(plan: MemoryPlan) -> str:
    """Every figure of the plan, one per line (a tooltip, the question before a load)."""
    lines = [
        f"RAM: {memory(plan.total_ram)} of {memory(plan.free_ram)} free",
        f"  weights {memory(plan.weights_ram)}",
        f"  KV cache {memory(plan.kv_ram)} for {plan.n_ctx:,} tokens",
        *([f"  window checkpoints {memory(plan.checkpoints_ram)}"] if plan.checkpoints_ram else []),
        f"  buffers {memory(plan.compute_ram + plan.runtime_ram)}",
    ]
    if plan.gpu_layers:
        free = "unknown" if plan.free_vram is None else memory(plan.free_vram)
        lines += [
            f"GPU memory: {memory(plan.total_vram)} of {free} free "
            f"({plan.gpu_layers} of {plan.total_layers} layers)",
            f"  weights {memory(plan.weights_vram)}, KV cache {memory(plan.kv_vram)}, "
            f"buffers {memory(plan.compute_vram)}",
        ]
    lines.append(f"Flash attention: {'on' if plan.flash_attn else 'off'}")
    if plan.fit is not Fit.FITS:
        lines.append(largest_words(plan))
    return "\n".join(lines)


def largest_words(plan: MemoryPlan) -> str:
    if plan.largest_context:
        return f"Largest context that fits: {plan.largest_context:,} tokens"
    return "Not even the shortest context fits: free some memory, or choose a smaller model"
