"""How much of a conversation is kept: the rules of context.py, with a word-count tokenizer.

The real tokenizer is exercised in test_generator.py; here a prompt's length is its number of
words, so every expected figure can be worked out by hand.
"""

from __future__ import annotations

import pytest

from app.engine.context import REFILL_FRACTION, ContextFullError, fit_conversation


def render_and_count(messages: list[dict]) -> list[int]:
    """One token per word, plus one per message for the template's turn markers."""
    return [0] * sum(len(m["content"].split()) + 1 for m in messages)


class CountingTokenizer:
    def __init__(self):
        self.calls = 0

    def __call__(self, messages):
        self.calls += 1
        return render_and_count(messages)


def conversation(turns: int, words: int = 9) -> list[dict]:
    """A system prompt, then `turns` exchanges of 10 tokens a message, then a new question."""
    messages = [{"role": "system", "content": "system"}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"q{i} " + "w " * (words - 1)})
        messages.append({"role": "assistant", "content": f"a{i} " + "w " * (words - 1)})
    messages.append({"role": "user", "content": "last"})
    return messages


def test_a_conversation_that_fits_is_kept_whole():
    messages = conversation(5)
    fitted = fit_conversation(messages, render_and_count, budget=1000)
    assert fitted.messages == messages and fitted.dropped == []
    assert len(fitted.prompt_tokens) == 2 + 5 * 20 + 2


def test_overflow_keeps_system_and_newest_and_cuts_down_to_the_refill_mark():
    messages = conversation(50)  # 2 + 1000 + 2 tokens
    fitted = fit_conversation(messages, render_and_count, budget=400)
    assert fitted.messages[0]["content"] == "system" and fitted.messages[-1]["content"] == "last"
    assert fitted.messages[1]["role"] == "user"  # whole exchanges only
    kept = len(fitted.prompt_tokens)
    assert kept <= 400 * REFILL_FRACTION < kept + 20  # as much as fits below the mark
    assert fitted.dropped == messages[1:1 + fitted.dropped_messages]


def test_overflow_is_found_by_bisection_not_turn_by_turn():
    tokenize = CountingTokenizer()
    fit_conversation(conversation(500), tokenize, budget=400)
    assert tokenize.calls <= 2 + 11  # whole, newest alone, and log2(500) bisection steps


def test_the_next_reply_drops_the_same_turns_while_they_still_fit():
    messages = conversation(50)
    first = fit_conversation(messages, render_and_count, budget=400)
    messages += [{"role": "assistant", "content": "an answer"}, {"role": "user", "content": "and another"}]
    second = fit_conversation(messages, render_and_count, budget=400, dropped_before=first.dropped)
    assert second.dropped == first.dropped  # the prompt starts as before: its KV cache is reused
    assert second.messages[: len(first.messages)] == first.messages

    # Once the kept turns outgrow the budget, the cut moves on, down to the mark again.
    for i in range(20):
        messages += [{"role": "assistant", "content": "w " * 9}, {"role": "user", "content": f"more {i}"}]
    third = fit_conversation(messages, render_and_count, budget=400, dropped_before=first.dropped)
    assert third.dropped_messages > first.dropped_messages
    assert len(third.prompt_tokens) <= 400 * REFILL_FRACTION


def test_turns_dropped_from_another_conversation_are_not_dropped_here():
    other = fit_conversation(conversation(50), render_and_count, budget=400)
    fresh = conversation(3)  # fits: nothing to drop, whatever was dropped elsewhere
    assert fit_conversation(fresh, render_and_count, budget=400, dropped_before=other.dropped).dropped == []

    edited = conversation(50)
    edited[1] = {"role": "user", "content": "an edited first question"}
    refit = fit_conversation(edited, render_and_count, budget=400, dropped_before=other.dropped)
    assert refit.dropped == edited[1:1 + refit.dropped_messages]


def test_when_the_newest_message_alone_passes_the_mark_the_whole_budget_is_used():
    messages = conversation(10) + [{"role": "assistant", "content": "ok"},
                                   {"role": "user", "content": "w " * 350}]
    fitted = fit_conversation(messages, render_and_count, budget=400)
    kept = len(fitted.prompt_tokens)
    assert 400 * REFILL_FRACTION < kept <= 400 < kept + 20  # one more exchange would not fit
    assert fitted.messages[-1] == messages[-1]


def test_a_message_longer_than_the_window_is_a_clear_error():
    with pytest.raises(ContextFullError, match="needs 503 tokens and only 400 are left"):
        fit_conversation(conversation(1) + [{"role": "assistant", "content": "ok"},
                                            {"role": "user", "content": "w " * 500}], render_and_count, budget=400)
