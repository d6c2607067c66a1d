"""Sizes in bytes, in words: the one formatter every room uses.

Two conventions, each where people meet it elsewhere:
- files, downloads and disks in decimal units (KB, MB, GB: powers of 1,000), as Hugging Face,
  file managers and disk makers count;
- memory in binary units (KiB, MiB, GiB: powers of 1,024), as llama.cpp's log, the operating
  system and GPU tools count, so that a plan's figures can be checked against theirs.
A binary size is never labelled with a decimal unit.
"""

from __future__ import annotations

KB, MB, GB = 1000, 1000**2, 1000**3
KIB, MIB, GIB = 1024, 1024**2, 1024**3

_DECIMAL = (("TB", 1000**4), ("GB", GB), ("MB", MB), ("KB", KB))
_BINARY = (("TiB", 1024**4), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB))


def byte_size(count: float, *, memory: bool = False, decimals: int | None = None) -> str:
    """`count` bytes as "253 MB" (a file) or, with `memory`, "1.5 GiB".

    `decimals`: None rounds as a list shows sizes, one decimal from GB (GiB) up and none
    below ("4.9 GB", "253 MB", "2 KB"); a number fixes it, for a figure that must be seen to
    move (a download's progress: "65.8 KB"). Bytes below the smallest unit show as bytes.
    """
    for unit, size in _BINARY if memory else _DECIMAL:
        if abs(count) >= size:
            places = decimals if decimals is not None else (1 if size >= (GIB if memory else GB) else 0)
            return f"{count / size:,.{places}f} {unit}"
    return f"{count:,.0f} B"
