"""Run a plain function off the GUI thread and get its result back on the GUI thread.

The answer is delivered through a relay parented to the object that asked (`owner`): when the
owner is deleted first (a dialog closed, the window gone), Qt deletes the relay with it and
the answer is dropped, so no caller has to ask whether it still exists. Which of several
answers still matters is `app.newest`'s job.
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
        if shiboken6.isValid(self._relay):  # not when its owner (or the application) is gone
            self._relay.done.emit(result, error)


def run_in_background(
    function: Callable[[], object], on_done: Callable[[object, Exception | None], None], owner: QObject
) -> None:
    """Call `function()` on the thread pool, then `on_done(result, error)` on the GUI thread,
    unless `owner` was deleted in the meantime."""
    relay = _Relay(owner)

    def finish(result, error):
        # Disconnect before anything else: if this closure holds the last reference to a
        # parentless owner, dropping the connection later would free the owner, which would
        # delete the relay a second time.
        relay.done.disconnect(finish)
        relay.deleteLater()
        on_done(result, error)

    relay.done.connect(finish)
    QThreadPool.globalInstance().start(_Job(function, relay))
