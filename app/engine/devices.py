"""What compute llama.cpp gets: the devices it sees, a GPU's memory, and how many CPU threads.

The "Get models" view marks which downloads fit in VRAM. llama-cpp-python does not wrap
ggml's device registry, so the few functions needed are bound here with ctypes, from the
same ggml library llama.cpp itself loaded (libllama already pulled it into the process).
"""

from __future__ import annotations

import ctypes
import logging
import os
from dataclasses import dataclass

import psutil
from llama_cpp import llama_cpp as llama_c
from llama_cpp._ctypes_extensions import load_shared_library

log = logging.getLogger(__name__)

_DEVICE_TYPES = {0: "CPU", 1: "GPU", 2: "ACCEL", 3: "IGPU"}


@dataclass(frozen=True)
class Device:
    name: str
    description: str
    kind: str  # CPU, GPU, IGPU or ACCEL
    memory_total: int
    memory_free: int


def _ggml():
    lib = load_shared_library("ggml", llama_c._base_path)
    lib.ggml_backend_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    lib.ggml_backend_dev_get.restype = ctypes.c_void_p
    lib.ggml_backend_dev_name.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_name.restype = ctypes.c_char_p
    lib.ggml_backend_dev_description.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_description.restype = ctypes.c_char_p
    lib.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_type.restype = ctypes.c_int
    lib.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
    lib.ggml_backend_dev_memory.restype = None
    return lib


def devices() -> list[Device]:
    """Every device ggml registered (the CPU always; GPUs in a CUDA build that sees one)."""
    try:
        lib = _ggml()
    except (OSError, AttributeError, RuntimeError) as exc:  # an older or unusual build
        log.warning("could not list ggml devices: %s", exc)
        return []
    found = []
    for index in range(lib.ggml_backend_dev_count()):
        device = lib.ggml_backend_dev_get(index)
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        lib.ggml_backend_dev_memory(device, ctypes.byref(free), ctypes.byref(total))
        found.append(Device(
            name=lib.ggml_backend_dev_name(device).decode(errors="replace"),
            description=lib.ggml_backend_dev_description(device).decode(errors="replace"),
            kind=_DEVICE_TYPES.get(lib.ggml_backend_dev_type(device), "other"),
            memory_total=total.value, memory_free=free.value,
        ))
    return found


def supports_gpu_offload() -> bool:
    """Whether this build of llama.cpp can put layers on a GPU (a CUDA build, say)."""
    return bool(llama_c.llama_supports_gpu_offload())


def gpu_memory_bytes() -> int | None:
    """Total memory of the GPUs llama.cpp can offload to, or None where there are none."""
    gpus = [d for d in devices() if d.kind in ("GPU", "IGPU")]
    return sum(d.memory_total for d in gpus) or None


@dataclass(frozen=True)
class CpuThreads:
    generate: int  # one token at a time: memory-bound, so one thread per physical core
    prompt: int  # batches of prompt tokens: compute-bound, so every logical CPU


def cpu_threads() -> CpuThreads:
    """Threads for llama.cpp on the CPUs this process may run on.

    llama-cpp-python's default for generation is half the logical CPUs, which assumes two
    hardware threads per core. On a machine without them (most VMs, many laptops) that leaves
    half the cores idle: here, 2 cores without SMT, Gemma 270M wrote 17.5 tok/s on one thread
    and 34.6 on two. llama.cpp's own tools use the physical-core count.
    """
    logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    physical = psutil.cpu_count(logical=False) or logical
    return CpuThreads(generate=max(1, min(physical, logical)), prompt=max(1, logical))
