"""ToolServers: every configured MCP server, supervised on one thread of its own.

The window calls these methods from the GUI thread, and none of them waits on a server: a
server's start, its tool list and its calls all happen on the tool servers' thread, which runs
one anyio event loop, and come back as statuses (`on_status`, called on that thread, and on the
caller's within configure(); the Qt owner re-emits it as a queued signal) and as concurrent
futures. Handing work to the loop only queues it (loop_thread.py), so a busy loop never holds
up the caller either. The thread, and the `mcp` SDK with it,
is started the first time a server is needed, not when the object is made, so building it costs
the window nothing; servers start on first use (a call, start(), wait_ready()).

Each server is a ServerRunner (runner.py) owned by the loop; this class keeps what the other
threads read (the configs and the latest statuses) behind one lock, and turns every failure into
a status with a reason or an error ToolOutcome, so one broken server is only its own row.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import anyio

from ..common.text import printable
from .limits import RESTART_BACKOFF_S, RESULT_CAP_BYTES, START_TIMEOUT_S
from .loop_thread import LoopThread
from .results import error_outcome
from .types import ServerConfig, ServerState, ServerStatus, ToolOutcome

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 3.0  # for the servers to stop at close; their children are ended either way
STOPPED = "Hearth stopped its tool servers before the call finished."


class ToolServers:
    def __init__(self, configs: Sequence[ServerConfig] = (), log_dir: Path | None = None,
                 on_status: Callable[[ServerStatus], None] | None = None, *,
                 start_timeout_s: float = START_TIMEOUT_S, restart_backoff_s: Sequence[float] = RESTART_BACKOFF_S):
        """`log_dir`: where each stdio server's stderr is kept (NAME.log); None keeps it in a
        temporary file, read only for failure reasons. The keyword arguments are for tests.
        `result_cap_bytes` (Settings → Tools may change it at any time) caps each result."""
        self.result_cap_bytes = RESULT_CAP_BYTES
        self._log_dir = log_dir
        self._on_status = on_status
        self._start_timeout_s = start_timeout_s
        self._backoff_s = tuple(restart_backoff_s)
        self._lock = threading.Lock()
        self._configs: dict[str, ServerConfig] = {}
        self._statuses: dict[str, ServerStatus] = {}
        self._closed = False
        self._loop = LoopThread("hearth-tool-servers")
        self._runner_class: Any = None  # runner.ServerRunner, once the SDK is imported
        self._runners: dict[str, Any] = {}  # name -> ServerRunner; touched on the loop thread only
        self.configure(configs)

    # --- what the other threads call; none of it waits on the loop -----------------------------

    def configure(self, configs: Sequence[ServerConfig]) -> None:
        """Replace the set of servers: an unchanged one keeps running; one removed, changed or
        switched off is stopped. ValueError if two share a name."""
        names = [config.name for config in configs]
        if len(set(names)) != len(names):
            raise ValueError("two tool servers share a name: " + ", ".join(
                sorted({printable(name) for name in names if names.count(name) > 1})))
        changed: list[ServerStatus] = []
        with self._lock:
            old, statuses = self._configs, {}
            for config in configs:
                if old.get(config.name) == config and config.name in self._statuses:
                    statuses[config.name] = self._statuses[config.name]
                else:
                    statuses[config.name] = ServerStatus(
                        config.name, ServerState.IDLE if config.enabled else ServerState.OFF)
                    changed.append(statuses[config.name])
            self._configs, self._statuses = {config.name: config for config in configs}, statuses
        self._loop.submit(self._reconcile, start=False)
        for status in changed:
            self._emit(status)

    def statuses(self) -> list[ServerStatus]:
        with self._lock:
            return [self._statuses[name] for name in self._configs]

    def status(self, name: str) -> ServerStatus:
        """KeyError for a name not configured."""
        with self._lock:
            return self._statuses[name]

    def start(self, name: str) -> None:
        """Start the server unless it runs (or waits to restart)."""
        with self._lock:
            config = self._configs.get(name)
        if config is not None and config.enabled:
            self._loop.submit(self._start, name)

    def start_all_enabled(self) -> None:
        for status in self.statuses():
            self.start(status.name)

    def wait_ready(self, names: Iterable[str], timeout_s: float) -> list[ServerStatus]:
        """Start these servers and wait (blocking: the command line's, never the window's) until
        each is ready or has failed, or `timeout_s` has passed; their statuses then."""
        with self._lock:
            names = [name for name in names if name in self._configs]
        if not self._loop.on_loop():
            try:
                self._loop.submit_for_result(self._wait_ready, names, timeout_s, stopped=None).result(timeout_s + 5)
            except Exception as exc:  # closed meanwhile, or cancelled: the statuses say what there is
                log.debug("wait_ready: %r", exc)
        with self._lock:
            return [self._statuses[name] for name in names if name in self._statuses]

    def call(self, server: str, tool: str, arguments: dict, timeout_s: float | None = None) -> Future[ToolOutcome]:
        """Call a tool; the future resolves to its ToolOutcome, never to an exception: a server
        that fails, a tool it does not offer, a timeout (the server's call_timeout_s unless
        given) or a crash mid-call is an outcome with `error` and a message saying which.
        Cancelling the future (Stop) cancels the call on its server. The future's callbacks run
        on the servers' thread."""
        if not isinstance(arguments, dict):
            return _done(error_outcome("The call's arguments are not a JSON object."))
        return self._loop.submit_for_result(self._call, server, tool, arguments, timeout_s,
                                            stopped=error_outcome(STOPPED))

    def close(self) -> None:
        """Stop every server (their children end) and the thread, in a few seconds at most.
        Calls still running end with an error outcome (or stay cancelled). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._loop.started and not self._loop.on_loop():
            try:
                self._loop.submit_for_result(self._shutdown, stopped=None).result(CLOSE_WAIT_S + 1)
            except Exception as exc:  # the loop ended already, or took too long: the thread is stopped anyway
                log.debug("closing the tool servers: %r", exc)
        self._loop.stop(CLOSE_WAIT_S)

    # --- the loop thread ---------------------------------------------------------------------

    async def _runner(self, name: str) -> Any:
        """The runner for a configured, enabled server (made on first need), else None."""
        if self._runner_class is None:
            # The SDK takes most of a second to import: on a worker thread, so the loop goes on.
            self._runner_class = await anyio.to_thread.run_sync(_import_runner)
        with self._lock:
            config = self._configs.get(name)
            closed = self._closed
        runner = self._runners.get(name)
        if runner is not None and runner.config != config:
            runner.stop()
            del self._runners[name]
            runner = None
        if runner is None and config is not None and config.enabled and not closed:
            runner = self._runners[name] = self._runner_class(config, self._report, self._log_dir,
                                                              self._start_timeout_s, self._backoff_s)
        return runner

    async def _reconcile(self) -> None:
        for name in list(self._runners):
            await self._runner(name)

    async def _loaded_runner(self, name: str) -> Any:
        """_runner, or None with the server marked failed where the SDK itself does not load (a
        damaged install or bundle): said as that, not as a server that never started."""
        try:
            return await self._runner(name)
        except Exception as exc:
            log.exception("the MCP SDK could not be loaded")
            status = ServerStatus(name, ServerState.FAILED,
                                  reason=f"the MCP client library could not be loaded ({type(exc).__name__}: {exc})")
            with self._lock:
                if name not in self._configs:
                    return None
                self._statuses[name] = status
            self._emit(status)
            return None

    async def _start(self, name: str) -> None:
        runner = await self._loaded_runner(name)
        if runner is not None and runner.status.state is not ServerState.READY:
            runner.start(self._loop.tasks)

    async def _wait_ready(self, names: list[str], timeout_s: float) -> None:
        async def settle(runner: Any) -> None:
            try:
                await runner.ready_client(self._loop.tasks)
            except Exception:  # Unavailable: its status says why
                pass

        with anyio.move_on_after(timeout_s):
            async with anyio.create_task_group() as waiting:
                for name in names:
                    runner = await self._loaded_runner(name)
                    if runner is not None:
                        waiting.start_soon(settle, runner)

    async def _call(self, server: str, tool: str, arguments: dict, timeout_s: float | None) -> ToolOutcome:
        try:
            runner = await self._runner(server)
            if runner is None:
                with self._lock:
                    config = self._configs.get(server)
                if config is None:
                    return error_outcome(f"No tool server is named {printable(server)}.")
                return error_outcome(f"The tool server {printable(server)} is switched off.")
            timeout = timeout_s if timeout_s is not None and timeout_s > 0 else runner.config.call_timeout_s
            return await runner.call(self._loop.tasks, tool, arguments, timeout, self.result_cap_bytes)
        except Exception as exc:  # Hearth's own fault: still an outcome, never a failed future
            log.exception("tool call %s/%s", printable(server), printable(tool))
            return error_outcome(f"The call could not be made: {type(exc).__name__}: {exc}")

    async def _shutdown(self) -> None:
        runners = list(self._runners.values())
        self._runners.clear()
        for runner in runners:
            runner.stop()
        with anyio.move_on_after(CLOSE_WAIT_S):
            for runner in runners:
                await runner.done.wait()

    def _report(self, runner: Any, status: ServerStatus) -> None:
        """A runner's new status (on the loop thread): kept, and passed on, unless the runner has
        been replaced or removed meanwhile."""
        with self._lock:
            if self._runners.get(status.name) is not runner or self._configs.get(status.name) != runner.config:
                return
            self._statuses[status.name] = status
        self._emit(status)

    def _emit(self, status: ServerStatus) -> None:
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception:  # the listener's fault must not stop the servers
                log.exception("on_status")


def _import_runner() -> Any:
    from .runner import ServerRunner  # the MCP SDK, and pydantic's models with it

    return ServerRunner


def _done(outcome: ToolOutcome) -> Future[ToolOutcome]:
    future: Future[ToolOutcome] = Future()
    future.set_result(outcome)
    return future
