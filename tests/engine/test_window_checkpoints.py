"""Window checkpoints (llama/window_checkpoints.py) on the real Gemma 3 270M, whose 15 sliding
layers get llama.cpp's window-sized cache: 512 window + 512 ubatch = 1,024 cells.

A reply of 560 tokens after a prompt of about 810 pushes the prompt's window (its last 512
positions) out of that cache, whose cells are reused from position 1,024 on, so without a
checkpoint a Regenerate would evaluate the whole prompt again. With one it evaluates the one token the engine always decodes
again, and the reply is the one a cold evaluation gives.
"""

from __future__ import annotations

import threading

import pytest
from llama_cpp import llama_cpp as llama_c

from app.engine.kv.prefix_reuse import common_prefix
from app.engine.llama import kv_seq
from app.engine.llama.generator import Engine
from app.engine.memory_plan import WINDOW_CHECKPOINTS
from app.engine.sampling import SamplingParams
from app.engine.types import LoadOptions, ReplyStats

QUESTION = [{"role": "user", "content": "Tell me everything about lighthouses and their keepers. " * 72}]
OTHER = [{"role": "user", "content": "Write about harbours, ships and the sea at night. " * 30}]
LONG = SamplingParams(max_tokens=560, temperature=0.0, repeat_penalty=1.0, draft="none")
SHORT = LONG.with_changes(max_tokens=24)


def reply(engine: Engine, messages: list[dict], params: SamplingParams) -> tuple[str, ReplyStats]:
    text, stats = [], None
    for event in engine.stream(messages, params, threading.Event()):
        if isinstance(event, ReplyStats):
            stats = event
        elif isinstance(event, str):
            text.append(event)
    return "".join(text), stats


@pytest.fixture(scope="module")
def engine(gemma_path):
    engine = Engine(gemma_path, LoadOptions(n_ctx=2048))
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def long_reply(engine):
    text, stats = reply(engine, QUESTION, LONG)
    assert stats.completion_tokens == LONG.max_tokens  # a reply long enough to push the window out
    return text, stats


def test_the_engine_keeps_a_window_sized_cache_with_checkpoints(engine):
    assert "swa_full=0" in kv_seq.cache_layout(engine._llm)
    assert engine._checkpoints.applies


def test_a_regenerate_after_a_long_reply_evaluates_one_token_and_replies_the_same(engine, long_reply, gemma_path):
    text, first = long_reply
    prompt_tokens = first.prompt_tokens
    # The cache no longer holds what the prompt's last position attends to: the window is gone.
    assert not kv_seq.can_reuse(engine._llm, prompt_tokens - 1)
    again, stats = reply(engine, QUESTION, SHORT)
    assert stats.prompt_tokens == prompt_tokens and stats.evaluated_prompt_tokens == 1
    assert text.startswith(again) and len(again) > 40

    cold = Engine(gemma_path, LoadOptions(n_ctx=2048))
    try:
        cold_text, cold_stats = reply(cold, QUESTION, SHORT)
    finally:
        cold.close()
    assert cold_stats.evaluated_prompt_tokens == prompt_tokens and cold_text == again


def test_a_prompt_no_checkpoint_begins_is_evaluated_whole_and_right(engine, long_reply):
    reply(engine, QUESTION, LONG)  # the window pushed out again
    shared = common_prefix(engine.prompt_tokens(OTHER), engine.prompt_tokens(QUESTION))
    assert 0 < shared < 10  # the turn's opening markers
    text, stats = reply(engine, OTHER, SHORT)
    assert stats.evaluated_prompt_tokens == stats.prompt_tokens  # not even the shared markers' window is held
    assert len(text) > 40
    # Back to the first question: the cache holds the other prompt and its short reply, all of
    # it, so the shared markers are kept; the rest is evaluated, and the reply is as before.
    again, back = reply(engine, QUESTION, SHORT)
    assert back.evaluated_prompt_tokens == back.prompt_tokens - shared and long_reply[0].startswith(again)


def test_checkpoints_are_kept_for_the_latest_prompts_that_begin_each_other(engine):
    engine._checkpoints._kept.clear()
    conversation = list(QUESTION)
    for turn in range(WINDOW_CHECKPOINTS + 1):
        text, _ = reply(engine, conversation, SHORT.with_changes(max_tokens=4))
        conversation += [{"role": "assistant", "content": text}, {"role": "user", "content": f"And then {turn}?"}]
    kept = engine._checkpoints._kept
    assert len(kept) == WINDOW_CHECKPOINTS
    assert all(later.tokens[:len(earlier.tokens)] == earlier.tokens for earlier, later in zip(kept, kept[1:]))
    assert list(kept[-1].tokens) == engine.prompt_tokens(conversation[:-2])
    window = llama_c.llama_model_n_swa(engine._llm._model.model)
    assert all(len(checkpoint.payload) > 0 for checkpoint in kept) and window == 512
    # A prompt that begins with none of them drops them all at its own reply.
    reply(engine, OTHER, SHORT.with_changes(max_tokens=4))
    assert len(engine._checkpoints._kept) == 1
