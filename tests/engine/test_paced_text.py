"""`paced` (engine/backend.py): a reply's text at the pace its caller takes it (#31). A reply's
events here are made by hand, as a backend's generator yields them, so what the pacing does to
each kind of event can be seen; the real engine's process paces the same way
(tests/engine/test_process_backend.py), and the window asks for it (tests/test_bridge.py).

Intervals are chosen so that a slow machine cannot change the outcome: an hour, which no gap
between two events reaches, or a tenth of the sleep between two events, which every gap passes."""

from __future__ import annotations

import time

from app.engine.backend import paced
from app.engine.logprobs import TokenLogprob
from app.engine.tools.types import ToolCall, ToolCallDelta
from app.engine.types import ReplyStats, StopReason

HOUR = 3600.0
STATS = ReplyStats(completion_tokens=5, stop_reason=StopReason.END_OF_TURN)


class Reply:
    """A backend's reply: yields `events`, sleeping `gap_s` before each after the first, and
    notes whether it was closed and how far it got."""

    def __init__(self, events: list, gap_s: float = 0.0):
        self.events, self.gap_s = events, gap_s
        self.closed = False
        self.given = 0

    def __iter__(self):
        try:
            for index, event in enumerate(self.events):
                if index and self.gap_s:
                    time.sleep(self.gap_s)
                self.given += 1
                yield event
        finally:
            self.closed = True


def test_text_that_comes_sooner_than_the_interval_waits_joined_to_what_follows_it():
    events = list(paced(iter(Reply(["The", " sea", " was", " calm", ".", STATS])), HOUR))
    assert events == ["The", " sea was calm.", STATS]  # the first at once; the rest with the stats


def test_text_that_comes_after_the_interval_goes_as_it_comes():
    events = list(paced(iter(Reply(["The", " sea", " was", STATS], gap_s=0.02)), 0.002))
    assert events == ["The", " sea", " was", STATS]


def test_no_interval_gives_the_reply_itself():
    reply = iter(Reply(["a", "b", STATS]))
    assert paced(reply, 0.0) is reply


def test_what_is_not_text_goes_at_once_after_the_text_held_before_it():
    """Order is kept: a call's deltas and the call follow the text written before them, and a
    token's log-probability still comes just before its text, with no other text between."""
    delta = ToolCallDelta(0, "call_1", "get_time", "{}")
    call = ToolCall(0, "call_1", "get_time", "{}")
    first, second = TokenLogprob("A", -0.1, b"A"), TokenLogprob("B", -0.2, b"B")
    events = list(paced(iter(Reply(["I", " will", " check", ".", delta, call, STATS])), HOUR))
    assert events == ["I", " will check.", delta, call, STATS]
    events = list(paced(iter(Reply([first, "A", second, "B", STATS])), HOUR))
    assert events == [first, "A", second, "B", STATS]


def test_closing_the_paced_reply_closes_the_reply_it_paces_at_once():
    """As a Backend's consumer does at the ReplyStats, or when it leaves a reply early
    (closing_reply): the engine's generator must end on this thread, now (its `finally` frees
    what the reply held), not whenever it is collected. The test holds the reply's generator,
    so only a close can end it (collecting it would end it too)."""
    reply = Reply(["The", " sea", " was", " calm", STATS])
    generator = iter(reply)
    stream = paced(generator, HOUR)
    assert next(stream) == "The"
    stream.close()
    assert reply.closed and reply.given == 1
