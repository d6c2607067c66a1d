"""One engine process (#29): Hearth started as `hearth --engine-child FD` (child.py), given one end of
a socket pair, and what the parent needs to talk to it and to know when it died.

The model it holds is its owner's business: ProcessBackend (backend.py) has it load a chat model,
ProcessEmbedder (embedder.py) an embedding model. Requests and answers are protocol.py's, framed
by frames.py and checked by codec.py. Only one thread asks at a time (its owner's), except `send`
of a "stop", which may come from another while a reply streams.

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
from .codec import ProtocolError
from .crash import TAIL_LINES, describe_status, hearth_command, hearth_folder, how_it_ended
from .frames import ChannelClosed, read_message, write_frame
from .protocol import ANSWERS, raised

log = logging.getLogger(__name__)

EXIT_WAIT_S = 5.0  # for a child told to close: then it is killed
# Every child: no backtrace from ggml_abort, which would push the GGML_ASSERT line (what the user
# is told) out of the tail of stderr kept.
CHILD_ENVIRONMENT = {"GGML_NO_BACKTRACE": "1"}
NO_GPU_ENVIRONMENT = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "", "GGML_VK_VISIBLE_DEVICES": ""}


class EngineCrashed(BackendUnavailable):
    """The engine's process is gone: the message says how (a signal, llama.cpp's last words).
    Whoever holds it loads the model again (a server meanwhile answers 503)."""


class EngineProcess:
    """A running child and the socket to it."""

    def __init__(self, process: subprocess.Popen, channel: socket.socket):
        self._process, self._channel = process, channel
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._reading, self._writing = channel.makefile("rb"), channel.makefile("wb")
        self._send_lock, self._gone_lock = threading.Lock(), threading.Lock()
        self._closing = False  # the end is ours (close, a cancelled load): nobody is told it died
        self._on_gone: Callable[[str], None] | None = None
        self.crashed: str | None = None  # why the child is gone, once it is
        self._tail_thread = threading.Thread(target=self._keep_tail, daemon=True, name=f"engine-{process.pid}-stderr")

    @classmethod
    def start(cls, environment: dict[str, str] | None = None) -> EngineProcess:
        """A child with nothing loaded yet. `environment`: added to this process's
        (CUDA_VISIBLE_DEVICES="" keeps it off GPUs). EngineCrashed if it cannot be started."""
        ours, theirs = socket.socketpair()
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
            raise EngineCrashed(self._gone(f"the engine's process answered {got!r} to {kind!r}"))
        return value

    def send(self, kind: str, body: Any = None) -> None:
        if self.crashed is not None:
            raise EngineCrashed(self.crashed)
        try:
            with self._send_lock:
                write_frame(self._writing, kind, body)
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
        if self.crashed is not None:
            raise EngineCrashed(self.crashed)
        try:
            return read_message(self._reading, ANSWERS)
        except (ChannelClosed, OSError):
            raise EngineCrashed(self._gone()) from None
        except ProtocolError as exc:  # a child that speaks nonsense is as good as gone
            self.kill()
            raise EngineCrashed(self._gone(f"the engine's process sent what is not a message ({exc})")) from None

    def devices(self) -> DeviceReport:
        """What llama.cpp sees of the GPUs, from the child (after its own model took its share)."""
        return self.ask("devices", None, "devices")

    # -- its life ----------------------------------------------------------------------------------

    def when_gone(self, callback: Callable[[str], None]) -> None:
        """Call `callback(why)` once, from a thread of its own, when the child dies by itself
        (not when closed or cancelled): at once if it already has."""
        self._on_gone = callback
        if self._process.poll() is not None and not self._closing:
            callback(self._gone())

    def close(self) -> None:
        """The child frees what it holds (a chat model saves its conversation's state) and exits;
        one that does not within EXIT_WAIT_S is killed. Its memory is the system's again."""
        self._closing = True
        if self._process.poll() is None:
            self.send_quietly("close")
            try:
                self._process.wait(EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
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
        """Keep the last lines the child writes; when it ends on its own, say so (`when_gone`)."""
        for line in self._process.stderr:
            self._tail.append(line.rstrip()[:1000])
        self._process.wait()
        if not self._closing and self._on_gone is not None:
            self._on_gone(self._gone())

    def _gone(self, reason: str | None = None) -> str:
        """Why the child is gone, said once and kept: its exit status and llama.cpp's last words."""
        with self._gone_lock:
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
