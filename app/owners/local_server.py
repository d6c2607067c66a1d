"""`LocalServer`: the GUI's "Serve the loaded model", an OpenAI-compatible server over the window's engine.

An owner object, like DownloadManager: it outlives any window and lives as long as Hearth. It
runs the same Starlette app as `hearth serve` (app.serve.app) on uvicorn on a thread of its own
(app.serve.server_thread), over `BridgeCompletions`: the jobs of other programs go through the GUI's
bridge to the one engine thread, in line with the window's own replies, so one loaded model
serves both and their tokens never interleave.

The served model is the one loaded in the window, followed as it changes: requests name it by
its record name (its file name, as `hearth serve` names it); with none loaded, each request is
answered 503 saying so. A host other than this machine's loopback needs an API key.

Nothing here blocks the GUI thread: `start` and `stop` ask, and signals answer:
    started(str): serving; the base URL clients use (http://127.0.0.1:8080/v1).
    stopped(str): it stopped after serving: "" when asked to, else why.
    failed(str): it could not start (a host that needs a key, a port in use…), in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from PySide6.QtCore import QObject, Signal

from ..engine.types import api_key_problem
from ..serve.addresses import is_loopback
from ..serve.origins import check_origins
from ..serve.server_thread import ServerThread
from .bridge import EngineBridge
from .bridge_completions import BridgeCompletions
from .model_session import ModelSession

QUIT_WAIT_S = 7  # uvicorn's grace for open connections (5 s), and a little more
KEY_NEEDED = ("An API key is required to serve at {host}: other computers on the network can reach "
              "that address, and the key keeps them from using the model without it.")


class _State(Enum):
    OFF = "off"
    STARTING = "starting"
    SERVING = "serving"
    STOPPING = "stopping"


class _Relay(QObject):
    """The server thread's callbacks as signals handled on the GUI thread (queued)."""

    started = Signal(object, str)  # the ServerThread, its URL
    ended = Signal(object, object)  # the ServerThread, its error or None


class LocalServer(QObject):
    """Serves the window's loaded model to other programs while asked to. See the module."""

    started = Signal(str)
    stopped = Signal(str)
    failed = Signal(str)

    def __init__(self, bridge: EngineBridge, models: ModelSession, parent: QObject | None = None):
        super().__init__(parent)
        self._bridge = bridge
        self._models = models
        self._state = _State.OFF
        self._url: str | None = None
        self._on_network = False
        self._cors_origins: tuple[str, ...] = ()
        self._thread: ServerThread | None = None
        self._completions: BridgeCompletions | None = None
        self._relay = _Relay(self)
        self._relay.started.connect(self._on_started)
        self._relay.ended.connect(self._on_ended)
        models.modelLoaded.connect(self._follow)
        models.modelUnloaded.connect(lambda: self._follow(None))

    @property
    def url(self) -> str | None:
        """The base URL clients use, while serving."""
        return self._url

    @property
    def on_network(self) -> bool:
        """Other computers can reach it: it serves (or starts to) at a host beyond loopback."""
        return self.active and self._on_network

    @property
    def cors_origins(self) -> tuple[str, ...]:
        """The origins whose web pages may call it (checked; `*`: every site's), while active."""
        return self._cors_origins if self.active else ()

    @property
    def active(self) -> bool:
        """Starting, serving or stopping: a new start waits until it is off."""
        return self._state is not _State.OFF

    @property
    def serving(self) -> bool:
        return self._state is _State.SERVING

    def start(self, host: str, port: int, api_key: str | None = None, cors_origins: Sequence[str] = ()) -> bool:
        """Serve at host:port (port 0: any free one); `started` or `failed` answers. False (and
        nothing happens) while a server is already active. `cors_origins`: web pages a browser
        lets call it, as `hearth serve --cors-origin` (none by default: no page of any site)."""
        if self.active:
            return False
        api_key = api_key or None
        on_network = not is_loopback(host)
        if api_key is None and on_network:
            self.failed.emit(KEY_NEEDED.format(host=host))
            return True
        if api_key is not None and (problem := api_key_problem(api_key)):
            self.failed.emit(problem)
            return True
        try:
            cors_origins = check_origins(cors_origins)
        except ValueError as exc:
            self.failed.emit(f"CORS: {exc}")
            return True
        completions = BridgeCompletions(self._bridge)
        completions.follow(self._models.current)

        def make_app(on_startup):
            from ..serve.app import create_app  # Starlette: on the server's thread

            return create_app(completions, api_key=api_key, on_startup=on_startup, cors_origins=cors_origins)

        relay = self._relay
        thread = ServerThread(host, port, make_app,
                              on_started=lambda url: relay.started.emit(thread, url),
                              on_ended=lambda error: relay.ended.emit(thread, error))
        self._state, self._thread, self._completions = _State.STARTING, thread, completions
        self._on_network, self._cors_origins = on_network, tuple(cors_origins)
        thread.start()
        return True

    def stop(self) -> None:
        """Stop serving: requests in line are answered 503, the reply being written stops at
        its next token, and the port is closed; `stopped("")` follows."""
        if self._state in (_State.OFF, _State.STOPPING):
            return
        self._state = _State.STOPPING
        self._completions.stop()
        self._thread.stop()

    def shutdown(self, timeout_s: float = QUIT_WAIT_S) -> None:
        """Before Hearth quits: stop, and wait (bounded) for the server's thread to end, so no
        client is left with a connection that nobody answers."""
        thread = self._thread
        self.stop()
        if thread is not None:
            thread.join(timeout_s)

    def _follow(self, loaded) -> None:
        if self._completions is not None:
            self._completions.follow(loaded)

    def _on_started(self, thread: ServerThread, url: str) -> None:
        if thread is not self._thread or self._state is not _State.STARTING:
            return  # stopped before it came up: `stopped` or `failed` follows from _on_ended
        self._state, self._url = _State.SERVING, url
        self.started.emit(url)

    def _on_ended(self, thread: ServerThread, error: str | None) -> None:
        if thread is not self._thread:
            return
        was = self._state
        self._completions.stop()  # a server that failed leaves nobody waiting in the engine's line
        self._state, self._url, self._thread, self._completions = _State.OFF, None, None, None
        if was is _State.STARTING:  # it never served
            self.failed.emit(error or "The server stopped before it could serve.")
        elif was is _State.SERVING or error is not None:
            self.stopped.emit(error or "The server stopped.")
        else:
            self.stopped.emit("")
