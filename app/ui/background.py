"""Run a plain function off the GUI thread and get its result back on the GUI thread."""

from __future__ import annotations

from collections.abc import Callable

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal


class _Relay(QObject):
    done = Signal(object, object)  # result, exception


class _Job(QRunnable):
    def __init__(self, function: Callable[[], object], relay: _Relay):
        super().__init__()
        self._function = function
        self._relay = relay

    def run(self) -> None:
        try:
            result, error = self._function(), None
        except Exception as exc:  # handed to the GUI thread, which decides what to show
            result, error = None, exc
        if shiboken6.isValid(self._relay):  # not when the application quit while this ran
            self._relay.done.emit(result, error)


_relays: set[_Relay] = set()


def run_in_background(function: Callable[[], object], on_done: Callable[[object, Exception | None], None]) -> None:
    """Call `function()` on the thread pool, then `on_done(result, error)` on the GUI thread."""
    relay = _Relay()
    _relays.add(relay)  # keep it alive until the job reports

    def finish(result, error):
        _relays.discard(relay)
        on_done(result, error)

    relay.done.connect(finish)
    QThreadPool.globalInstance().start(_Job(function, relay))
