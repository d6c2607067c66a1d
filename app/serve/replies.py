"""A job's events on the event loop, and a client that goes away while it waits.

The worker thread delivers events with `call_soon_threadsafe` into an asyncio queue, so the
loop never blocks on the engine. A reply from a model in a process of its own is read by the
loop itself once it has begun (`follow`): each token is read from the engine's socket and put in
the queue the stream is written from, with no thread woken to hand it over.

Until the reply's first event the client is watched for a disconnect (it may wait in the queue,
or through a long prompt), and a client that leaves cancels its job: a waiting one leaves the
queue, a running one stops at its next token. Once a stream has started, Starlette's
StreamingResponse watches instead, and closing the stream cancels the job the same way
(`Reply.rest`'s finally). A reply whose first event says it never began is answered with a
status instead (check_begun), whichever endpoint asked.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Awaitable

from starlette.types import Receive

from ..engine.backend import PolledReply, ReplyEvent
from ..engine.logprobs import TokenLogprob
from ..engine.tools.types import ToolCall
from ..engine.types import ReplyStats, StopReason
from . import errors
from .completions import ChoiceEnd, Collected, Completions, Event, Job, Refusal, Refused
from .errors import ApiError
from .shapes import failure, finish_reason

LOOP_CHECK_S = 1.0  # how often a worker waiting on the loop for a reply's end makes sure the loop is still there


class ClientGone(Exception):
    """The client disconnected before its reply started; nobody is left to answer."""


class Reply:
    """One submitted job, read on the event loop. Raises QueueFull from the constructor."""

    def __init__(self, completions: Completions, job: Job):
        self._loop = asyncio.get_running_loop()
        self._events: asyncio.Queue[Event] = asyncio.Queue()
        self._submission = completions.submit(job, self._deliver, self._follow)

    def _deliver(self, event: Event) -> None:  # on the worker thread
        try:
            self._loop.call_soon_threadsafe(self._events.put_nowait, event)
        except RuntimeError:
            pass  # the loop has closed: the server stopped, and nobody reads this reply

    def _follow(self, reply: PolledReply) -> ReplyEvent | None:  # on the worker thread
        """Read `reply` on the loop from now on, its events into the queue the stream is written
        from, and return its last (the ReplyStats) to the worker, which waits meanwhile. None
        where the loop cannot read it to its end: it has closed (the server stopped), it cannot
        watch the reply, or what comes next must be waited for (the engine's process is gone):
        the worker reads on."""
        ended: concurrent.futures.Future = concurrent.futures.Future()

        def hand_back(last: ReplyEvent | None | Exception) -> None:
            """The reply is the worker's again: the loop reads it no more before the worker resumes."""
            self._loop.remove_reader(fd)
            if isinstance(last, Exception):
                ended.set_exception(last)
            else:
                ended.set_result(last)

        def read() -> None:  # on the loop, whenever the engine's socket has more
            try:
                events = reply.ready()
            except Exception as exc:  # the PolledReply contract says never; the worker ends the reply
                hand_back(exc)
                return
            for event in events:
                if isinstance(event, ReplyStats):
                    hand_back(event)
                    return
                self._events.put_nowait(event)
            if reply.waits:
                hand_back(None)

        def start() -> None:
            try:
                self._loop.add_reader(fd, read)
            except Exception:  # a loop that cannot watch it (Windows' proactor), or a socket gone
                ended.set_result(None)
                return
            read()  # what came before the reader was set (it may all be in the reply's buffer already)

        try:
            fd = reply.fileno()
            self._loop.call_soon_threadsafe(start)
        except (OSError, RuntimeError):  # its process's socket is gone; the loop has closed
            return None
        while True:
            try:
                return ended.result(timeout=LOOP_CHECK_S)
            except concurrent.futures.TimeoutError:
                if self._loop.is_closed():  # it will not read on: the rest is the worker's
                    return ended.result() if ended.done() else None

    def cancel(self) -> None:
        self._submission.cancel()

    async def first(self, receive: Receive) -> Event:
        """The first event (a piece, the end, or a Refused), cancelling the job if the client
        goes away first (ClientGone)."""
        return await until_disconnect(self._events.get(), receive, self.cancel)

    async def rest(self, first: Event) -> AsyncIterator[Event]:
        """`first` and the events after it, up to the ReplyStats. If the reader stops early
        (the client left and Starlette cancelled the stream), the job is cancelled."""
        event = first
        try:
            while True:
                yield event
                if isinstance(event, (ReplyStats, Refused)):
                    return
                event = await self._events.get()
        finally:
            if not isinstance(event, (ReplyStats, Refused)):
                self.cancel()

    async def collect(self, first: Event, receive: Receive) -> list[Collected]:
        """The whole reply, a Collected per choice (its text, its complete tool calls, its
        tokens' log-probabilities, its ReplyStats), for a reply that is not streamed. The last
        one's stats say how the job ended."""

        async def read() -> list[Collected]:
            choices, pieces, calls, tokens = [], [], [], []
            async for event in self.rest(first):
                if isinstance(event, str):
                    pieces.append(event)
                elif isinstance(event, ToolCall):
                    calls.append(event)
                elif isinstance(event, TokenLogprob):
                    tokens.append(event)
                elif isinstance(event, (ChoiceEnd, ReplyStats)):
                    stats = event.stats if isinstance(event, ChoiceEnd) else event
                    choices.append(Collected("".join(pieces), calls, stats, tuple(tokens)))
                    if isinstance(event, ReplyStats):
                        return choices
                    pieces, calls, tokens = [], [], []
            raise AssertionError("a reply ends with its ReplyStats")

        return await until_disconnect(read(), receive, self.cancel)


def check_begun(first: Event, param: str) -> None:
    """Raise the status of a reply whose first event says it never began: a job the engine
    refused (refusal_error), or a reply that ended before any text (stopped serving, an
    upstream server that failed): a status says so, rather than a 200 stream holding only an
    error."""
    if isinstance(first, Refused):
        raise refusal_error(first, param)
    if isinstance(first, ReplyStats) and finish_reason(first) is None:
        stopped = first.stop_reason is StopReason.CANCELLED
        raise (errors.unavailable if stopped else errors.server_error)(failure(first))


def refusal_error(refused: Refused, param: str) -> ApiError:
    """The status of a job the engine would not start; `param` names what the client sent,
    unless the refusal names the field itself (a tool's schema the grammar cannot hold)."""
    if refused.reason is Refusal.BAD_REQUEST:
        return errors.bad_request(refused.message, param=refused.param or param, code="invalid_prompt")
    if refused.reason is Refusal.CONTEXT:
        return errors.bad_request(refused.message, param=param, code="context_length_exceeded")
    if refused.reason is Refusal.IMAGE:
        return errors.bad_request(refused.message, param=param, code="invalid_image")
    if refused.reason is Refusal.UNSUPPORTED:
        return errors.bad_request(refused.message, param=refused.param or param, code="unsupported_parameter")
    if refused.reason is Refusal.UNAVAILABLE:
        return errors.unavailable(refused.message)
    return errors.server_error(refused.message)


async def until_disconnect(work: Awaitable, receive: Receive, on_disconnect) -> object:
    """`work`'s result, unless the client disconnects first: then `on_disconnect()` and ClientGone.

    The request's body has been read, so the next ASGI message is the disconnect."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(receive))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done() and not watcher.done():  # we were cancelled ourselves (shutdown)
            task.cancel()
    if task in done:
        return task.result()
    task.cancel()
    on_disconnect()
    raise ClientGone()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
