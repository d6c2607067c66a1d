"""`EngineQueue`: one Backend, one worker thread, jobs served one at a time in arrival order.

A Backend is driven by one thread (llama.cpp's context is not thread-safe, and one model has
one KV cache), so every request waits its turn here and replies never interleave. The wait is
bounded: a job beyond `max_waiting` is refused at once (QueueFull, which the server answers
with 429) rather than left to wait for minutes. A cancelled job (its client went away) leaves
the queue at once if it was waiting, and if it was running the Backend sees its cancel flag
before the next token.

Raw prompts (/v1/completions) go through the same `Backend.stream`, under a chat template
that writes the prompt as it is (RAW_TEMPLATE). The template is switched only when the kind
of job changes, since compiling one is not free.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from ..engine.backend import Backend
from ..engine.types import ReplyStats, StopReason
from .completions import Deliver, Follow, Job, QueueFull, Refusal, Refused, ServedModel
from .run_job import RAW_TEMPLATE, run_job

log = logging.getLogger(__name__)

SHUTTING_DOWN = "Hearth is shutting down; the request was not served."


class _Ticket:
    """One submitted job: its cancel flag and where its events go. The queue's Submission."""

    def __init__(self, owner: "EngineQueue", job: Job, deliver: Deliver, follow: Follow | None):
        self._owner = owner
        self.job = job
        self._deliver = deliver
        self.follow = follow
        self.cancelled = threading.Event()

    def deliver(self, event) -> None:
        """Pass an event on; a consumer that fails must not take the worker thread with it."""
        try:
            self._deliver(event)
        except Exception:
            log.exception("a served reply's consumer failed")

    def cancel(self) -> None:
        self.cancelled.set()
        self._owner._withdraw(self)


class EngineQueue:
    """The `Completions` of `hearth serve`: a worker thread that owns `backend` from now on."""

    def __init__(self, backend: Backend, max_waiting: int = 8, template_override: str | None = None):
        description = backend.describe()
        self._model = ServedModel.of(description)
        self._backend = backend
        self._max_waiting = max_waiting
        self._template_override = template_override  # restored after raw prompts
        self._raw_template = False
        self._changed = threading.Condition()
        self._waiting: deque[_Ticket] = deque()
        self._running: _Ticket | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="serve-engine", daemon=True)
        self._thread.start()

    def model(self) -> ServedModel:
        return self._model

    def submit(self, job: Job, deliver: Deliver, follow: Follow | None = None) -> _Ticket:
        ticket = _Ticket(self, job, deliver, follow)
        with self._changed:
            if not self._closed:
                # One job runs (or is about to: the worker may not have taken it yet); the
                # others wait, at most max_waiting of them.
                taken = len(self._waiting) + (self._running is not None)
                if taken > self._max_waiting:
                    raise QueueFull(taken - 1)
                self._waiting.append(ticket)
                self._changed.notify()
                return ticket
        ticket.deliver(Refused(Refusal.UNAVAILABLE, SHUTTING_DOWN))
        return ticket

    @property
    def waiting(self) -> int:
        with self._changed:
            return len(self._waiting)

    def stop(self) -> None:
        """Refuse what waits, cancel what runs, take nothing more. Does not block (a signal
        handler calls it); `close` then waits for the worker and frees the model."""
        with self._changed:
            self._closed = True
            refused, running = list(self._waiting), self._running
            self._waiting.clear()
            self._changed.notify()
        for ticket in refused:
            ticket.deliver(Refused(Refusal.UNAVAILABLE, SHUTTING_DOWN))
        if running is not None:
            running.cancelled.set()

    def close(self) -> None:
        self.stop()
        self._thread.join()
        self._backend.close()

    def _withdraw(self, ticket: _Ticket) -> None:
        """A waiting ticket that was cancelled leaves the queue and says so at once."""
        with self._changed:
            try:
                self._waiting.remove(ticket)
            except ValueError:
                return  # running (the flag stops it), finished, or refused
        ticket.deliver(ReplyStats(stop_reason=StopReason.CANCELLED))

    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and not self._closed:
                    self._changed.wait()
                if self._closed:
                    return
                ticket = self._running = self._waiting.popleft()
            try:
                last = run_job(self._backend, ticket.job, ticket.cancelled, ticket.deliver, self._use_raw_template,
                               ticket.follow)
            finally:
                with self._changed:
                    self._running = None
            # Only now: a client that sends its next request on reading this must find the
            # engine free, or a queue with no room to wait would answer it 429.
            ticket.deliver(last)

    def _use_raw_template(self, raw: bool) -> None:
        if raw != self._raw_template:
            self._backend.set_template_override(RAW_TEMPLATE if raw else self._template_override)
            self._raw_template = raw
