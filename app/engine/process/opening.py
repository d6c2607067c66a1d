"""The window's and the server's BackendOpener (#29): every local model in a process of its own,
so nothing llama.cpp does (an abort on a file, an assert at some context length, a GPU driver
that crashes) can end the process that opened it.

The first child is started before any model is asked for (`devices`, once the window shows): it
says what GPUs llama.cpp sees, so the window's memory plan and GPU-layer controls need no
llama.cpp of their own, and it is then kept for the first load, which so finds Python and
llama.cpp already started. Each load after that starts a child of its own; a child whose load
fails ends with it. A child that crashes while asking about the GPUs (a broken driver) is said,
and every later child runs without GPUs, where llama.cpp on the CPU still works.

This is the probe the window once ran before loading a new file: the first load of a file is
in a child, so a file llama.cpp aborts on costs that child, and the model loaded before stays.

A remote model opens in this process as before: it runs on the server, not in llama.cpp here.
"""

from __future__ import annotations

import logging
import threading

from ..backend import Backend, LoadProgress
from ..kv.cache import StateCache
from ..types import DeviceReport, LoadOptions, LocalModel, ModelSource, OffloadSupport
from .backend import ProcessBackend
from .engine_process import NO_GPU_ENVIRONMENT, EngineCrashed

log = logging.getLogger(__name__)


class ChildOpener:
    """A BackendOpener whose local models each run in a ProcessBackend. Called on the engine
    thread only (the bridge's worker), one call at a time."""

    def __init__(self, states: StateCache | None = None):
        """`states`: the conversations' saved KV states, which each child keeps in the same folder."""
        self._states = states
        self._spare: ProcessBackend | None = None
        self._environment: dict[str, str] = {}

    def devices(self, keep: bool = True) -> DeviceReport:
        """What llama.cpp sees of this machine's GPUs, asked of a child kept for the next load
        (`keep`), or of one that exits once it has said (after an unload, whose memory must return)."""
        try:
            if self._spare is None or not self._spare.alive:
                self._spare = ProcessBackend.start(self._environment)
            return self._spare.devices()
        except EngineCrashed as exc:
            self._discard_spare()
            self._environment = NO_GPU_ENVIRONMENT
            log.error("asking llama.cpp about the GPUs ended its process (%s): models will run on the CPU", exc)
            return DeviceReport(OffloadSupport("CPU", False, f"asking the GPU ended llama.cpp ({exc}), so models "
                                                             "run on the CPU"))
        finally:
            if not keep:
                self._discard_spare()

    def __call__(self, source: ModelSource, options: LoadOptions, progress: LoadProgress | None = None,
                 cancel: threading.Event | None = None) -> Backend:
        if not isinstance(source, LocalModel):  # a server's model: no llama.cpp here, so no child kept for it
            from ..remote.backend import open_remote  # imports httpx: only where a remote model is used

            self._discard_spare()
            return open_remote(source, progress, cancel)
        child, self._spare = self._spare, None
        if child is None or not child.alive:
            if child is not None:
                child.close()
            child = ProcessBackend.start(self._environment)
        child.load(source.path, options, progress, cancel, self._states.place() if self._states is not None else None)
        return child

    def close(self) -> None:
        """The spare child, if one is waiting, exits."""
        self._discard_spare()

    def _discard_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.close()
