"""uvicorn on a socket bound here: the address line, and Ctrl+C or SIGTERM stopping it cleanly.

The socket is bound before uvicorn starts, so a port that is taken is a one-line error and
`--port 0` gets a free port whose number is printed (the tests use that). On SIGINT or SIGTERM
the engine's queue stops at once (`on_stop`): waiting requests get 503, a reply in progress
ends at its next token with an error event, and uvicorn then closes the connections without
waiting on replies that could run for minutes. The signal is not raised again afterwards (as
uvicorn does by default), so `hearth serve` exits 0 after a clean stop.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Iterator

import uvicorn

GRACE_S = 5  # what uvicorn waits for open connections once replies have been stopped


class _Server(uvicorn.Server):
    """uvicorn's server with Hearth's stop: the queue first, and no signal raised again."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None]):
        super().__init__(config)
        self._on_stop = on_stop

    def handle_exit(self, sig: int, frame) -> None:
        super().handle_exit(sig, frame)
        self._on_stop()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def config(app) -> uvicorn.Config:
    """How Hearth runs uvicorn: h11 and asyncio (what the bundle carries), the app's lifespan,
    no access log, logging left to Hearth's own set-up (the log file)."""
    return uvicorn.Config(
        app, http="h11", loop="asyncio", ws="none", lifespan="on", interface="asgi3",
        log_config=None, log_level="warning", access_log=False, timeout_graceful_shutdown=GRACE_S,
    )


def run(app, sock: socket.socket, on_stop: Callable[[], None]) -> None:
    """Serve `app` on `sock` until SIGINT or SIGTERM (call from the main thread)."""
    _Server(config(app), on_stop).run(sockets=[sock])
