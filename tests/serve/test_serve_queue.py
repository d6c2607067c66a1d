"""EngineQueue: one job at a time in arrival order, a bounded wait, cancelling, stopping.

The queue's bookkeeping is tested over the scripted backend (tests/support/scripted_backend.py: with
`hold`, each reply waits after its first piece until it is cancelled, so a test decides when
each job ends); how soon a cancelled reply stops is tested on the real engine and Gemma.
"""

from __future__ import annotations

import threading

import pytest

from app.engine.sampling import PRESETS, SamplingParams
from app.engine.types import LoadOptions, LocalModel, ReplyStats, StopReason
from app.serve.completions import Job, QueueFull, Refusal, Refused
from app.serve.queue import RAW_TEMPLATE, EngineQueue

WAIT_S = 10


class Events:
    """What one job delivered, from the worker thread, with a way to wait for more."""

    def __init__(self):
        self.items: list = []
        self._changed = threading.Condition()

    def __call__(self, event) -> None:
        with self._changed:
            self.items.append(event)
            self._changed.notify_all()

    def wait_for(self, predicate) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: predicate(self.items), WAIT_S), f"only {self.items}"

    def wait_started(self) -> None:
        self.wait_for(lambda items: items)

    def wait_ended(self) -> ReplyStats | Refused:
        self.wait_for(lambda items: items and isinstance(items[-1], (ReplyStats, Refused)))
        return self.items[-1]


def chat(text: str = "Hi") -> Job:
    return Job(SamplingParams(), messages=[{"role": "user", "content": text}])


@pytest.fixture
def held(script):
    """A queue over a scripted backend whose replies hold until cancelled; room for 2 to wait."""
    script.hold = True
    script.replies = ["one two"]
    queue = EngineQueue(script.open(LocalModel(script.info.path), LoadOptions()), max_waiting=2)
    yield queue
    queue.close()


def test_jobs_run_one_at_a_time_in_the_order_they_came(held, script):
    events = [Events() for _ in range(3)]
    tickets = [held.submit(chat(f"job {i}"), events[i]) for i in range(3)]
    events[0].wait_started()
    assert held.waiting == 2 and events[1].items == [] and events[2].items == []
    for index, ticket in enumerate(tickets):
        ticket.cancel()
        assert events[index].wait_ended().stop_reason is StopReason.CANCELLED
        if index + 1 < len(tickets):
            events[index + 1].wait_started()
            assert events[index + 1].items == ["one"]  # nothing of it before the last one ended
    assert [messages[0]["content"] for messages, _ in script.requests] == ["job 0", "job 1", "job 2"]


def test_a_full_queue_refuses_at_once_and_an_idle_one_takes_a_job_with_no_room_to_wait(script):
    script.hold = True
    queue = EngineQueue(script.open(LocalModel(script.info.path), LoadOptions()), max_waiting=0)
    try:
        running = Events()
        ticket = queue.submit(chat(), running)
        running.wait_started()
        with pytest.raises(QueueFull) as refused:
            queue.submit(chat(), Events())
        assert refused.value.waiting == 0
        ticket.cancel()
        running.wait_ended()
        after = Events()
        queue.submit(chat(), after).cancel()
        assert after.wait_ended().stop_reason is StopReason.CANCELLED
    finally:
        queue.close()


def test_a_waiting_job_that_is_cancelled_leaves_the_queue_and_never_runs(held, script):
    running, leaving = Events(), Events()
    first = held.submit(chat("first"), running)
    running.wait_started()
    held.submit(chat("leaving"), leaving).cancel()
    assert leaving.items == [ReplyStats(stop_reason=StopReason.CANCELLED)] and held.waiting == 0
    first.cancel()
    running.wait_ended()
    assert [messages[0]["content"] for messages, _ in script.requests] == ["first"]


def test_stopping_refuses_what_waits_cancels_what_runs_and_takes_nothing_more(held):
    running, waiting, late = Events(), Events(), Events()
    held.submit(chat(), running)
    running.wait_started()
    held.submit(chat(), waiting)
    held.stop()
    assert waiting.items == [Refused(Refusal.UNAVAILABLE, waiting.items[0].message)]
    assert running.wait_ended().stop_reason is StopReason.CANCELLED
    held.submit(chat(), late)
    assert isinstance(late.items[0], Refused) and late.items[0].reason is Refusal.UNAVAILABLE


def test_a_reply_that_cannot_start_is_refused_and_the_next_one_runs(script):
    script.fail_start = "The chat template failed: no."
    queue = EngineQueue(script.open(LocalModel(script.info.path), LoadOptions()))
    try:
        failed, next_one = Events(), Events()
        queue.submit(chat(), failed)
        queue.submit(chat(), next_one)
        assert failed.wait_ended() == Refused(Refusal.BAD_REQUEST, "The chat template failed: no.")
        assert next_one.wait_ended().stop_reason is StopReason.END_OF_TURN
    finally:
        queue.close()


def test_raw_prompts_switch_the_template_only_when_the_kind_of_job_changes(script):
    queue = EngineQueue(script.open(LocalModel(script.info.path), LoadOptions()))
    try:
        raw = Job(SamplingParams(), prompt="Once upon a time")
        for job in (chat(), raw, raw, chat(), chat()):
            events = Events()
            queue.submit(job, events)
            events.wait_ended()
        assert script.templates == [RAW_TEMPLATE, None]
        assert script.requests[1][0] == [{"role": "user", "content": "Once upon a time"}]
    finally:
        queue.close()


def test_a_cancelled_reply_on_the_real_engine_stops_within_one_token(gemma_path):
    from app.engine.opening import open_backend

    queue = EngineQueue(open_backend(LocalModel(gemma_path), LoadOptions(n_ctx=512)))
    try:
        events = Events()
        params = PRESETS["Precise"].with_changes(max_tokens=400)
        ticket = queue.submit(Job(params, prompt="1, 2, 3, 4, 5, 6, 7, 8,"), events)
        events.wait_for(lambda items: len(items) >= 5)
        ticket.cancel()
        pieces_then = len(events.items)
        stats = events.wait_ended()
        assert stats.stop_reason is StopReason.CANCELLED
        assert len(events.items) - 1 - pieces_then <= 1  # the token being sampled may still come
        assert stats.completion_tokens <= pieces_then + 1
    finally:
        queue.close()
