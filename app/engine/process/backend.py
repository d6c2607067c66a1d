"""ProcessBackend: a local model loaded and run in a process of its own (#29), behind the same
Backend interface the window, the command line and the server use; llama.cpp never loads in the
caller's process.

The child is Hearth itself (`hearth --engine-child FD`, child.py), given one end of a socket
pair; requests and answers are protocol.py's, framed by frames.py and checked by codec.py. The
weights are memory-mapped by the child alone. Stop reaches the child at once, on a thread of its
own (the reply's reader may be waiting for the next token), and the reply ends at its next token
as it does in process.

When the child dies (llama.cpp aborted, the system killed it for memory, someone ran kill -9),
the reply being read ends as an interrupted reply saying so ("llama.cpp crashed (SIGABRT):
GGML_ASSERT …", from the last lines the child wrote), its text so far kept, never as an exception
mid-reply; `crashed` then says why, `when_gone` tells whoever asked (a child killed while idle
too), and every later call raises EngineCrashed: the caller loads the model again.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..backend import Backend, BackendUnavailable, LoadCancelled, LoadProgress, PromptProgress, ReplyEvent
from ..sampling import SamplingParams
from ..tools.types import PLAIN, ToolUse
from ..types import DeviceReport, LoadOptions, ModelDescription, ReplyStats
from . import CHILD_FLAG
from .codec import ProtocolError
from .crash import TAIL_LINES, describe_status, hearth_command, hearth_folder, how_it_ended
from .frames import ChannelClosed, read_message, write_frame
from .protocol import ANSWERS, LoadRequest, SavedStates, StreamRequest, raised

log = logging.getLogger(__name__)

EXIT_WAIT_S = 5.0  # for a child told to close: then it is killed


class EngineCrashed(BackendUnavailable):
    """The engine's process is gone: the message says how (a signal, llama.cpp's last words).
    Whoever holds it loads the model again (a server meanwhile answers 503)."""


# Every child: no backtrace from ggml_abort, which would push the GGML_ASSERT line (what the user
# is told) out of the tail of stderr kept.
CHILD_ENVIRONMENT = {"GGML_NO_BACKTRACE": "1"}


class ProcessBackend(Backend):
    """One model in a process of its own. Driven by one thread at a time, as every Backend.

    `start` gives a child with no model yet (it can already say what GPUs it sees: `devices`),
    `load` loads one into it; `open` does both."""

    def __init__(self, process: subprocess.Popen, channel: socket.socket, stderr_tail: deque[str]):
        self._process, self._channel, self._tail = process, channel, stderr_tail
        self._reading, self._writing = channel.makefile("rb"), channel.makefile("wb")
        self._send_lock, self._gone_lock = threading.Lock(), threading.Lock()
        self._description: ModelDescription | None = None
        self._closing = False  # the end is ours (close, a cancelled load): nobody is told it died
        self._on_gone: Callable[[str], None] | None = None
        self.crashed: str | None = None  # why the child is gone, once it is
        self._tail_thread = threading.Thread(target=self._keep_tail, daemon=True, name=f"engine-{process.pid}-stderr")

    # -- opening -----------------------------------------------------------------------------------

    @classmethod
    def start(cls, environment: dict[str, str] | None = None) -> ProcessBackend:
        """A child with no model loaded yet: Hearth's own executable, given one end of a socket
        pair. `environment`: added to this process's (CUDA_VISIBLE_DEVICES="" keeps it off GPUs)."""
        ours, theirs = socket.socketpair()
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        try:
            process = subprocess.Popen(
                hearth_command(CHILD_FLAG, str(theirs.fileno())), pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                errors="replace", cwd=hearth_folder(), env={**os.environ, **CHILD_ENVIRONMENT, **(environment or {})})
        except OSError as exc:
            ours.close()
            raise EngineCrashed(f"the engine's process could not start: {exc}") from None
        finally:
            theirs.close()
        backend = cls(process, ours, tail)
        backend._tail_thread.start()
        return backend

    @classmethod
    def open(cls, path: Path, options: LoadOptions, progress: LoadProgress | None = None,
             cancel: threading.Event | None = None, states: SavedStates | None = None,
             environment: dict[str, str] | None = None) -> ProcessBackend:
        """Start a child and load `path` in it (see `load`)."""
        backend = cls.start(environment)
        backend.load(path, options, progress, cancel, states)
        return backend

    def devices(self) -> DeviceReport:
        """What llama.cpp sees of the GPUs, from the child: before a load, or after one (then
        the free memory is what this model left)."""
        return self._ask("devices", None, "devices")

    def load(self, path: Path, options: LoadOptions, progress: LoadProgress | None = None,
             cancel: threading.Event | None = None, states: SavedStates | None = None) -> None:
        """Load `path` in this child. Raises as the in-process load does (ModelFileError,
        TemplateError, LoadCancelled), or EngineCrashed where llama.cpp took the child down
        while loading (the file, or the machine: the message says which it said). A child whose
        load failed is closed: it is not used again."""
        watcher = _Watcher(cancel, self._cancel_load) if cancel is not None else None
        try:
            self._send("load", LoadRequest(path, options, states))
            while True:
                kind, body = self._answer()
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

    def when_gone(self, callback: Callable[[str], None]) -> None:
        """Call `callback(why)` once, from a thread of its own, when the child dies by itself
        (not when closed): at once if it already has."""
        self._on_gone = callback
        if self._process.poll() is not None and not self._closing:
            callback(self._gone())

    # -- the Backend interface ---------------------------------------------------------------------

    def describe(self) -> ModelDescription:
        return self._description

    def stream(self, messages: list[dict], params: SamplingParams, cancel: threading.Event,
               prompt_progress: PromptProgress | None = None, conversation_id: int | None = None,
               tools: ToolUse = PLAIN, logprobs: int | None = None) -> Iterator[ReplyEvent]:
        self._send("stream", StreamRequest(json.dumps(messages, ensure_ascii=False), params, conversation_id, tools,
                                           logprobs))
        try:
            kind, body = self._answer()  # a reply that cannot start raises here, before its first piece
        except EngineCrashed as exc:  # the request reached the child, which died reading the prompt
            return iter([ReplyStats.interrupted(str(exc))])
        if kind == "failed":
            raise raised(body)
        return self._reply(kind, body, cancel, prompt_progress)

    def _reply(self, kind: str, body: Any, cancel: threading.Event,
               prompt_progress: PromptProgress | None) -> Iterator[ReplyEvent]:
        watcher = _Watcher(cancel, lambda: self._send_quietly("stop"))
        try:
            while True:
                if kind == "prompt":
                    if prompt_progress is not None:
                        prompt_progress(*body)
                elif kind == "event":
                    yield body
                    if isinstance(body, ReplyStats):
                        return
                try:
                    kind, body = self._answer()
                except EngineCrashed as exc:
                    yield ReplyStats.interrupted(str(exc))
                    return
        finally:
            watcher.done()

    def prepare(self, conversation_id: int | None) -> None:
        self._ask("prepare", conversation_id, "done")

    def forget_state(self, conversation_id: int) -> None:
        self._ask("forget", conversation_id, "done")

    def set_template_override(self, source: str | None) -> str:
        return self._ask("template", source, "template")

    def close(self) -> None:
        """The child frees the model (saving the conversation's state) and exits; one that does
        not within EXIT_WAIT_S is killed. Its memory is the system's again."""
        self._closing = True
        if self._process.poll() is None:
            self._send_quietly("close")
            try:
                self._process.wait(EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        self._channel.close()

    def _cancel_load(self) -> None:
        self._closing = True
        self.kill()

    def kill(self) -> None:
        """End the child at once (SIGKILL): as a crash, unless it was closing anyway."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    @property
    def alive(self) -> bool:
        return self._process.poll() is None and self.crashed is None

    @property
    def pid(self) -> int:
        return self._process.pid

    # -- inside ------------------------------------------------------------------------------------

    def _keep_tail(self) -> None:
        """Keep the last lines the child writes; when it ends on its own, say so (`when_gone`)."""
        for line in self._process.stderr:
            self._tail.append(line.rstrip()[:1000])
        self._process.wait()
        if not self._closing and self._on_gone is not None:
            self._on_gone(self._gone())

    def _ask(self, kind: str, body: Any, answer: str) -> Any:
        self._send(kind, body)
        got, value = self._answer()
        if got == "failed":
            raise raised(value)
        if got != answer:
            raise EngineCrashed(self._gone(f"the engine's process answered {got!r} to {kind!r}"))
        return value

    def _send(self, kind: str, body: Any = None) -> None:
        if self.crashed is not None:
            raise EngineCrashed(self.crashed)
        try:
            with self._send_lock:
                write_frame(self._writing, kind, body)
        except OSError:
            raise EngineCrashed(self._gone()) from None

    def _send_quietly(self, kind: str) -> None:
        try:
            self._send(kind)
        except EngineCrashed:
            pass

    def _answer(self) -> tuple[str, Any]:
        if self.crashed is not None:
            raise EngineCrashed(self.crashed)
        try:
            return read_message(self._reading, ANSWERS)
        except (ChannelClosed, OSError):
            raise EngineCrashed(self._gone()) from None
        except ProtocolError as exc:  # a child that speaks nonsense is as good as gone
            self.kill()
            raise EngineCrashed(self._gone(f"the engine's process sent what is not a message ({exc})")) from None

    def _gone(self, reason: str | None = None) -> str:
        """Why the child is gone, said once and kept: its exit status and llama.cpp's last words."""
        with self._gone_lock:
            return self._describe_end(reason)

    def _describe_end(self, reason: str | None) -> str:
        if self.crashed is None:
            try:
                status = self._process.wait(EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                self.kill()
                status = self._process.returncode
            if self._tail_thread is not threading.current_thread():
                self._tail_thread.join(EXIT_WAIT_S)  # so the tail holds its last words
            self.crashed = reason or how_it_ended(status, self._tail)
            log.error("the engine's process ended (%s); its last output:\n%s", describe_status(status),
                      "\n".join(self._tail))
        return self.crashed


class _Watcher:
    """Calls `act` once when `event` is set, until done() (a thread that waits on it)."""

    def __init__(self, event: threading.Event, act):
        self._event, self._act, self._done = event, act, threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while not self._done.is_set():
            if self._event.wait(0.05):
                if not self._done.is_set():
                    self._act()
                return

    def done(self) -> None:
        self._done.set()



