"""Why a CUDA build of llama.cpp found no GPU, asked of the NVIDIA driver itself.

ggml's CUDA backend only logs the CUDA runtime's error and registers no device, and the
runtime gives one message ("CUDA driver version is insufficient for CUDA runtime version")
both when there is no driver at all and when it is too old. The driver API tells them apart:
libcuda.so.1 (installed with the NVIDIA driver; Hearth never ships it) is absent, or cuInit
finds no device (none there, or all hidden by CUDA_VISIBLE_DEVICES), or the driver is older than
the runtime the build carries. Nothing here runs anything: it reads versions and counts.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DRIVER_LIBRARY = "libcuda.so.1"
CUDA_SUCCESS = 0
CUDA_ERROR_NO_DEVICE = 100


@dataclass(frozen=True)
class DriverCheck:
    reason: str  # why the CUDA build runs on the CPU, for "CUDA build; <reason>"
    driver_cuda: int | None = None  # the newest CUDA the driver supports, as 12040 for 12.4
    runtime_cuda: int | None = None  # the CUDA runtime's version in this process, same form
    devices: int = 0  # the GPUs the driver sees


def cuda_version_text(version: int) -> str:
    """12040 -> "12.4", the way CUDA encodes versions (1000 * major + 10 * minor)."""
    return f"{version // 1000}.{version % 1000 // 10}"


def loaded_runtime_version(maps: Path = Path("/proc/self/maps"), load: Callable[[str], Any] = ctypes.CDLL) -> int | None:
    """The version of the CUDA runtime (libcudart) this process already loaded, if any.

    libggml-cuda.so links it, so it is in the process once llama.cpp is; dlopen by its own
    path returns that same library rather than loading another."""
    try:
        lines = maps.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    paths = {line.split(maxsplit=5)[-1] for line in lines if "/libcudart.so" in line}
    for path in sorted(paths):
        try:
            version = ctypes.c_int(0)
            if load(path).cudaRuntimeGetVersion(ctypes.byref(version)) == CUDA_SUCCESS:
                return version.value
        except (OSError, AttributeError):
            continue
    return None


def check_driver(load: Callable[[str], Any] = ctypes.CDLL,
                 runtime_version: Callable[[], int | None] = loaded_runtime_version) -> DriverCheck:
    """Why the CUDA runtime saw no device, as the driver answers it."""
    try:
        lib = load(DRIVER_LIBRARY)
    except OSError:
        return DriverCheck("no NVIDIA driver found")
    status = lib.cuInit(0)
    if status == CUDA_ERROR_NO_DEVICE:
        return DriverCheck("no CUDA device")
    if status != CUDA_SUCCESS:
        return DriverCheck(f"the NVIDIA driver did not start (CUDA error {status})")
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != CUDA_SUCCESS or count.value == 0:
        return DriverCheck("no CUDA device")
    version = ctypes.c_int(0)
    driver = version.value if lib.cuDriverGetVersion(ctypes.byref(version)) == CUDA_SUCCESS else None
    runtime = runtime_version()
    if driver is not None and runtime is not None and driver < runtime:
        return DriverCheck(f"the NVIDIA driver supports CUDA {cuda_version_text(driver)}, older than this "
                           f"build's CUDA {cuda_version_text(runtime)}: update the driver", driver, runtime, count.value)
    found = f" (driver: CUDA {cuda_version_text(driver)})" if driver is not None else ""
    return DriverCheck(f"the CUDA runtime could not use the {count.value} device(s) the driver sees{found}",
                       driver, runtime, count.value)
