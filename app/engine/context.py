"""Fit a conversation into the context window by dropping its oldest turns.

The system prompt and the newest user message are never dropped: without the first the
model forgets who it is, without the second there is nothing to answer. Whole turns go, oldest
first, so the model never sees half an exchange.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class ContextFullError(Exception):
    """Even the system prompt and the newest message alone do not fit; message for the user."""


@dataclass(frozen=True)
class Fitted:
    messages: list[dict]
    prompt_tokens: list[int]
    dropped_messages: int


def fit_conversation(
    messages: list[dict],
    tokenize: Callable[[list[dict]], list[int]],
    budget: int,
) -> Fitted:
    """Return the longest recent suffix of the conversation whose prompt fits in `budget` tokens.

    `tokenize` renders and tokenizes a message list; each candidate is measured exactly, not
    estimated, because templates add per-turn tokens that a guess would miss.
    """
    system = [m for m in messages[:1] if m["role"] == "system"]
    turns = messages[len(system):]
    for start in _turn_starts(turns):
        candidate = system + turns[start:]
        tokens = tokenize(candidate)
        if len(tokens) <= budget:
            return Fitted(candidate, tokens, dropped_messages=start)
    raise ContextFullError(
        f"The message is too long for the context window: it needs {len(tokens):,} tokens and "
        f"only {budget:,} are left after reserving room for the reply. Shorten the message or "
        "the system prompt, lower the maximum reply length, or raise the context length."
    )


def _turn_starts(turns: list[dict]) -> list[int]:
    """Offsets where a user turn begins, oldest first, always ending with the newest message."""
    starts = [i for i, m in enumerate(turns) if m["role"] == "user"] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    last = len(turns) - 1
    return [s for s in starts if s <= last] or [0]
