"""`ServedJob`: one job another program asked of the engine the GUI uses, and its place in line.

The GUI's "Serve the loaded model" sends jobs (app.serve.completions.Job) through the bridge to
the engine thread, where they wait in line with the GUI's own replies. Three threads meet one
job: the server's (it submits, and cancels when its client leaves), the engine's (it runs it)
and the GUI's (stopping the server refuses what waits). Exactly one of them may end a job
that waits: the engine by starting it, the others by withdrawing it. The lock decides which,
so a job is never both run and refused, and its last event is delivered once.

Qt-free: what it carries are plain values and a callback.
"""

from __future__ import annotations

import logging
import threading
from enum import Enum

from ..engine.types import ReplyStats, StopReason
from .completions import Deliver, Event, Follow, Job

log = logging.getLogger(__name__)


class _State(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    DONE = "done"


class ServedJob:
    """A submitted job: the `Submission` the server holds, and what the engine thread runs.

    `cancel` is the flag the backend reads between tokens; `cancel()` sets it, or takes the job
    out of line at once if it has not started (its ReplyStats, CANCELLED, is delivered then)."""

    def __init__(self, job: Job, deliver: Deliver, follow: Follow | None = None):
        self.job = job
        self._deliver = deliver
        self.follow = follow
        self.cancel_flag = threading.Event()
        self._lock = threading.Lock()
        self._state = _State.WAITING

    @property
    def finished(self) -> bool:
        """Its last event was delivered, or is being delivered now."""
        return self._state is _State.DONE

    def deliver(self, event: Event) -> None:
        """Pass an event on; a consumer that fails must not take the engine thread with it."""
        try:
            self._deliver(event)
        except Exception:
            log.exception("a served reply's consumer failed")

    # --- the engine thread ---------------------------------------------------------------------

    def begin(self) -> bool:
        """The engine's turn for this job: True if it is to run now, False if it left the line."""
        with self._lock:
            if self._state is not _State.WAITING:
                return False
            self._state = _State.RUNNING
            return True

    def end(self, last: ReplyStats | Event) -> None:
        """It ran: `last` (its ReplyStats, or why it could not start) ends it. Marked done first,
        so a client that sends its next request on reading this finds the line shorter."""
        with self._lock:
            self._state = _State.DONE
        self.deliver(last)

    # --- any thread ----------------------------------------------------------------------------

    def withdraw(self, last: Event) -> bool:
        """Take the job out of line if it still waits, ending it with `last`; False if it has
        started (or ended) already."""
        with self._lock:
            if self._state is not _State.WAITING:
                return False
            self._state = _State.DONE
        self.deliver(last)
        return True

    def refuse(self, last: Event) -> None:
        """End it now: a waiting job with `last`, a running one at its next token."""
        if not self.withdraw(last):
            self.cancel_flag.set()

    def cancel(self) -> None:
        """The Submission's cancel: the client went away."""
        self.cancel_flag.set()
        self.withdraw(ReplyStats(stop_reason=StopReason.CANCELLED))
