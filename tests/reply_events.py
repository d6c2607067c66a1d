"""A Backend's stream read the way every engine test reads it: the text pieces, and the
ReplyStats that ends them."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from app.engine.types import ReplyStats


def collect(events: Iterable[str | ReplyStats], cancel: threading.Event | None = None,
            cancel_after: int | None = None) -> tuple[list[str], ReplyStats | None]:
    """(pieces, stats) of one reply; with `cancel_after`, `cancel` is set once that many pieces
    have come, as a user pressing Stop mid-reply."""
    pieces, stats = [], None
    for event in events:
        if isinstance(event, ReplyStats):
            stats = event
        else:
            pieces.append(event)
            if len(pieces) == cancel_after:
                cancel.set()
    return pieces, stats
