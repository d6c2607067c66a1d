"""toolbox.py's server over Streamable HTTP, on uvicorn on 127.0.0.1 at a free port, in a thread
of the test's process."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from .toolbox import build


class HttpToolbox:
    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        config = uvicorn.Config(build().streamable_http_app(), log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=0.5)  # a listen stream stays open: cut it
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    def start(self) -> HttpToolbox:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the HTTP toolbox did not start"
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()


@contextmanager
def http_toolbox() -> Iterator[HttpToolbox]:
    server = HttpToolbox().start()
    try:
        yield server
    finally:
        server.stop()
