"""A job's n choices over the scripted backend (tests/support/scripted_backend.py): each its
own seed, a ChoiceEnd between two, one place in line, and one cancel for them all. What the
choices say on the real Gemma is tested through the server (test_serve_logprobs.py)."""

from __future__ import annotations

import threading

import pytest
from support.scripted_backend import Script

from app.engine.sampling import SamplingParams
from app.engine.types import LoadOptions, LocalModel, ReplyStats, StopReason
from app.serve.completions import MAX_CHOICES, ChoiceEnd, Job, QueueFull
from app.serve.queue import EngineQueue

WAIT_S = 10


class Events:
    """What one job delivered, from the worker thread."""

    def __init__(self):
        self.items: list = []
        self._started, self._ended = threading.Event(), threading.Event()

    def __call__(self, event) -> None:
        self.items.append(event)
        self._started.set()
        if isinstance(event, ReplyStats):
            self._ended.set()

    def wait_started(self) -> None:
        assert self._started.wait(WAIT_S)

    def wait_ended(self) -> ReplyStats:
        assert self._ended.wait(WAIT_S), self.items
        return self.items[-1]


def chat(n: int, seed: int | None = None) -> Job:
    return Job(SamplingParams(seed=seed), messages=[{"role": "user", "content": "Hi"}], n=n)


@pytest.fixture
def queue(script: Script):
    queue = EngineQueue(script.open(LocalModel(script.info.path), LoadOptions()), max_waiting=0)
    yield queue
    queue.close()


def test_choices_run_in_turn_each_with_the_next_seed(queue, script):
    script.replies = ["one two", "three", "four five"]
    events = Events()
    queue.submit(chat(3, seed=2**32 - 2), events)
    assert events.wait_ended().stop_reason is StopReason.END_OF_TURN
    assert [type(e) for e in events.items] == [str, str, ChoiceEnd, str, ChoiceEnd, str, str, ReplyStats]
    assert "".join(e for e in events.items if isinstance(e, str)) == "one twothreefour five"
    assert [params.seed for _, params in script.requests] == [2**32 - 2, 2**32 - 1, 0]  # wrapping


def test_choices_without_a_seed_draw_their_own(queue, script):
    events = Events()
    queue.submit(chat(2), events)
    events.wait_ended()
    assert [params.seed for _, params in script.requests] == [None, None]  # each reply draws afresh


def test_a_job_of_many_choices_takes_one_place_in_line(queue, script):
    script.hold = True
    events = Events()
    ticket = queue.submit(chat(MAX_CHOICES), events)
    events.wait_started()
    with pytest.raises(QueueFull):  # max_waiting=0: the running job is all the queue takes
        queue.submit(chat(1), Events())
    ticket.cancel()
    assert events.wait_ended().stop_reason is StopReason.CANCELLED
    assert len(script.requests) == 1 and not any(isinstance(e, ChoiceEnd) for e in events.items)


@pytest.mark.parametrize("n", [0, MAX_CHOICES + 1])
def test_a_job_has_one_to_eight_choices(n):
    with pytest.raises(ValueError):
        chat(n)
