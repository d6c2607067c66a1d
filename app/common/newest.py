""""The newest request wins": one helper for every place where a later request replaces an
earlier one that may still be running.

A reply, a model load, a folder scan and a Hub search all run off the GUI thread and answer
later. When the user asks again before the answer comes (loads another model, types another
search), the earlier answer must be dropped, and where the work can be stopped it should be.
Each request takes a `Ticket`; starting a new one cancels the previous one's event; an answer
is used only if its ticket is still the current one.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Ticket:
    """One request. `cancel` is set when a newer request replaces it or it is cancelled; the
    work checks it (a thread-safe flag, set from the GUI thread, read by the worker)."""

    number: int
    cancel: threading.Event = field(default_factory=threading.Event)


class NewestWins:
    """Issues tickets; only the latest one counts. Used on one thread (the GUI's)."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._current: Ticket | None = None

    def begin(self) -> Ticket:
        """A ticket for a new request; the previous request is cancelled and its answer will be
        ignored."""
        self.cancel()
        self._current = Ticket(next(self._numbers))
        return self._current

    @property
    def current(self) -> Ticket | None:
        """The request still waiting for its answer, if any."""
        return self._current

    def is_current(self, ticket: Ticket) -> bool:
        return ticket is self._current

    def finish(self, ticket: Ticket) -> bool:
        """The answer for `ticket` came: True (and nothing is pending any more) if it is the
        current request's, False if a newer request replaced it and the answer is stale."""
        if ticket is not self._current:
            return False
        self._current = None
        return True

    def cancel(self) -> None:
        """Ask the current request's work to stop; its answer, when it comes, still counts."""
        if self._current is not None:
            self._current.cancel.set()
