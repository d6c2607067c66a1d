"""Run a plain function off the GUI thread and get its result back on the GUI thread.

The answer is dropped when the object that asked (`owner`) was deleted in the meantime (a
dialog closed, the window gone), so no caller has to ask whether it still exists. That check
happens on the GUI thread, where widgets are deleted, so it cannot race with a deletion. Which
of several answers still matters is `app.common.newest`'s job.
"""

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
        self._relay.done.emit(result, error)


_relays: set[_Relay] = set()  # each relay lives until its job reports


def run_in_background(
    function: Callable[[], object], on_done: Callable[[object, Exception | None], None], owner: QObject
) -> None:
    """Call `function()` on the thread pool, then `on_done(result, error)` on the GUI thread,
    unless `owner` was deleted in the meantime."""
    relay = _Relay()
    _relays.add(relay)

    def finish(result, error):
        _relays.discard(relay)
        if shiboken6.isValid(owner):
            on_done(result, error)

    relay.done.connect(finish)
    QThreadPool.globalInstance().start(_Job(function, relay))
