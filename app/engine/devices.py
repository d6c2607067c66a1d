"""What compute devices llama.cpp sees, and how much memory a GPU has.

The "Get models" view marks which downloads fit in VRAM. llama-cpp-python does not wrap
ggml's device registry, so the few functions needed are bound here with ctypes, from the
same ggml library llama.cpp itself loaded (libllama already pulled it into the process).
"""

from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass

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


def gpu_memory_bytes() -> int | None:
    """Total memory of the GPUs llama.cpp can offload to, or None where there are none."""
    gpus = [d for d in devices() if d.kind in ("GPU", "IGPU")]
    return sum(d.memory_total for d in gpus) or None
