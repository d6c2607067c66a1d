"""A Backend's stream read the way every engine test reads it: the text pieces, and the
ReplyStats that ends them."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from app.engine.backend import closing_reply
from app.engine.types import ReplyStats


def collect(events: Iterable[str | ReplyStats], cancel: threading.Event | None = None,
            cancel_after: int | None = None) -> tuple[list[str], ReplyStats | None]:
    """(pieces, stats) of one reply, read as the window's worker and the server read it: up to
    its ReplyStats and no further, the stream closed then (Backend.stream: whatever must happen
    when a reply ends happens before its ReplyStats). With `cancel_after`, `cancel` is set once
    that many pieces have come, as a user pressing Stop mid-reply."""
    pieces: list[str] = []
    with closing_reply(events) as stream:
        for event in stream:
            if isinstance(event, ReplyStats):
                return pieces, event
            pieces.append(event)
            if len(pieces) == cancel_after:
                cancel.set()
    return pieces, None


def every_event(events: Iterable) -> list:
    """Every event of one reply (text, tool-call deltas and calls, logprobs), up to and with
    its ReplyStats, read and closed as `collect` reads it."""
    seen = []
    with closing_reply(events) as stream:
        for event in stream:
            seen.append(event)
            if isinstance(event, ReplyStats):
                return seen
    raise AssertionError("a reply ends with its ReplyStats")
