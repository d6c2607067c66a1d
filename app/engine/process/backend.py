"""ProcessBackend: a local model loaded and run in a process of its own (#29), behind the same
Backend interface the window, the command line and the server use; llama.cpp never loads in the
caller's process.

The child is an EngineProcess (engine_process.py: Hearth itself, `hearth --engine-child FD`),
asked to load a chat model. The weights are memory-mapped by the child alone. Stop reaches the
child at once, on a thread of its own (the reply's reader may be waiting for the next token), and
the reply ends at its next token as it does in process.

When the child dies (llama.cpp aborted, the system killed it for memory, someone ran kill -9),
the reply being read ends as an interrupted reply saying so ("llama.cpp crashed (SIGABRT):
GGML_ASSERT …", from the last lines the child wrote), its text so far kept, never as an exception
mid-reply; `crashed` then says why, `when_gone` tells whoever asked (a child killed while idle
too), and every later call raises EngineCrashed: the caller loads the model again. A reply is
a ChildReply (reply.py), which a caller with an event loop may read there without blocking.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ..backend import Backend, LoadCancelled, LoadProgress, PromptProgress, ReplyEvent
from ..kv.cache import SavedStates
from ..sampling import SamplingParams
from ..tools.types import PLAIN, ToolUse
from ..types import DeviceReport, LoadOptions, ModelDescription, ReplyStats, StopReason
from .engine_process import EngineCrashed, EngineProcess
from .protocol import LoadRequest, StatesChange, StreamRequest, raised
from .reply import ChildReply, Watcher


class ProcessBackend(Backend):
    """One chat model in a process of its own. Driven by one thread at a time, as every Backend.

    `start` gives a child with no model yet (it can already say what GPUs it sees: `devices`),
    `load` loads one into it; `open` does both."""

    def __init__(self, child: EngineProcess):
        self._child = child
        self._description: ModelDescription | None = None
        self._child_images: set[str] = set()  # the digests of the images the child holds (protocol.py: image)
        self.answered = False  # a reply got through: the child works (RestartingBackend tells a quick death by it)

    # -- opening -----------------------------------------------------------------------------------

    @classmethod
    def start(cls, environment: dict[str, str] | None = None) -> ProcessBackend:
        """A child with no model loaded yet (EngineProcess.start)."""
        return cls(EngineProcess.start(environment))

    @classmethod
    def open(cls, path: Path, options: LoadOptions, progress: LoadProgress | None = None,
             cancel: threading.Event | None = None, states: SavedStates | None = None,
             environment: dict[str, str] | None = None) -> ProcessBackend:
        """Start a child and load `path` in it (see `load`)."""
        backend = cls.start(environment)
        backend.load(path, options, progress, cancel, states)
        return backend

    def load(self, path: Path, options: LoadOptions, progress: LoadProgress | None = None,
             cancel: threading.Event | None = None, states: SavedStates | None = None) -> None:
        """Load `path` in this child. Raises as the in-process load does (ModelFileError,
        TemplateError, LoadCancelled), or EngineCrashed where llama.cpp took the child down
        while loading (the file, or the machine: the message says which it said). A child whose
        load failed is closed: it is not used again."""
        watcher = Watcher(cancel, self._child.cancel) if cancel is not None else None
        try:
            self._child.send("load", LoadRequest(path, options, states))
            while True:
                kind, body = self._child.answer()
                if kind == "progress" and progress is not None:
                    progress(body)
                elif kind == "loaded":
                    self._description = body
                    return
                elif kind == "failed":
                    raise raised(body)
        except EngineCrashed as exc:
            self.close()
            if cancel is not None and cancel.is_set():
                raise LoadCancelled(f"Loading {path.name} was cancelled.") from None
            raise EngineCrashed(f"Loading {path.name} failed: {exc}. The file may be damaged, or need more "
                                "memory or a newer llama.cpp than this Hearth has.") from None
        except BaseException:
            self.close()
            if cancel is not None and cancel.is_set():
                raise LoadCancelled(f"Loading {path.name} was cancelled.") from None
            raise
        finally:
            if watcher is not None:
                watcher.done()

    # -- the Backend interface ---------------------------------------------------------------------

    def describe(self) -> ModelDescription:
        return self._description

    def stream(self, messages: list[dict], params: SamplingParams, cancel: threading.Event,
               prompt_progress: PromptProgress | None = None, conversation_id: int | None = None,
               tools: ToolUse = PLAIN, logprobs: int | None = None,
               text_interval_s: float = 0.0) -> Iterator[ReplyEvent]:
        # Paced in the child, so that only what the caller takes crosses the socket.
        request, images = StreamRequest.of(messages, params, conversation_id=conversation_id, tools=tools,
                                           logprobs=logprobs, text_interval_s=text_interval_s)
        for digest, image in images.items():
            if digest not in self._child_images:
                self._child.send("image", image)
        self._child_images = set(images)  # what the child keeps once it reads the request (child.py)
        self._child.send("stream", request)
        try:
            kind, body = self._child.answer()  # a reply that cannot start raises here, before its first piece
        except EngineCrashed as exc:  # the request reached the child, which died reading the prompt
            return iter([ReplyStats.interrupted(str(exc))])
        if kind == "failed":
            raise raised(body)
        return ChildReply(self._child, (kind, body), cancel, prompt_progress, self._ended)

    def _ended(self, stats: ReplyStats) -> None:
        if stats.stop_reason is not StopReason.INTERRUPTED:
            self.answered = True

    def prepare(self, conversation_id: int | None) -> None:
        self._child.ask("prepare", conversation_id, "done")

    def forget_state(self, conversation_id: int) -> None:
        self._child.ask("forget", conversation_id, "done")

    def set_template_override(self, source: str | None) -> str:
        return self._child.ask("template", source, "template")

    def saved_states_changed(self, states: SavedStates, cleared: bool) -> None:
        self._child.ask("states", StatesChange(states, cleared), "done")

    def devices(self) -> DeviceReport:
        """What llama.cpp sees of the GPUs, from the child: before a load, or after one (then
        the free memory is what this model left)."""
        return self._child.devices()

    def when_gone(self, callback: Callable[[str], None]) -> None:
        self._child.when_gone(callback)

    def close(self) -> None:
        """The child frees the model (saving the conversation's state) and exits."""
        self._child.close()

    # -- the child, for its owner and tests ----------------------------------------------------------

    @property
    def crashed(self) -> str | None:
        return self._child.crashed

    @property
    def alive(self) -> bool:
        return self._child.alive

    @property
    def pid(self) -> int:
        return self._child.pid

