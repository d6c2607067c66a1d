"""A served reply from a model in a process of its own is read on the server's event loop (#31):
after its first event the worker thread hands the reply over (Reply._follow) and the loop reads
each token from the engine's socket itself, instead of the worker being woken per token only to
pass it on. The real Gemma in a real engine process, the real EngineQueue, a real asyncio loop.

What must hold: the same reply, piece for piece, as read the blocking way; a client that leaves
stops it; and a loop that closes while it streams (the server stopped) leaves the worker to read
it to its end, never waiting forever, so the next job runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

from app.engine.options import LoadOptions
from app.engine.process.backend import ProcessBackend
from app.engine.sampling import SamplingParams
from app.engine.types import ReplyStats, StopReason
from app.serve.completions import Job
from app.serve.queue import EngineQueue
from app.serve.replies import Reply

MESSAGES = [{"role": "user", "content": "Write a long story about a lighthouse keeper and the sea."}]
GREEDY = SamplingParams(temperature=0.0, max_tokens=32, seed=1)
WAIT_S = 60


@pytest.fixture(scope="module")
def queue(gemma_path):
    served = EngineQueue(ProcessBackend.open(gemma_path, LoadOptions(n_ctx=1024)))
    yield served
    served.close()


class CountedLoop:
    """A loop whose hand-overs from other threads are counted: the worker's deliveries and its
    hand-over of the reply come through call_soon_threadsafe, the loop's own reads do not."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.handed = 0
        schedule = self.loop.call_soon_threadsafe

        def counted(callback, *args, **kwargs):
            self.handed += 1
            return schedule(callback, *args, **kwargs)

        self.loop.call_soon_threadsafe = counted


async def read_all(queue: EngineQueue, job: Job, leave_after: int | None = None) -> list:
    reply = Reply(queue, job)
    events = []
    async for event in reply.rest(await reply._events.get()):
        events.append(event)
        if leave_after is not None and len(events) == leave_after:
            reply.cancel()  # the client left: what Starlette does when the stream is closed
    return events


def test_the_loop_reads_the_reply_and_it_is_the_blocking_readers_own(queue):
    counted = CountedLoop()
    try:
        events = counted.loop.run_until_complete(read_all(queue, Job(GREEDY, messages=MESSAGES)))
    finally:
        counted.loop.close()
    pieces, stats = [e for e in events if isinstance(e, str)], events[-1]
    assert isinstance(stats, ReplyStats) and stats.stop_reason is StopReason.LENGTH and stats.completion_tokens == 32
    # The worker handed over the first piece, the reply, and its end: three, however long the reply.
    assert counted.handed == 3 and len(pieces) >= 20, (counted.handed, len(pieces))

    # The same reply read the blocking way, by the thread that owns the backend.
    done = threading.Event()
    blocking = []

    def read_blocking(event):
        blocking.append(event)
        if isinstance(event, ReplyStats):
            done.set()

    queue.submit(Job(GREEDY, messages=MESSAGES), read_blocking)
    assert done.wait(WAIT_S)
    assert [e for e in blocking if isinstance(e, str)] == pieces


def test_a_client_that_leaves_stops_the_reply_the_loop_reads(queue):
    loop = asyncio.new_event_loop()
    try:
        events = loop.run_until_complete(read_all(queue, Job(GREEDY.with_changes(max_tokens=200), messages=MESSAGES),
                                                  leave_after=3))
    finally:
        loop.close()
    assert events[-1].stop_reason is StopReason.CANCELLED and events[-1].completion_tokens < 200


def test_a_loop_that_closes_mid_reply_leaves_the_worker_to_read_it_and_the_next_job_runs(queue):
    loop = asyncio.new_event_loop()
    begun = threading.Event()

    async def leave_running() -> None:
        reply = Reply(queue, Job(GREEDY.with_changes(max_tokens=120), messages=MESSAGES))
        await reply._events.get()
        await reply._events.get()  # a piece the loop read itself
        begun.set()

    try:
        loop.run_until_complete(leave_running())
    finally:
        loop.close()  # the server stopped with the reply still streaming, and nobody cancelled it
    assert begun.is_set()

    ended = threading.Event()
    queue.submit(Job(GREEDY.with_changes(max_tokens=4), messages=MESSAGES),
                 lambda event: isinstance(event, ReplyStats) and ended.set())
    assert ended.wait(WAIT_S), "the worker is still waiting on a loop that has closed"



@pytest.fixture
def doomed(gemma_path):
    """A queue whose engine's process the test kills."""
    backend = ProcessBackend.open(gemma_path, LoadOptions(n_ctx=1024))
    served = EngineQueue(backend)
    yield served, backend
    served.close()


@pytest.mark.parametrize("closed_at_once", [False, True], ids=["killed", "killed and closed"])
def test_a_process_that_dies_mid_reply_ends_it_and_the_loop_never_waits_for_it(doomed, closed_at_once, monkeypatch):
    """The loop finds the engine's process gone (its socket at end of file) and hands the reply
    back: how the process ended, which may wait for it to be reaped and for its last words, is
    found on the worker's thread, never the loop's. Its owner closing the channel at once (as
    RestartingBackend does when told of the death) leaves the loop's copy of the socket to say so."""
    queue, backend = doomed
    child = backend._child
    found_on = []
    gone = type(child)._gone

    def noted_gone(*why):
        found_on.append(threading.current_thread().name)
        return gone(child, *why)

    monkeypatch.setattr(child, "_gone", noted_gone)
    loop = asyncio.new_event_loop()

    async def kill_after_a_piece() -> list:
        reply = Reply(queue, Job(GREEDY.with_changes(max_tokens=400), messages=MESSAGES))
        events = [await reply._events.get(), await reply._events.get()]  # the second read by the loop
        os.kill(backend.pid, signal.SIGKILL)
        if closed_at_once:
            child._channel.close()
        while not isinstance(events[-1], ReplyStats):
            events.append(await asyncio.wait_for(reply._events.get(), WAIT_S))
        return events

    try:
        events = loop.run_until_complete(kill_after_a_piece())
    finally:
        loop.close()
    assert events[-1].stop_reason is StopReason.INTERRUPTED and "SIGKILL" in events[-1].error, events[-1]
    assert found_on and "serve-engine" in found_on, found_on
