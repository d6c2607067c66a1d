"""What compute llama.cpp gets: the devices it sees, a GPU's memory, and how many CPU threads.

The "Get models" view marks which downloads fit in VRAM. llama-cpp-python does not wrap
ggml's device registry, so the few functions needed are bound here with ctypes, from the
same ggml library llama.cpp itself loaded (libllama pulled it into the process).

A CUDA build (scripts/llama-wheel-cuda.sh) loads and runs on a machine without an NVIDIA driver:
ggml then registers its CUDA backend with no device, and the model runs on the CPU.
offload_support() says so, and why, asking the driver itself (see cuda_driver.py).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

import psutil
from llama_cpp import llama_cpp as llama_c

from ..types import DeviceReport, OffloadSupport
from .cuda_driver import DriverCheck, check_driver

log = logging.getLogger(__name__)

_DEVICE_TYPES = {0: "CPU", 1: "GPU", 2: "ACCEL", 3: "IGPU"}


@dataclass(frozen=True)
class Device:
    name: str
    description: str
    kind: str  # CPU, GPU, IGPU or ACCEL
    memory_total: int
    memory_free: int


_SIZE, _HANDLE, _TEXT = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p
# ggml's device and backend-registry functions: name -> (argument types, result type).
_GGML_SIGNATURES = {
    "ggml_backend_dev_count": ([], _SIZE),
    "ggml_backend_dev_get": ([_SIZE], _HANDLE),
    "ggml_backend_dev_name": ([_HANDLE], _TEXT),
    "ggml_backend_dev_description": ([_HANDLE], _TEXT),
    "ggml_backend_dev_type": ([_HANDLE], ctypes.c_int),
    "ggml_backend_dev_memory": ([_HANDLE, ctypes.POINTER(_SIZE), ctypes.POINTER(_SIZE)], None),
    "ggml_backend_reg_count": ([], _SIZE),
    "ggml_backend_reg_get": ([_SIZE], _HANDLE),
    "ggml_backend_reg_name": ([_HANDLE], _TEXT),
    "ggml_backend_reg_dev_count": ([_HANDLE], _SIZE),
}


@functools.cache
def _ggml() -> ctypes.CDLL:
    """ggml's functions, looked up through libllama, which links libggml: a bundle keeps ggml only
    under its SONAME (libggml.so.0, build.spec), so it is not opened by its unversioned name. Its
    own CDLL object, so that the argtypes set here are not llama_cpp's; made once per process."""
    lib = ctypes.CDLL(llama_c._lib._name)
    for name, (argtypes, restype) in _GGML_SIGNATURES.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, restype
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
    """Whether this build of llama.cpp can put layers on a GPU here (a CUDA build that sees one)."""
    return bool(llama_c.llama_supports_gpu_offload())


# ggml backends that compute on the CPU whatever the build: not a GPU the build was made for.
_CPU_SIDE_BACKENDS = {"CPU", "BLAS", "RPC", "AMX"}


def backend_registries() -> list[tuple[str, int]]:
    """(name, device count) of every backend ggml registered: ("CUDA", 0) in a CUDA build
    that found no usable GPU, ("CPU", 1) always."""
    try:
        lib = _ggml()
    except (OSError, AttributeError, RuntimeError) as exc:
        log.warning("could not list ggml backends: %s", exc)
        return []
    regs = (lib.ggml_backend_reg_get(i) for i in range(lib.ggml_backend_reg_count()))
    return [(lib.ggml_backend_reg_name(r).decode(errors="replace"), lib.ggml_backend_reg_dev_count(r)) for r in regs]


def judge_offload(registries: list[tuple[str, int]], driver: Callable[[], DriverCheck]) -> OffloadSupport:
    """OffloadSupport from ggml's registries; `driver` is asked only when a CUDA build has no
    device, to say why (no driver, no device, a driver too old for the build's runtime)."""
    gpu_backends = [(name, count) for name, count in registries if name not in _CPU_SIDE_BACKENDS]
    if not gpu_backends:
        return OffloadSupport("CPU", False)
    usable = [name for name, count in gpu_backends if count > 0]
    if usable:
        return OffloadSupport(usable[0], True)
    name = gpu_backends[0][0]
    if name != "CUDA":
        return OffloadSupport(name, False, f"{name} build; no {name} device")
    return OffloadSupport(name, False, f"CUDA build; {driver().reason}")


@functools.cache
def offload_support() -> OffloadSupport:
    """This process's answer, asked once: drivers and GPUs do not come and go while it runs
    (and ggml registers its backends once)."""
    support = judge_offload(backend_registries(), check_driver)
    if support.reason:
        log.info("running on the CPU: %s", support.reason)
    return support


def free_vram() -> int | None:
    """Free bytes on the GPUs llama.cpp can offload to, summed; None where this build cannot
    offload (a CPU build) or sees no GPU. Asks ggml's device registry (cudaMemGetInfo on a
    CUDA build), so it is what is free now, after this process's own CUDA context."""
    if not supports_gpu_offload():
        return None
    gpus = [d for d in devices() if d.kind in ("GPU", "IGPU")]
    return sum(d.memory_free for d in gpus) if gpus else None


def device_report() -> DeviceReport:
    """What the engine's process tells the window about this machine's GPUs (engine/process):
    the window never loads llama.cpp to ask, so a driver that crashes here takes only the child."""
    support = offload_support()
    gpus = [d for d in devices() if d.kind in ("GPU", "IGPU")] if support.gpu else []
    return DeviceReport(support, sum(d.memory_total for d in gpus) or None, sum(d.memory_free for d in gpus) or None)


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
