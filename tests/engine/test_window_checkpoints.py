"""Window checkpoints (llama/window_checkpoints.py) on the real Gemma 3 270M, whose 15 sliding
layers get llama.cpp's window-sized cache: 512 window + 512 ubatch = 1,024 cells.

A reply of 560 tokens after a prompt of about 810 pushes the prompt's window (its last 512
positions) out of that cache, whose cells are reused from position 1,024 on, so without a
checkpoint a Regenerate would evaluate the whole prompt again. With one it evaluates the one
token the engine always decodes again, and the reply is the one a cold evaluation gives.
"""

from __future__ import annotations

import threading

import pytest
from llama_cpp import llama_cpp as llama_c

from app.engine.kv.prefix_reuse import common_prefix
from app.engine.llama import kv_seq
from app.engine.llama.generator import Engine
from app.engine.memory_plan import WINDOW_CHECKPOINTS, plan
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


def test_past_a_checkpoint_through_drafted_rejections_and_to_a_prompt_none_begins(engine, long_reply, gemma_path):
    # The long reply again, drafted as users get it: rejected drafts are taken out of a cache
    # whose cells llama.cpp reuses, and what stays is one run ending at the last token kept.
    reply(engine, QUESTION, LONG.with_changes(draft="lookup"))
    drafting = engine.last_draft_stats
    assert drafting.drafted > drafting.accepted > 0 and drafting.batches > 10
    llm = engine._llm
    assert llama_c.llama_memory_seq_pos_max(llama_c.llama_get_memory(llm._ctx.ctx), 0) == llm.n_tokens - 1
    assert kv_seq.can_reuse(llm, llm.n_tokens)

    # A prompt that keeps the first words of that reply, then asks on: it runs past the
    # checkpoint (N tokens), whose window is put back; evaluation starts at N, and the reply is
    # a cold evaluation's.
    edited = QUESTION + [{"role": "assistant", "content": long_reply[0][:60]}, {"role": "user", "content": "Go on."}]
    prompt = engine.prompt_tokens(edited)
    checkpoint = len(engine._checkpoints._kept[-1].tokens)
    # Its size is what the memory plan gives one (a prompt past the window: 512 cells a layer).
    planned = plan(gemma_path, LoadOptions(n_ctx=2048), free_ram=1 << 40).checkpoints_ram / WINDOW_CHECKPOINTS
    assert engine._checkpoints._kept[-1].size == pytest.approx(planned, rel=0.002)  # 12 bytes a cell more
    assert common_prefix(prompt, list(llm.input_ids[:llm.n_tokens])) > checkpoint + 5
    text, stats = reply(engine, edited, SHORT)
    assert stats.evaluated_prompt_tokens == stats.prompt_tokens - checkpoint
    cold = Engine(gemma_path, LoadOptions(n_ctx=2048))
    try:
        assert reply(cold, edited, SHORT)[0] == text
    finally:
        cold.close()

    # Another question: the cache holds the first one's window from position N - 512 on, so not
    # even the turn markers the two share are kept, and no checkpoint begins it.
    shared = common_prefix(engine.prompt_tokens(OTHER), engine.prompt_tokens(QUESTION))
    assert 0 < shared < 10
    text, stats = reply(engine, OTHER, SHORT)
    assert stats.evaluated_prompt_tokens == stats.prompt_tokens
    assert len(text) > 40


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
    assert all(checkpoint.size > 0 for checkpoint in kept) and window == 512
    # A prompt that begins with none of them drops them all at its own reply.
    reply(engine, OTHER, SHORT.with_changes(max_tokens=4))
    assert len(engine._checkpoints._kept) == 1
