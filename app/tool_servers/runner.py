"""One server, kept on the tool servers' event loop: started when first needed, its SDK Client
entered and left in one task of its own (the SDK's task groups and cancel scopes must be), its
tool list read and kept fresh, its calls run against it, and a restart with back-off when it
dies while in use.

A server that fails to start is left failed with its reason and tried again only when it is next
used (a call, or start()): a command that is not there does not become a process spawned every
second. One that dies after it was ready is restarted after RESTART_BACKOFF_S's waits, longer each
time it dies again soon after.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError

from ..common.text import printable, shorten
from .connection import (
    StderrLog,
    Watch,
    is_connection_lost,
    is_modern,
    leaf,
    new_client,
    start_failure,
    stopped_reason,
)
from .limits import LIST_TIMEOUT_S, RESULT_CAP_BYTES
from .listing import MAX_PAGES, MAX_TOOLS, listed_tools
from .results import error_outcome, outcome_from_result
from .types import ServerConfig, ServerState, ServerStatus, ToolOutcome

log = logging.getLogger(__name__)

GARBAGE_GRACE_S = 2.0  # how long a server that wrote a line that is not JSON-RPC has left to start


class Unavailable(Exception):
    """The server cannot take a call now; the message says why."""


class ServerRunner:
    def __init__(self, config: ServerConfig, report: Callable[[ServerRunner, ServerStatus], None],
                 log_dir: Any, start_timeout_s: float, backoff_s: Sequence[float]):
        self.config = config
        self.status = ServerStatus(config.name, ServerState.IDLE)
        self._report = report
        self._stderr = StderrLog(log_dir, config.name)
        self._start_timeout_s = start_timeout_s
        self._backoff_s = tuple(backoff_s) or (1.0,)
        self._client: Any = None
        self._watch: Watch | None = None
        self._scope: anyio.CancelScope | None = None
        self._running = False  # its task is alive (starting, ready, or waiting to restart)
        self._settled = anyio.Event()  # set when a start ends, ready or failed
        self.done = anyio.Event()
        self.done.set()
        self.stopping = False

    # --- the server's life, in its own task -------------------------------------------------

    def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Start it unless it runs already (on the loop thread, returning at once)."""
        if self._running or self.stopping:
            return
        self._running = True
        self._settled = anyio.Event()
        self.done = anyio.Event()
        self._set(ServerState.STARTING)
        task_group.start_soon(self._run, name=f"tool server {self.config.name}")

    def stop(self) -> None:
        """Stop it for good (the runner is dropped after): its child ends, its calls fail."""
        self.stopping = True
        if self._scope is not None:
            self._scope.cancel()
        self._settled.set()

    async def _run(self) -> None:
        attempt = 0
        try:
            with anyio.CancelScope() as self._scope:
                if self.stopping:
                    return
                while True:
                    began = time.monotonic()
                    reason, was_ready = await self._connect_once()
                    if self.stopping:
                        return
                    if not was_ready:
                        self._set(ServerState.FAILED, reason=reason)
                        return
                    if time.monotonic() - began >= self._backoff_s[-1]:
                        attempt = 0  # it ran a good while: a new death starts the waits over
                    wait = self._backoff_s[min(attempt, len(self._backoff_s) - 1)]
                    attempt += 1
                    log.warning("tool server %s stopped (%s); restarting in %g s", printable(self.config.name),
                                reason, wait)
                    self._set(ServerState.FAILED, reason=f"{reason} (restarting in {wait:g} s)")
                    self._settled.set()
                    await anyio.sleep(wait)
                    self._settled = anyio.Event()
                    self._set(ServerState.STARTING)
        except Exception as exc:  # a fault of Hearth's own: the server fails, the loop goes on
            log.exception("tool server %s: unexpected error", printable(self.config.name))
            self._set(ServerState.FAILED, reason=f"Hearth could not run it: {type(exc).__name__}: {exc}")
        finally:
            self._running = False
            self._client = None
            self._stderr.close()
            self._settled.set()
            self.done.set()

    async def _connect_once(self) -> tuple[str, bool]:
        """Connect, list the tools, serve until the connection ends: why it ended, and whether
        it was ever ready."""
        watch = self._watch = Watch(self.config.name)
        client = new_client(self.config, self._stderr, watch)
        ready = entered = False
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self._start_timeout_s) as starting:
                def speaks_garbage() -> None:
                    # A line of chatter on stdout is survivable (the SDK skips it), so a server
                    # that wrote one has a little longer to answer, not the whole start timeout.
                    if not ready:
                        starting.deadline = min(starting.deadline, anyio.current_time() + GARBAGE_GRACE_S)

                watch.on_garbage = speaks_garbage
                async with client:
                    entered = True
                    tools, skipped = await self._list(client)
                    starting.deadline = math.inf
                    ready = True
                    self._client = client
                    self._set(ServerState.READY, tools=tools, skipped=skipped)
                    self._settled.set()
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(self._refresh_on_change, client, watch)
                        if is_modern(client):
                            tasks.start_soon(self._listen, client, watch)
                        await watch.ended.wait()
                        self.connection_ended()
                        tasks.cancel_scope.cancel()
            if not ready:
                timed_out = self._start_timeout_s if starting.cancelled_caught and watch.garbage is None else None
                if timed_out is not None and entered:
                    return f"it did not list its tools within {timed_out:g} s", False
                return start_failure(self.config, None, watch, self._stderr, timed_out), False
        except Exception as exc:
            if not ready:
                return start_failure(self.config, exc, watch, self._stderr), False
            log.info("tool server %s: %r", printable(self.config.name), leaf(exc))
        finally:
            self._client = None
        return stopped_reason(self.config, watch, self._stderr), True

    async def _list(self, client: Any) -> tuple[tuple, tuple[str, ...]]:
        tools: list = []
        cursor = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) >= MAX_TOOLS:
                break
        offered, skipped = listed_tools(self.config.name, tools[:MAX_TOOLS])
        if cursor:
            skipped += (f"(more tools): the server lists more than {len(tools)}; the rest were not read",)
        return offered, skipped

    async def _refresh_on_change(self, client: Any, watch: Watch) -> None:
        while True:
            await watch.wait_changed()
            try:
                with anyio.fail_after(LIST_TIMEOUT_S):
                    tools, skipped = await self._list(client)
            except Exception as exc:
                log.warning("tool server %s: its new tool list could not be read: %r",
                            printable(self.config.name), leaf(exc))
                continue
            self._set(ServerState.READY, tools=tools, skipped=skipped)

    async def _listen(self, client: Any, watch: Watch) -> None:
        """2026-era servers send list changes only to a `subscriptions/listen` stream; they reach
        the message handler as notifications too, and this keeps the stream open for them. The
        stream lost is also how an HTTP server that went away is noticed before the next call."""
        listening = False
        try:
            async with client.listen(tools_list_changed=True) as events:
                listening = True
                async for _ in events:
                    watch.changed()
        except SubscriptionLost:
            if listening:
                watch.ended.set()
        except Exception as exc:  # a server without subscriptions: its list is read once
            log.debug("tool server %s: no list-change stream: %r", printable(self.config.name), leaf(exc))

    def connection_ended(self) -> None:
        """The connection is gone (its stream ended, or a call found it closed): failed at once,
        so that nothing reads it as ready while the child is being ended and the restart waits."""
        self._client = None
        if self.status.state is ServerState.READY and not self.stopping and self._watch is not None:
            self._set(ServerState.FAILED, reason=stopped_reason(self.config, self._watch, self._stderr))

    def _set(self, state: ServerState, tools: tuple = (), skipped: tuple[str, ...] = (), reason: str = "") -> None:
        if skipped and not reason:
            reason = f"{len(skipped)} of its tools are not offered"
        self.status = ServerStatus(self.config.name, state, tools, reason, skipped)
        self._report(self, self.status)

    # --- calls, from tasks of their own ----------------------------------------------------

    async def ready_client(self, task_group: anyio.abc.TaskGroup) -> Any:
        """The connected client, starting the server if it is not running; Unavailable if it
        cannot be had."""
        waited = False
        while True:
            if self.stopping:
                raise Unavailable("it was stopped")
            if self.status.state is ServerState.READY and self._client is not None:
                return self._client
            if self.status.state is ServerState.FAILED and self._running:
                raise Unavailable(self.status.reason)  # waiting to restart
            if not self._running:
                if waited:  # started for this call, and failed
                    raise Unavailable(self.status.reason or "it did not start")
                self.start(task_group)
            elif self._settled.is_set():  # a moment between states: the status says which
                raise Unavailable(self.status.reason or "it is restarting")
            await self._settled.wait()
            waited = True

    async def call(self, task_group: anyio.abc.TaskGroup, tool: str, arguments: dict, timeout_s: float,
                   cap_bytes: int = RESULT_CAP_BYTES) -> ToolOutcome:
        began = time.monotonic()
        name = printable(self.config.name)

        def failed(text: str) -> ToolOutcome:
            return error_outcome(text, time.monotonic() - began)

        try:
            client = await self.ready_client(task_group)
        except Unavailable as exc:
            return failed(f"The tool server {name} is not available: {exc}.")
        if not any(listed.name == tool for listed in self.status.tools):
            shown = printable(tool, limit=60)
            why = next((line[len(shown) + 2:] for line in self.status.skipped if line.startswith(shown + ": ")), "")
            if why:
                return failed(f"Hearth does not offer the tool {shown} of {name}: {why}.")
            return failed(f"The tool server {name} offers no tool named {shown}.")
        try:
            with anyio.fail_after(timeout_s):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            return failed(f"The tool {printable(tool)} of {name} did not answer within {timeout_s:g} s; "
                          "the call was cancelled.")
        except Exception as exc:
            exc = leaf(exc)
            if self.stopping:
                return failed(f"The tool server {name} was stopped during the call.")
            if is_connection_lost(exc):
                if self._watch is not None:
                    self._watch.ended.set()  # HTTP notices only when a request fails
                self.connection_ended()
                tail = self._stderr.tail()
                return failed(f"The tool server {name} stopped during the call" + (f"; it said: {tail}" if tail else "."))
            if isinstance(exc, MCPError):
                return failed(f"The tool server {name} refused the call: {shorten(exc.message, 300)}")
            return failed(f"The call to {printable(tool)} failed: {type(exc).__name__}: {shorten(str(exc), 300)}")
        return outcome_from_result(result, time.monotonic() - began, cap_bytes)
