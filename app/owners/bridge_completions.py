"""`BridgeCompletions`: the server's `Completions` over the GUI's engine, for "Serve the loaded model".

`hearth serve` owns its Backend (app.serve.queue.EngineQueue); the GUI's server cannot: the
model belongs to the engine thread behind the bridge, which the GUI's replies use too. So each
job goes to `EngineBridge.serve`, where it waits in line with the GUI's replies, and this class
adds what a server needs on top: the model it names (whichever is loaded in the window, followed
as it changes), a bounded wait (QueueFull, 429) and a stop that refuses what waits (503).

`model()` and `submit` run on the server's thread; `follow` and `stop` on the GUI's. Importing
this module imports neither Starlette nor uvicorn (the window imports it at start-up).
"""

from __future__ import annotations

import threading

from ..engine.types import ModelDescription
from ..serve.completions import Deliver, Follow, Job, QueueFull, Refusal, Refused, ServedModel
from ..serve.served_job import ServedJob
from .bridge import EngineBridge

MAX_WAITING = 8  # as hearth serve's default: past it, a request is refused (429) rather than kept waiting
NO_MODEL = "No model is loaded in Hearth. Load one in its window: this server serves whichever model is loaded there."
STOPPED = "Hearth stopped serving the model; the request was not served."


class BridgeCompletions:
    """Jobs for the model loaded in the GUI, through its bridge. Construct and `follow` on the
    GUI thread; the server calls `model` and `submit` from its own."""

    def __init__(self, bridge: EngineBridge, max_waiting: int = MAX_WAITING):
        self._bridge = bridge
        self._max_waiting = max_waiting
        self._model: ServedModel | None = None  # replaced whole: read from the server's thread
        self._lock = threading.Lock()
        self._jobs: list[ServedJob] = []  # this server's, in line or running
        self._closed = False

    def follow(self, loaded: ModelDescription | None) -> None:
        """The model loaded in the window now (None: none). Requests must name it from now on;
        jobs already in line run on whichever model is loaded when their turn comes."""
        self._model = None if loaded is None else ServedModel.of(loaded)

    def model(self) -> ServedModel:
        """The model being served. With none loaded, every request is answered 503 saying so
        (an ApiError: the server answers it as it answers its own refusals)."""
        model = self._model
        if model is None:
            from ..serve import errors  # Starlette: imported by the server's thread, not the window's

            raise errors.unavailable(NO_MODEL)
        return model

    def submit(self, job: Job, deliver: Deliver, follow: Follow | None = None) -> ServedJob:
        with self._lock:
            if not self._closed:
                self._jobs = [served for served in self._jobs if not served.finished]
                # One job runs (or is about to); the others wait, at most max_waiting of them.
                if len(self._jobs) > self._max_waiting:
                    raise QueueFull(len(self._jobs) - 1)
                served = self._bridge.serve(job, deliver, follow)
                self._jobs.append(served)
                return served
        refused = ServedJob(job, deliver)
        refused.withdraw(Refused(Refusal.UNAVAILABLE, STOPPED))
        return refused

    def stop(self) -> None:
        """Take no more jobs: those in line are refused (503), the running one stops at its next
        token. Does not block."""
        with self._lock:
            self._closed = True
            jobs, self._jobs = self._jobs, []
        for served in jobs:
            served.refuse(Refused(Refusal.UNAVAILABLE, STOPPED))
