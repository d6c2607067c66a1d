"""The engine's process (engine_process.py): how to start Hearth as one, and how it ended, in words for
the user (the signal that killed it, and the line of llama.cpp's output that says why, a
GGML_ASSERT, an abort)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterable
from pathlib import Path

LAST_WORDS_MARKERS = (("GGML_ASSERT", "GGML_ABORT"), ("error", "terminate"))
MAX_QUOTE = 200  # characters of llama.cpp's last words quoted to the user
TAIL_LINES = 40  # of a child's stderr kept for them
_SOURCE_ROOT = Path(__file__).resolve().parents[3]  # where `-m app` is found, unbundled


def hearth_command(*arguments: str) -> list[str]:
    """Hearth started with these arguments: the bundle's executable, or this interpreter on the
    source tree (run it in hearth_folder())."""
    if getattr(sys, "frozen", False):
        return [sys.executable, *arguments]
    return [sys.executable, "-m", "app", *arguments]


def hearth_folder() -> Path | None:
    """Where a child started by hearth_command finds `app`: the source tree, None in a bundle."""
    return _SOURCE_ROOT if _SOURCE_ROOT.joinpath("app").is_dir() else None


def describe_status(status: int) -> str:
    """A signal's name, for a child it killed (status -N); the status, for one that exited."""
    if status >= 0:
        return f"exit status {status}"
    try:
        return signal.Signals(-status).name
    except ValueError:
        return f"signal {-status}"


def how_it_ended(status: int, tail: Iterable[str]) -> str:
    """A child's end in words for the user: killed (SIGKILL, which is how the system ends a
    process when memory runs out), crashed with llama.cpp's last words, or exited."""
    if status == -signal.SIGKILL:
        return "llama.cpp was killed (SIGKILL: the system does this when memory runs out)"
    if status < 0:
        said = last_words(tail)
        return f"llama.cpp crashed ({describe_status(status)})" + (f": {said}" if said else "")
    return f"the engine's process ended ({describe_status(status)})"


def last_words(tail: Iterable[str]) -> str:
    """The line of llama.cpp's output that says why it stopped, shortened for a message ("":
    none said)."""
    lines = list(tail)
    for markers in LAST_WORDS_MARKERS:
        for line in reversed(lines):
            if any(marker in line for marker in markers):
                return line if len(line) <= MAX_QUOTE else line[:MAX_QUOTE - 1] + "…"
    return ""
