"""Route llama.cpp's own log, and llama-cpp-python's prints, into Python logging (and so into
Hearth's log file).

llama-cpp-python installs a callback that prints to stderr, and its level table is off by
one against the ggml it bundles (it hides errors and shows warnings). A windowed bundle has
no stderr at all. So we install our own callback, with ggml's real levels:
NONE=0, DEBUG=1, INFO=2, WARN=3, ERROR=4, CONT=5 (continue the previous line).
"""

from __future__ import annotations

import ctypes
import io
import logging

import llama_cpp

logger = logging.getLogger("llama.cpp")

_GGML_LEVELS = {0: logging.INFO, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_CONTINUE = 5


class _LineAssembler:
    """llama.cpp logs in fragments (CONT); emit one logging record per finished line."""

    def __init__(self):
        self.level = logging.INFO
        self.pending = ""

    def feed(self, level: int, text: str) -> None:
        if level != _CONTINUE:
            self.level = _GGML_LEVELS.get(level, logging.INFO)
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            if line.strip():
                logger.log(self.level, line.rstrip())


_assembler = _LineAssembler()


@llama_cpp.llama_log_callback
def _on_llama_log(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
    try:
        _assembler.feed(level, text.decode("utf-8", errors="replace"))
    except Exception:  # an exception must never cross back into C
        pass


def install() -> None:
    """Make llama.cpp log through Python logging. Safe to call more than once."""
    llama_cpp.llama_log_set(_on_llama_log, ctypes.c_void_p(0))


def install_multimodal() -> None:
    """The same for libmtmd (a projector's log: its own, and its helpers'), which prints to
    stderr until told otherwise. Called once libmtmd is loaded: a model without a projector never
    loads it."""
    from llama_cpp import mtmd_cpp

    mtmd_cpp.mtmd_log_set(_on_llama_log, ctypes.c_void_p(0))
    mtmd_cpp.mtmd_helper_log_set(_on_llama_log, ctypes.c_void_p(0))


class LogWriter(io.TextIOBase):
    """A file-like object that sends llama-cpp-python's print() output to a logger."""

    def __init__(self, logger: logging.Logger):
        self._logger = logger

    def write(self, text: str) -> int:
        if text.strip():
            self._logger.debug(text.rstrip())
        return len(text)
