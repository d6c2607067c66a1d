"""`hearth inspect MODEL --plan`: the memory plan for a load, as JSON, without loading anything.

    --plan                 print the plan (engine/memory_plan.py) instead of the metadata
    --ctx N                the context length (default: the engine's, options.context_for)
    --kv-type f16|q8_0|q4_0  the K and V cache type (default f16)
    --flash-attn auto|on|off (default auto, which llama.cpp turns on for the CPU and CUDA)
    --gpu-layers N|auto    layers to offload (default auto, as the engine loads: as many as free
                           VRAM holds); 0 on a CPU build

Free RAM is this machine's now (MemAvailable); free VRAM is asked of llama.cpp's devices only
on a build that can offload.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from ..common.text import printable
from ..engine.gguf.reading import inspect_model, model_shape
from ..engine.memory_plan import gpu_layers_for, plan
from ..engine.types import FlashAttention, KvCacheType, LoadOptions
from .args import check_context

AUTO = "auto"


def add_plan_arguments(inspect: argparse.ArgumentParser) -> None:
    """The plan's flags on `hearth inspect`."""
    inspect.add_argument("--plan", action="store_true",
                         help="print the memory plan for loading the model (RAM, VRAM, fit) instead of its metadata")
    inspect.add_argument("--ctx", type=_positive, help="with --plan: the context length in tokens")
    inspect.add_argument("--kv-type", choices=[kind.value for kind in KvCacheType],
                         help="with --plan: the K and V cache type (default f16)")
    inspect.add_argument("--flash-attn", choices=[mode.value for mode in FlashAttention],
                         help="with --plan: flash attention (default auto)")
    inspect.add_argument("--gpu-layers", type=_layers,
                         help="with --plan: layers offloaded to the GPU, or auto (default: auto, as many as "
                              "free VRAM holds, as the engine loads)")


def run_plan(args) -> int:
    """Print the plan as JSON on stdout."""
    from ..engine import machine
    from ..engine.llama import devices  # imports llama_cpp, to ask the build about its GPUs (the command line may)

    info = inspect_model(args.model)  # refuses a file llama.cpp could not load, as `inspect` does
    check_context(args.ctx, info.context_length)  # the range `chat` and `serve` accept
    shape = model_shape(info.path)
    kv = KvCacheType(args.kv_type) if args.kv_type else KvCacheType.F16
    options = LoadOptions(n_ctx=args.ctx, kv_type_k=kv, kv_type_v=kv,
                          flash_attn=FlashAttention(args.flash_attn) if args.flash_attn else FlashAttention.AUTO)
    offloads = devices.supports_gpu_offload()
    free_vram = devices.free_vram() if offloads else None
    asked_layers = None if args.gpu_layers == AUTO else args.gpu_layers
    gpu_layers = gpu_layers_for(shape, replace(options, n_gpu_layers=asked_layers), offloads=offloads,
                                free_vram=lambda: free_vram)
    result = plan(shape, options, gpu_layers=gpu_layers, free_ram=machine.free_ram(), free_vram=free_vram)
    asked = {"n_ctx": args.ctx, "kv_type": str(kv), "flash_attn": str(options.flash_attn),
             "gpu_layers": args.gpu_layers}
    print(json.dumps({"model": printable(str(info.path), limit=None), "options": asked, **result.to_json()},
                     indent=2, ensure_ascii=False))
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _layers(text: str) -> int | str:
    if text == AUTO:
        return AUTO
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more, or auto")
    return value
