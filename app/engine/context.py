"""Fit a conversation into the context window by dropping its oldest turns.

The system prompt and the newest user message are never dropped: without the first the
model forgets who it is, without the second there is nothing to answer. Whole turns go, oldest
first, so the model never sees half an exchange.

Two costs shape how much is dropped:
- Measuring. Each candidate is rendered and tokenized exactly (templates add per-turn tokens
  that an estimate would miss), so candidates are found by bisection, not one by one: a
  200-message conversation overflowing a 4k window took 7 s to fit turn by turn.
- Evaluating. Dropping a turn changes the start of the prompt, so the KV cache can reuse
  nothing and the whole prompt is evaluated again: seconds on a CPU, for every reply, if each
  turn dropped just enough. So when something must go, the prompt is cut down to
  REFILL_FRACTION of the budget, and later replies drop exactly the same turns while that
  still fits, so only their new tokens are evaluated. (llama.cpp's own context shift and
  GPT4All discard a large part of the window at once for the same reason.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

REFILL_FRACTION = 0.75


class ContextFullError(Exception):
    """Even the system prompt and the newest message alone do not fit; message for the user."""


@dataclass(frozen=True)
class Fitted:
    messages: list[dict]
    prompt_tokens: list[int]
    dropped: list[dict]  # the oldest turns left out; pass them as `dropped_before` next time

    @property
    def dropped_messages(self) -> int:
        return len(self.dropped)


def fit_conversation(
    messages: list[dict],
    tokenize: Callable[[list[dict]], list[int]],
    budget: int,
    dropped_before: list[dict] | None = None,
) -> Fitted:
    """Return a recent suffix of the conversation whose prompt fits in `budget` tokens.

    The same turns dropped as last time, if this conversation starts with them
    (`dropped_before`, from the previous fit with the same budget) and that still fits;
    else the whole conversation if it fits; else the longest suffix that fills at most
    REFILL_FRACTION of the budget, or failing that, the budget. Nothing dropped before then
    needs measuring again: the conversation only grew since. `tokenize` renders and
    tokenizes a message list.
    """
    system = [m for m in messages[:1] if m["role"] == "system"]
    turns = messages[len(system):]
    measured: dict[int, list[int]] = {}

    def tokens_from(start: int) -> list[int]:
        if start not in measured:
            measured[start] = tokenize(system + turns[start:])
        return measured[start]

    def fitted(start: int) -> Fitted:
        return Fitted(system + turns[start:], tokens_from(start), dropped=turns[:start])

    starts = _turn_starts(turns)
    previous = len(dropped_before or ())
    if previous in starts and turns[:previous] == dropped_before and len(tokens_from(previous)) <= budget:
        return fitted(previous)
    if len(tokens_from(starts[0])) <= budget:
        return fitted(starts[0])
    for limit in (int(budget * REFILL_FRACTION), budget):
        start = _first_start_within(starts, tokens_from, limit)
        if start is not None:
            return fitted(start)
    needed = len(tokens_from(starts[-1]))
    if turns and turns[-1]["role"] == "tool":
        raise ContextFullError(
            f"A tool's result is too long for the context window: the model would need {needed:,} tokens "
            f"and only {budget:,} are left after reserving room for the reply. Lower the result limit in "
            "Settings → Tools, or raise the context length."
        )
    raise ContextFullError(
        f"The message is too long for the context window: it needs {needed:,} tokens and "
        f"only {budget:,} are left after reserving room for the reply. Shorten the message or "
        "the system prompt, lower the maximum reply length, or raise the context length."
    )


def _first_start_within(starts: list[int], tokens_from: Callable[[int], list[int]], limit: int) -> int | None:
    """The earliest start whose prompt is at most `limit` tokens, by bisection: dropping more
    turns never makes a prompt longer. None if even the newest message alone is longer."""
    low, high = 0, len(starts) - 1
    if len(tokens_from(starts[high])) > limit:
        return None
    while low < high:
        middle = (low + high) // 2
        if len(tokens_from(starts[middle])) <= limit:
            high = middle
        else:
            low = middle + 1
    return starts[low]


def _turn_starts(turns: list[dict]) -> list[int]:
    """Offsets where a user turn begins, oldest first, always ending with the newest message."""
    starts = [i for i, m in enumerate(turns) if m["role"] == "user"] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    last = len(turns) - 1
    return [s for s in starts if s <= last] or [0]
