"""One engine process (#29): Hearth started as `hearth --engine-child FD` (child.py), given one end of
a socket pair, and what the parent needs to talk to it and to know when it died.

The model it holds is its owner's business: ProcessBackend (backend.py) has it load a chat model,
ProcessEmbedder (embedder.py) an embedding model. Requests and answers are protocol.py's, framed
by frames.py and checked by codec.py. Only one thread asks at a time (its owner's), except `send`
of a "stop", which may come from another while a reply streams; a reply's answers may be read by
an event loop meanwhile (`answer_ready`, which never waits), the owner's thread waiting for it.

When the child dies by itself (llama.cpp aborted, the system killed it for memory, kill -9), the
next answer read raises EngineCrashed saying how ("llama.cpp crashed (SIGABRT): GGML_ASSERT …",
from the last lines it wrote to stderr), `crashed` keeps it, every later call raises it again,
and `when_gone` is told, from a thread of its own, even while nobody was asking.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ..backend import BackendUnavailable
from ..types import DeviceReport
from . import CHILD_FLAG
from .crash import TAIL_LINES, describe_status, hearth_command, hearth_folder, how_it_ended
from .frames import ChannelClosed, FrameSocket, checked
from .protocol import ANSWERS, raised

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 60.0  # for a child told to close, which saves the conversation's KV state first
EXIT_WAIT_S = 5.0  # for a child whose socket closed to be reaped, and for its last stderr lines
TAIL_LINE_BYTES = 4096  # of one stderr line kept: a child cannot grow the parent's memory with one long line
# Every child: no backtrace from ggml_abort, which would push the GGML_ASSERT line (what the user
# is told) out of the tail of stderr kept.
CHILD_ENVIRONMENT = {"GGML_NO_BACKTRACE": "1"}
NO_GPU_ENVIRONMENT = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "", "GGML_VK_VISIBLE_DEVICES": ""}
LATER = object()  # answer_ready's word for "the child is gone or speaks nonsense: `answer` will say how"


class EngineCrashed(BackendUnavailable):
    """The engine's process is gone: the message says how (a signal, llama.cpp's last words).
    Whoever holds it loads the model again (a server meanwhile answers 503)."""


class EngineProcess:
    """A running child and the socket to it."""

    def __init__(self, process: subprocess.Popen, channel: socket.socket):
        self._process, self._channel = process, channel
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._frames = FrameSocket(channel)
        self._deferred: Exception | None = None  # what answer_ready met, for answer to raise
        self._send_lock, self._gone_lock = threading.Lock(), threading.Lock()
        self._closing = False  # the end is ours (close, a cancelled load): nobody is told it died
        self._on_gone: Callable[[str], None] | None = None
        self._told = False  # the owner has heard of the child's end (when_gone: once)
        self.crashed: str | None = None  # why the child is gone, once it is
        self._tail_done = threading.Event()  # stderr read to its end: the tail holds the last words
        self._tail_thread = threading.Thread(target=self._keep_tail, daemon=True, name=f"engine-{process.pid}-stderr")

    @classmethod
    def start(cls, environment: dict[str, str] | None = None) -> EngineProcess:
        """A child with nothing loaded yet. `environment`: added to this process's
        (CUDA_VISIBLE_DEVICES="" keeps it off GPUs). EngineCrashed if it cannot be started."""
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                hearth_command(CHILD_FLAG, str(theirs.fileno())), pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                cwd=hearth_folder(), env={**os.environ, **CHILD_ENVIRONMENT, **(environment or {})})
        except OSError as exc:
            ours.close()
            raise EngineCrashed(f"the engine's process could not start: {exc}") from None
        finally:
            theirs.close()
        child = cls(process, ours)
        child._tail_thread.start()
        return child

    # -- talking -----------------------------------------------------------------------------------

    def ask(self, kind: str, body: Any, answer: str) -> Any:
        """Send a request and read its one answer, of kind `answer`; a Failure is raised as the
        exception it names (protocol.raised)."""
        self.send(kind, body)
        got, value = self.answer()
        if got == "failed":
            raise raised(value)
        if got != answer:
            self.kill()  # out of step with its parent: nothing it says can be trusted now
            raise EngineCrashed(self._gone(f"the engine's process answered {got!r} to {kind!r}"))
        return value

    def send(self, kind: str, body: Any = None) -> None:
        if self.crashed is not None:
            raise EngineCrashed(self.crashed)
        try:
            with self._send_lock:
                self._frames.send(kind, body)
        except OSError:
            raise EngineCrashed(self._gone()) from None

    def send_quietly(self, kind: str) -> None:
        """Send if the child is there to hear it (a "stop", a "close")."""
        try:
            self.send(kind)
        except EngineCrashed:
            pass

    def answer(self) -> tuple[str, Any]:
        """The next answer, checked (codec.py); EngineCrashed once the child is gone."""
        return self._answer(self._frames.read)

    def answer_ready(self) -> tuple[str, Any] | None | object:
        """For an event loop that waits on `watched()`: the next answer if it has come whole, else
        None, at once. It never waits, not even for a child that is gone or speaks nonsense:
        that answers LATER, and the next `answer` (on the owner's thread) raises what `answer`
        would have, finding out how the child ended, which may wait for it."""
        return self._answer_now(self._frames.read_ready)

    def answer_received(self) -> tuple[str, Any] | None | object:
        """As answer_ready, from what was received already: the socket is not read."""
        return self._answer_now(self._frames.read_received)

    def watched(self) -> socket.socket:
        """A socket for a selector to wait on, readable when `answer_ready` may have an answer: a
        copy of the channel's, for its caller to close, so that it stays the same socket while
        watched even if the child's end comes and this one closes the channel."""
        return self._channel.dup()

    def _answer_now(self, read: Callable[[], tuple[str, Any] | None]) -> tuple[str, Any] | None | object:
        if self.crashed is not None or self._deferred is not None:
            return LATER
        try:
            message = read()
            return None if message is None else checked(message, ANSWERS)
        except Exception as exc:  # told by `answer`, on the owner's thread
            self._deferred = exc
            return LATER

    def _answer(self, read: Callable[[], tuple[str, Any]]) -> tuple[str, Any]:
        if self.crashed is not None:
            raise EngineCrashed(self.crashed)
        try:
            if self._deferred is not None:  # what answer_ready met, raised here where it may wait
                deferred, self._deferred = self._deferred, None
                raise deferred
            return checked(read(), ANSWERS)
        except (ChannelClosed, OSError):
            raise EngineCrashed(self._gone()) from None
        except Exception as exc:  # a child that speaks nonsense (a ProtocolError, or worse) is as good as gone
            self.kill()
            raise EngineCrashed(self._gone(f"the engine's process sent what is not a message ({exc})")) from None

    def devices(self) -> DeviceReport:
        """What llama.cpp sees of the GPUs, from the child (after its own model took its share)."""
        return self.ask("devices", None, "devices")

    # -- its life ----------------------------------------------------------------------------------

    def when_gone(self, callback: Callable[[str], None]) -> None:
        """Call `callback(why)` once, never on the caller's thread, when the child dies by itself
        (not when closed or cancelled), even if it already has."""
        with self._gone_lock:
            self._on_gone = callback
            ended = self._tail_done.is_set()
        if ended:  # the stderr thread has finished already: tell from a thread of its own
            threading.Thread(target=self._tell, daemon=True, name=f"engine-{self.pid}-gone").start()

    def close(self) -> None:
        """The child frees what it holds (a chat model saves its conversation's state) and exits;
        one that does not within EXIT_WAIT_S is killed. Its memory is the system's again."""
        self._closing = True
        if self._process.poll() is None:
            self.send_quietly("close")
            try:
                self._process.wait(CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:
                log.warning("the engine's process did not exit within %.0f s of being closed: killed", CLOSE_WAIT_S)
                self.kill()
        self._channel.close()

    def cancel(self) -> None:
        """End the child at once, as its owner's choice (a load cancelled): not a crash."""
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
        """Keep the last lines the child writes (each cut to TAIL_LINE_BYTES); when it ends on its
        own, say so (`when_gone`)."""
        stderr = self._process.stderr
        while line := stderr.readline(TAIL_LINE_BYTES):
            if not line.endswith(b"\n"):  # an over-long line: the rest of it is not kept
                while (rest := stderr.readline(TAIL_LINE_BYTES)) and not rest.endswith(b"\n"):
                    pass
            self._tail.append(line.decode("utf-8", errors="replace").rstrip()[:1000])
        self._process.wait()
        self._tail_done.set()
        self._tell()

    def _tell(self) -> None:
        """The owner hears of a death it did not ask for, once."""
        with self._gone_lock:
            callback, first = self._on_gone, not self._told
            if callback is None or self._closing or not first:
                return
            self._told = True
        callback(self._gone())

    def _gone(self, reason: str | None = None) -> str:
        """Why the child is gone, said once and kept: its exit status and llama.cpp's last words.
        Waited for outside the lock: the stderr thread that reads those words takes it too."""
        if self.crashed is not None:
            return self.crashed
        try:
            status = self._process.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            status = self._process.returncode
        self._tail_done.wait(EXIT_WAIT_S)
        with self._gone_lock:
            if self.crashed is None:
                self.crashed = reason or how_it_ended(status, self._tail)
                end = "closed" if self._closing else "ended"
                log.log(logging.INFO if self._closing else logging.ERROR, "the engine's process %s (%s); its last "
                        "output:\n%s", end, describe_status(status), "\n".join(self._tail))
            return self.crashed
