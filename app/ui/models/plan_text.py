"""A memory plan in the window's words: one short line, its full numbers, and its tone.

The parameters panel's plan line, the model list's fit column and the "does not fit" question
all say a plan (engine/memory_plan.py) the same way, with the same units as the model list's
sizes (decimal: "612 MB", "20.1 GB").
"""

from __future__ import annotations

from ...engine.memory_plan import Fit, MemoryPlan
from ..widgets.colors import Tone
from .table import format_size

VERDICTS = {Fit.FITS: "fits", Fit.TIGHT: "tight", Fit.DOES_NOT_FIT: "does not fit"}
TONES = {Fit.FITS: Tone.MUTED, Fit.TIGHT: Tone.NORMAL, Fit.DOES_NOT_FIT: Tone.ERROR}
HOW = ("Planned from the file's header (no weights read), against the memory free now, with the "
       "loaded model still in it: a new model or a reload holds both until it is ready. Measured "
       "within 15% of the real use on the CPU; \"tight\" is within that margin.")


def verdict(plan: MemoryPlan) -> str:
    return VERDICTS[plan.fit]


def short_line(plan: MemoryPlan) -> str:
    """"Memory: 612 MB of 20.1 GB free — fits" (and the GPU's share, when layers go there)."""
    line = f"Memory: {format_size(plan.total_ram)} of {format_size(plan.free_ram)} free"
    if plan.gpu_layers:
        free = "?" if plan.free_vram is None else format_size(plan.free_vram)
        line += f", GPU {format_size(plan.total_vram)} of {free}"
    return f"{line} — {verdict(plan)}"


def details(plan: MemoryPlan) -> str:
    """Every figure of the plan, one per line (a tooltip, the question before a load)."""
    lines = [
        f"RAM: {format_size(plan.total_ram)} of {format_size(plan.free_ram)} free",
        f"  weights {format_size(plan.weights_ram)}",
        f"  KV cache {format_size(plan.kv_ram)} for {plan.n_ctx:,} tokens",
        f"  buffers {format_size(plan.compute_ram + plan.runtime_ram)}",
    ]
    if plan.gpu_layers:
        free = "unknown" if plan.free_vram is None else format_size(plan.free_vram)
        lines += [
            f"GPU memory: {format_size(plan.total_vram)} of {free} free "
            f"({plan.gpu_layers} of {plan.total_layers} layers)",
            f"  weights {format_size(plan.weights_vram)}, KV cache {format_size(plan.kv_vram)}, "
            f"buffers {format_size(plan.compute_vram)}",
        ]
    lines.append(f"Flash attention: {'on' if plan.flash_attn else 'off'}")
    if plan.fit is not Fit.FITS:
        lines.append(largest_words(plan))
    return "\n".join(lines)


def largest_words(plan: MemoryPlan) -> str:
    if plan.largest_context:
        return f"Largest context that fits: {plan.largest_context:,} tokens"
    return "Not even the shortest context fits: free some memory, or choose a smaller model"
