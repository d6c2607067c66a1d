"""What this machine offers a model: free RAM, and which weights its CPU repacks.

Qt-free and llama_cpp-free, so the window plans every listed model without loading llama.cpp:
what the GPUs have free is the engine's process's answer (engine/llama/devices.py's, asked there).
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

from gguf.constants import GGMLQuantizationType as Q

MEMINFO = Path("/proc/meminfo")
CPUINFO = Path("/proc/cpuinfo")


def free_ram() -> int:
    """Bytes a new allocation can have without swapping: Linux's MemAvailable (free memory
    plus the page cache and reclaimable slabs it can drop), else psutil's `available`, which
    is the same figure on Linux and the nearest one on macOS and Windows."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import psutil  # not needed on Linux; everywhere else it is the portable answer

    return int(psutil.virtual_memory().available)


@functools.cache
def repacked_types() -> dict[int, int]:
    """The weight types llama.cpp's CPU backend copies into an interleaved layout at load, each
    with the row count a tensor needs to be a multiple of (ggml-cpu/repack.cpp,
    ggml_repack_get_optimal_repack_type). With mmap, the file's pages of those tensors stay
    mapped as well, so they count twice in the process's resident memory."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "x86"):
        flags = _cpu_flags()
        if flags is not None and "avx2" not in flags:
            return {}
        types = {Q.Q4_0: 8, Q.Q4_K: 8, Q.IQ4_NL: 8, Q.MXFP4: 8}  # AVX2 (assumed where unreadable)
        if flags is not None and "avx512f" in flags:
            types[Q.Q2_K] = 8
        return {int(t): rows for t, rows in types.items()}
    if machine in ("arm64", "aarch64"):
        flags = _cpu_flags()
        if flags is not None and "asimddp" not in flags:  # no dot product: no repacking
            return {}
        types = {Q.Q4_0: 4, Q.Q4_K: 8, Q.Q5_K: 8, Q.Q6_K: 8, Q.IQ4_NL: 4, Q.MXFP4: 4, Q.Q8_0: 4}
        return {int(t): rows for t, rows in types.items()}
    return {}


def _cpu_flags() -> set[str] | None:
    """The CPU's feature flags from /proc/cpuinfo (None where there is none: macOS, Windows)."""
    if os.name != "posix":
        return None
    try:
        text = CPUINFO.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return set(value.split())
    return None
