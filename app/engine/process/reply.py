"""`ChildReply`: a reply the engine's process is writing, as ProcessBackend.stream gives it.

It is read as any Backend's stream is (an iterator of events, blocking), and it is a PolledReply
(engine/backend.py): its events come over the socket to the child, so a caller with an event
loop can wait on `fileno()` and take `ready()`'s events there. `hearth serve` reads a reply's
tokens so, in the loop that writes them to the client: the thread that owns the backend is not
woken for each token only to hand it over, which on a machine whose cores are decoding costs
about 1.5% of a token.

Whichever way it is read, the reply ends in exactly one ReplyStats whatever the child does: the
one it sends, a failure it sends after the first piece, an answer out of step, or its death.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

from ..backend import PromptProgress, ReplyEvent
from ..types import ReplyStats
from .engine_process import LATER, EngineCrashed, EngineProcess

ABANDON_WAIT_S = 30.0  # for a reply its reader left to end in the child (a long prompt reads on to a batch's end)
# How long a Watcher's thread may outlive what it watched: a set flag wakes it at once, and it
# wakes this often only to see whether it is done. Each wake of a thread costs the decoding cores
# (#31: at 50 ms, about 30 µs of a token while a reply streams).
WATCHER_LINGER_S = 1.0

Answer = tuple[str, Any]
_NOT_YET = object()  # nothing more has come: `ready` returns what it has


class ChildReply:
    """One reply from `child`, whose first answer (`first`) has been read already. `cancel`
    (set from any thread) stops it at the child's next token; `ended(stats)` is told how it ended,
    once, on whichever thread read its end. Read by one thread at a time."""

    def __init__(self, child: EngineProcess, first: Answer, cancel: threading.Event,
                 prompt_progress: PromptProgress | None, ended: Callable[[ReplyStats], None]):
        self._child = child
        self._first: Answer | None = first
        self._prompt_progress = prompt_progress
        self._ended = ended
        self._over = False
        self.waits = False  # what comes next must be read with next(): the child is gone or out of step
        self._watched: socket.socket | None = None  # what fileno() gave a selector, closed with the reply
        self._watcher = Watcher(cancel, lambda: child.send_quietly("stop"))

    def __iter__(self) -> ChildReply:
        return self

    def __next__(self) -> ReplyEvent:
        while not self._over:
            event = self._step(self._child.answer, may_wait=True)
            if event is not None:
                return event
        raise StopIteration

    def ready(self) -> list[ReplyEvent]:
        """The events that have come, without waiting (PolledReply): the last of them is the
        ReplyStats once the reply has ended. A child found gone or out of step sets `waits`:
        next() ends the reply, which may wait for the child."""
        events = []
        read = self._child.answer_ready  # reads the socket once; then only what that read brought
        while not self._over and (event := self._step(read, may_wait=False)) is not _NOT_YET:
            read = self._child.answer_received
            if event is not None:
                events.append(event)
        return events

    def fileno(self) -> int:
        if self._watched is None:
            self._watched = self._child.watched()
        return self._watched.fileno()

    def close(self) -> None:
        """Done with it: a reply left before its end is stopped, and its last answers read here, so
        the next request's first answer is its own. A child that does not end it within
        ABANDON_WAIT_S is killed."""
        self._watcher.done()
        if self._watched is not None:
            self._watched.close()
        if self._over:
            return
        self._over = True
        self._child.send_quietly("stop")
        deadline = threading.Timer(ABANDON_WAIT_S, self._child.kill)
        deadline.start()
        try:
            while True:
                kind, body = self._child.answer()
                if kind == "failed" or kind == "event" and isinstance(body, ReplyStats):
                    return
        except EngineCrashed:
            pass
        finally:
            deadline.cancel()

    def _step(self, read: Callable[[], Answer | None | object], may_wait: bool) -> ReplyEvent | None | object:
        """The event of the next answer `read` gives: None for an answer that is none (the
        prompt's progress), _NOT_YET where `read` has nothing yet. Where ending the reply may
        wait for the child (it is gone, or out of step and to be killed) and `may_wait` is False,
        _NOT_YET too, with `waits` set and the answer kept for next()."""
        if self._first is not None:
            answer, self._first = self._first, None
        else:
            try:
                answer = read()
            except EngineCrashed as exc:
                return self._end(ReplyStats.interrupted(str(exc)))
            if answer is LATER:
                self.waits = True
                return _NOT_YET
            if answer is None:
                return _NOT_YET
        kind, body = answer
        if kind not in ("prompt", "event", "failed") and not may_wait:
            self._first, self.waits = answer, True
            return _NOT_YET
        if kind == "prompt":
            if self._prompt_progress is not None:
                self._prompt_progress(*body)
            return None
        if kind == "event":
            return self._end(body) if isinstance(body, ReplyStats) else body
        if kind == "failed":  # the child's reply failed after its first piece: the text so far stays
            return self._end(ReplyStats.failed(body.message))
        self._child.kill()  # an answer to no question: the child is out of step, so it is ended
        return self._end(ReplyStats.interrupted(f"the engine's process answered {kind!r} during a reply"))

    def _end(self, stats: ReplyStats) -> ReplyStats:
        self._over = True
        self._watcher.done()
        self._ended(stats)
        return stats


class Watcher:
    """Calls `act` once when `event` is set, until done() (a thread that waits on it, and ends
    within WATCHER_LINGER_S of done())."""

    def __init__(self, event: threading.Event, act: Callable[[], None]):
        self._event, self._act, self._done = event, act, threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while not self._done.is_set():
            if self._event.wait(WATCHER_LINGER_S):
                if not self._done.is_set():
                    self._act()
                return

    def done(self) -> None:
        self._done.set()
