"""`hearth serve`'s model (#29): a ProcessBackend that is started again by itself when its process
dies, so one request that makes llama.cpp abort (or the system's OOM killer) costs that request,
not the server and every client after it.

The request that was being answered ends as the child left it: an error event in its stream, or a
503 where nothing was sent yet (serve/run_job.py). The model is loaded again at once on a thread
of its own; a request that comes meanwhile waits for it (up to READY_WAIT_S, then 503 saying so).
A child that dies soon after loading, before answering anything, is a model or machine that will
not stay up: each
further try waits twice as long as the last (BACKOFF_FIRST_S up to BACKOFF_MAX_S), and stderr
says each time what happened and when the next try is, so the server never spins, and never
gives up while it runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from ..backend import Backend, BackendUnavailable, LoadCancelled, PromptProgress, ReplyEvent
from ..sampling import SamplingParams
from ..tools.types import PLAIN, ToolUse
from ..types import DeviceReport, LoadOptions, ModelDescription
from .backend import ProcessBackend
from .engine_process import EngineCrashed

log = logging.getLogger(__name__)

QUICK_DEATH_S = 30.0  # a child that dies sooner than this after loading "dies again at once"
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
READY_WAIT_S = 30.0  # how long a request waits for the model to come back before a 503

T = TypeVar("T")


class RestartingBackend(Backend):
    """One local model in a child process that is replaced when it dies. Driven by one thread
    (the server's EngineQueue), as every Backend; the restarts run on a thread of their own."""

    def __init__(self, path: Path, options: LoadOptions, say: Callable[[str], None] = log.warning):
        """Load the model (raising as any load does: the server does not start). `say`: where
        crashes and restarts are told (hearth serve: its stderr)."""
        self._path, self._options, self._say = path, options, say
        self._ready = threading.Condition()
        self._closing = threading.Event()  # set by close(): a reload under way is cancelled, none begins
        self._template: str | None = options.template_override
        self._why: str | None = None  # why there is no child now
        self._next_delay = 0.0
        self._child: ProcessBackend | None = None
        self._adopt(ProcessBackend.open(path, options))
        self._description = self._child.describe()

    # -- the Backend interface ---------------------------------------------------------------------

    def describe(self) -> ModelDescription:
        return self._description

    def stream(self, messages: list[dict], params: SamplingParams, cancel: threading.Event,
               prompt_progress: PromptProgress | None = None, conversation_id: int | None = None,
               tools: ToolUse = PLAIN, logprobs: int | None = None,
               text_interval_s: float = 0.0) -> Iterator[ReplyEvent]:
        return self._on_child(lambda child: child.stream(messages, params, cancel, prompt_progress, conversation_id,
                                                         tools, logprobs, text_interval_s))

    def set_template_override(self, source: str | None) -> str:
        name = self._on_child(lambda child: child.set_template_override(source))
        self._template = source  # a restarted child is given it again
        return name

    def prepare(self, conversation_id: int | None) -> None:
        self._on_child(lambda child: child.prepare(conversation_id))

    def forget_state(self, conversation_id: int) -> None:
        self._on_child(lambda child: child.forget_state(conversation_id))

    def devices(self) -> DeviceReport | None:
        return self._on_child(lambda child: child.devices())

    def close(self) -> None:
        self._closing.set()
        with self._ready:
            child, self._child = self._child, None
            self._ready.notify_all()
        if child is not None:
            child.close()

    @property
    def pid(self) -> int | None:
        """The child's process id, while there is one."""
        child = self._child
        return child.pid if child is not None else None

    # -- inside ------------------------------------------------------------------------------------

    def _adopt(self, child: ProcessBackend) -> bool:
        """Make `child` the one requests go to; False (and it is closed) once close() has begun,
        so that a restart finishing then leaves nothing running."""
        started = time.monotonic()
        with self._ready:
            closing = self._closing.is_set()
            if not closing:
                self._child, self._why = child, None
                self._ready.notify_all()
        if closing:
            child.close()
            return False
        child.when_gone(lambda why: self._gone(child, why, time.monotonic() - started))
        return True

    def _on_child(self, call: Callable[[ProcessBackend], T]) -> T:
        """`call` on the child, once there is one (waiting for a restart under way); raises
        BackendUnavailable (a 503 for the client) if it does not come back in time, or dies
        during the call."""
        with self._ready:
            self._ready.wait_for(lambda: self._child is not None or self._closing.is_set(), READY_WAIT_S)
            child, why = self._child, self._why or "the model is not loaded"
        if child is None:
            raise BackendUnavailable.stopped(why)
        try:
            return call(child)
        except EngineCrashed as exc:
            raise BackendUnavailable.stopped(str(exc)) from None

    def _gone(self, child: ProcessBackend, why: str, lived_s: float) -> None:
        with self._ready:
            if child is not self._child or self._closing.is_set():
                return
            self._child, self._why = None, why
        child.close()
        at_once = lived_s < QUICK_DEATH_S and not child.answered  # a reply that got through: it worked
        self._next_delay = _longer(self._next_delay) if at_once else 0.0
        if at_once:
            self._say(f"{why}. It stopped {lived_s:.0f} s after loading; loading it again in {self._next_delay:.0f} s.")
        else:
            self._say(f"{why}. Loading the model again.")
        threading.Thread(target=self._restart, args=(self._next_delay,), daemon=True, name="engine-restart").start()

    def _restart(self, delay: float) -> None:
        while not self._closing.wait(delay):
            try:
                child = ProcessBackend.open(self._path, self._options, cancel=self._closing)
                if self._template != self._options.template_override:
                    child.set_template_override(self._template)
            except LoadCancelled:  # the server is stopping
                return
            except Exception as exc:  # the file went away, or it crashed loading: tried again, later
                delay = _longer(delay)
                with self._ready:
                    self._why = str(exc)
                self._say(f"Loading the model again failed: {str(exc).rstrip('.')}. Trying again in {delay:.0f} s.")
                continue
            if self._adopt(child):
                self._say("The model is loaded again.")
            return


def _longer(delay: float) -> float:
    """The pause before the next try: twice the last, from BACKOFF_FIRST_S up to BACKOFF_MAX_S."""
    return min(max(delay * 2, BACKOFF_FIRST_S), BACKOFF_MAX_S)
