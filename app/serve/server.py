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
import ipaddress
import signal
import socket
from collections.abc import Callable, Iterator

import uvicorn

GRACE_S = 5  # what uvicorn waits for open connections once replies have been stopped


def is_loopback(host: str) -> bool:
    """Whether `host` can be reached only from this machine. A name other than localhost
    counts as the network's: what it resolves to is not ours to promise."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; OSError says why not (taken, not this machine's)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def url(sock: socket.socket) -> str:
    """The base URL clients use: http://host:port/v1 (IPv6 hosts in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"


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
