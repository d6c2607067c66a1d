"""One thread running one anyio event loop (asyncio), and work handed to it from other threads
without ever waiting for it.

anyio's BlockingPortal would do most of this, but its start_task_soon waits until the loop has
taken the task: while the loop is busy (importing the MCP SDK, or turning a 12 MB answer into a
result) the window's thread would wait with it. Here a hand-over is asyncio's
call_soon_threadsafe, which only queues, so a caller never waits on the loop; work handed over
before the loop is up is kept and started with it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

import anyio

log = logging.getLogger(__name__)

_NOTHING = object()


class LoopThread:
    def __init__(self, name: str):
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: Any = None  # the loop's task group, where every handed-over task runs
        self._stop: anyio.Event | None = None
        self._inbox: asyncio.Queue | None = None  # (function, args) handed over, for _dispatch to start
        self._pending: list[tuple[Callable[..., Awaitable[Any]], tuple]] = []
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def tasks(self) -> Any:
        """The loop's task group (on the loop thread only)."""
        return self._tasks

    def on_loop(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, function: Callable[..., Awaitable[Any]], *args: Any, start: bool = True) -> bool:
        """Run `await function(*args)` as a task on the loop, soon; the thread is started first
        if it is not running (unless `start` is false: then, with no loop yet, nothing is done).
        False if the loop has been stopped."""
        with self._lock:
            if self._closed:
                return False
            if self._loop is None:
                if not start and self._thread is None:
                    return True
                self._pending.append((function, args))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                return True
            loop = self._loop
        try:
            loop.call_soon_threadsafe(self._inbox.put_nowait, (function, args))
        except RuntimeError:  # the loop closed meanwhile
            return False
        return True

    def submit_for_result(self, function: Callable[..., Awaitable[Any]], *args: Any,
                          stopped: Any = _NOTHING) -> Future:
        """As submit, with a future for what `function` returns (or raises). Cancelling the future
        cancels the task. A task cut off by stop() resolves to `stopped` where one is given,
        else is cancelled."""
        future: Future = Future()
        if not self.submit(self._resolve, future, function, args, stopped):
            _settle(future, stopped) if stopped is not _NOTHING else future.cancel()
        return future

    def stop(self, join_s: float) -> None:
        """End the loop (its tasks are cancelled) and wait for the thread up to `join_s`."""
        with self._lock:
            self._closed = True
            loop, thread, stop = self._loop, self._thread, self._stop
        if loop is not None and stop is not None:
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:
                pass
        if thread is not None and thread is not threading.current_thread():
            thread.join(join_s)

    def _run(self) -> None:
        try:
            anyio.run(self._main, backend="asyncio")
        except BaseException:  # the thread's end: nothing above it to tell
            log.exception("the %s thread ended with an error", self._name)

    async def _main(self) -> None:
        self._stop = anyio.Event()
        self._inbox = asyncio.Queue()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            with self._lock:
                self._loop = asyncio.get_running_loop()
                pending, self._pending = self._pending, []
                closed = self._closed
            if not closed:
                for function, args in pending:
                    tasks.start_soon(function, *args)
                tasks.start_soon(self._dispatch)
                await self._stop.wait()
            tasks.cancel_scope.cancel()

    async def _dispatch(self) -> None:
        """Start what other threads hand over (a callback from call_soon_threadsafe runs outside
        any task, where anyio cannot start one)."""
        while True:
            function, args = await self._inbox.get()
            self._tasks.start_soon(function, *args)

    async def _resolve(self, future: Future, function: Callable[..., Awaitable[Any]], args: tuple,
                       stopped: Any) -> None:
        if future.cancelled():
            return
        loop = asyncio.get_running_loop()
        try:
            with anyio.CancelScope() as scope:
                def cancelled_by_caller(done: Future) -> None:
                    if done.cancelled():
                        try:
                            loop.call_soon_threadsafe(scope.cancel)
                        except RuntimeError:
                            pass

                future.add_done_callback(cancelled_by_caller)
                try:
                    result = await function(*args)
                except Exception as exc:
                    _settle(future, exception=exc)
                else:
                    _settle(future, result)
        finally:
            if not future.done():  # cut off by stop()
                _settle(future, stopped) if stopped is not _NOTHING else future.cancel()


def _settle(future: Future, result: Any = None, exception: BaseException | None = None) -> None:
    """Resolve `future` unless its caller cancelled it meanwhile (from another thread)."""
    try:
        if exception is not None:
            future.set_exception(exception)
        else:
            future.set_result(result)
    except Exception:  # InvalidStateError: cancelled a moment ago
        pass
