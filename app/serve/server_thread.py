"""uvicorn on a thread of its own, started and stopped by a program that keeps running (the GUI).

`hearth serve` runs uvicorn on its main thread until a signal (app.serve.server.run). The GUI
cannot: its main thread is Qt's. `ServerThread` binds the socket, builds the app and runs
uvicorn on a daemon thread, and says what happened through two callbacks, called on that
thread: `on_started(url)` once uvicorn serves, and `on_ended(error)` when the thread ends
(None after a clean stop, else why it could not start or why it failed). `stop()` only asks,
so a GUI thread never waits on it; `join` waits, bounded, for quitting.

Binding, resolving the host and importing uvicorn and Starlette all happen on the thread: a
host name may take a DNS lookup, and the imports take a tenth of a second the window need not
pay. Qt-free.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .addresses import bind, url

log = logging.getLogger(__name__)

AppFactory = Callable[[Callable[[], None]], object]  # on_startup -> an ASGI app


class ServerThread:
    """One run of a server: `start` once, `stop` any number of times."""

    def __init__(self, host: str, port: int, make_app: AppFactory,
                 on_started: Callable[[str], None], on_ended: Callable[[str | None], None]):
        self._host, self._port = host, port
        self._make_app = make_app
        self._on_started, self._on_ended = on_started, on_ended
        self._stop_asked = threading.Event()
        self._server = None  # uvicorn.Server, once made
        self._thread = threading.Thread(target=self._run, name="local-server", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask uvicorn to stop (it checks ten times a second); returns at once."""
        self._stop_asked.set()
        server = self._server
        if server is not None:
            server.should_exit = True

    def join(self, timeout_s: float) -> bool:
        """Wait, at most timeout_s, for the thread to end; whether it did."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            error = self._serve()
        except SystemExit:  # uvicorn exits so when the app's start-up fails
            log.exception("the local server could not start")
            error = "The server could not start (see the log)."
        except Exception as exc:  # a failure nobody listed: said, not a thread's traceback alone
            log.exception("the local server failed")
            error = f"The server failed: {exc}"
        self._on_ended(error)

    def _serve(self) -> str | None:
        import uvicorn

        from . import server

        try:
            sock = bind(self._host, self._port)
        except OSError as exc:
            return f"Could not serve at {self._host}:{self._port}: {exc.strerror or exc}."
        address = url(sock)
        try:
            self._server = uvicorn.Server(server.config(self._make_app(lambda: self._on_started(address))))
            if self._stop_asked.is_set():  # stopped while it was binding
                return None
            self._server.run(sockets=[sock])  # off the main thread, uvicorn leaves signals alone
        finally:
            sock.close()
        return None
