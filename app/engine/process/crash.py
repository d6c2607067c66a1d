"""How a child process that ran llama.cpp ended, in words for the user: the signal that killed
it, and the line of llama.cpp's output that says why (a GGML_ASSERT, an abort). The model probe
(engine/llama/probe.py) and the engine's process (backend.py) say it the same way."""

from __future__ import annotations

import signal
from collections.abc import Iterable

LAST_WORDS_MARKERS = (("GGML_ASSERT", "GGML_ABORT"), ("error", "terminate"))
MAX_QUOTE = 200  # characters of llama.cpp's last words quoted to the user
TAIL_LINES = 40  # of a child's stderr kept for them


def describe_status(status: int) -> str:
    """A signal's name, for a child it killed (status -N); the status, for one that exited."""
    if status >= 0:
        return f"exit status {status}"
    try:
        return signal.Signals(-status).name
    except ValueError:
        return f"signal {-status}"


def last_words(tail: Iterable[str]) -> str:
    """The line of llama.cpp's output that says why it stopped, shortened for a message ("":
    none said)."""
    lines = list(tail)
    for markers in LAST_WORDS_MARKERS:
        for line in reversed(lines):
            if any(marker in line for marker in markers):
                return line if len(line) <= MAX_QUOTE else line[:MAX_QUOTE - 1] + "…"
    return ""
