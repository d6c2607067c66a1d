"""ProcessBackend: a local model loaded and run in a process of its own (#29), behind the same
Backend interface the window, the command line and the server use; llama.cpp never loads in the
caller's process.

The child is Hearth itself (`hearth --engine-child FD`, child.py), given one end of a socket
pair; requests and answers are protocol.py's, framed by frames.py and checked by codec.py. The
weights are memory-mapped by the child alone. Stop reaches the child at once, on a thread of its
own (the reply's reader may be waiting for the next token), and the reply ends at its next token
as it does in process.

When the child dies (llama.cpp aborted, the system killed it for memory, someone ran kill -9),
the reply being read ends as a failed reply saying so ("llama.cpp crashed (SIGABRT): GGML_ASSERT
…", from the last lines the child wrote), never as an exception mid-reply; `crashed` then says
why, and every later call raises EngineCrashed: the caller loads the model again.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..backend import Backend, LoadCancelled, LoadProgress, PromptProgress, ReplyEvent
from ..sampling import SamplingParams
from ..tools.types import PLAIN, ToolUse
from ..types import LoadOptions, ModelDescription, ReplyStats
from . import CHILD_FLAG
from .codec import ProtocolError
from .crash import TAIL_LINES, describe_status, hearth_command, hearth_folder, last_words
from .frames import ChannelClosed, read_message, write_frame
from .protocol import ANSWERS, LoadRequest, StreamRequest, raised

log = logging.getLogger(__name__)

EXIT_WAIT_S = 5.0  # for a child told to close: then it is killed


class EngineCrashed(RuntimeError):
    """The engine's process is gone: the message says how (a signal, llama.cpp's last words)."""




class ProcessBackend(Backend):
    """One model in a process of its own. Driven by one thread at a time, as every Backend."""

    def __init__(self, process: subprocess.Popen, channel: socket.socket, stderr_tail: deque[str]):
        self._process, self._channel, self._tail = process, channel, stderr_tail
        self._reading, self._writing = channel.makefile("rb"), channel.makefile("wb")
        self._send_lock = threading.Lock()
        self._description: ModelDescription | None = None
        self.crashed: str | None = None  # why the child is gone, once it is

    # -- opening -----------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, options: LoadOptions, progress: LoadProgress | None = None,
             cancel: threading.Event | None = None, states: Path | None = None,
             environment: dict[str, str] | None = None) -> ProcessBackend:
        """Start a child and load `path` in it. Raises as the in-process load does (ModelFileError,
        TemplateError, LoadCancelled), or EngineCrashed where llama.cpp took the child down
        while loading (the file, or the machine: the message says which it said)."""
        ours, theirs = socket.socketpair()
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        process = subprocess.Popen(
            hearth_command(CHILD_FLAG, str(theirs.fileno())), pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
            cwd=hearth_folder(),
            env={**os.environ, **(environment or {})})
        theirs.close()
        threading.Thread(target=_keep_tail, args=(process, tail), daemon=True).start()
        backend = cls(process, ours, tail)
        watcher = _Watcher(cancel, backend.kill) if cancel is not None else None
        try:
            backend._send("load", LoadRequest(path, options, states))
            while True:
                kind, body = backend._answer()
                if kind == "progress" and progress is not None:
                    progress(body)
                elif kind == "loaded":
                    backend._description = body
                    return backend
                elif kind == "failed":
                    raise raised(body)
        except EngineCrashed as exc:
            backend.close()
            if cancel is not None and cancel.is_set():
                raise LoadCancelled() from None
            raise EngineCrashed(f"Loading {path.name}: {exc}") from None
        except BaseException:
            backend.close()
            if cancel is not None and cancel.is_set():
                raise LoadCancelled() from None
            raise
        finally:
            if watcher is not None:
                watcher.done()

    # -- the Backend interface ---------------------------------------------------------------------

    def describe(self) -> ModelDescription:
        return self._description

    def stream(self, messages: list[dict], params: SamplingParams, cancel: threading.Event,
               prompt_progress: PromptProgress | None = None, conversation_id: int | None = None,
               tools: ToolUse = PLAIN, logprobs: int | None = None) -> Iterator[ReplyEvent]:
        self._send("stream", StreamRequest(json.dumps(messages, ensure_ascii=False), params, conversation_id, tools,
                                           logprobs))
        kind, body = self._answer()  # a reply that cannot start raises here, before its first piece
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
                    yield ReplyStats.failed(str(exc))
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
        if self._process.poll() is None:
            self._send_quietly("close")
            try:
                self._process.wait(EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        self._channel.close()

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    @property
    def pid(self) -> int:
        return self._process.pid

    # -- inside ------------------------------------------------------------------------------------

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
        if self.crashed is None:
            try:
                status = self._process.wait(EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                self.kill()
                status = self._process.returncode
            said = last_words(self._tail) if status < 0 else ""
            how = (f"llama.cpp crashed ({describe_status(status)})" if status < 0
                   else f"the engine's process ended ({describe_status(status)})")
            self.crashed = reason or how + (f": {said}" if said else "")
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


def _keep_tail(process: subprocess.Popen, tail: deque[str]) -> None:
    for line in process.stderr:
        tail.append(line.rstrip()[:1000])

