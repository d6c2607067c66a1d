"""The engine on the real Gemma 3 270M: load, stream, stop, cancel, reuse, overflow."""

from __future__ import annotations

import os
import threading

import psutil
import pytest
from support.reply_events import collect

from app.engine.context import REFILL_FRACTION, ContextFullError
from app.engine.llama.devices import cpu_threads
from app.engine.llama.generator import Engine
from app.engine.sampling import SamplingParams
from app.engine.types import LoadOptions, ReplyStats

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=24)
LONG_PIECE_TOKEN = 14443  # a 34-byte Bengali piece: longer than llama-cpp-python's 32-byte buffer
BYTE_C3, BYTE_A9 = 433, 407  # Gemma's byte-fallback tokens <0xC3> and <0xA9>: "é" split in two


@pytest.fixture(scope="module")
def engine(gemma_path):
    engine = Engine(gemma_path, LoadOptions(n_ctx=1024))
    yield engine
    engine.close()


def run(engine, messages, params=GREEDY, cancel=None):
    return collect(engine.stream(messages, params, cancel))


def ask(text):
    return [{"role": "user", "content": text}]


def test_load_reports_device_and_model_stop_tokens(engine):
    assert engine.device.backend in ("CPU", "CUDA")
    assert engine.device.total_layers == engine.info.block_count + 1
    assert engine.n_ctx == 1024
    end_of_turn = engine.info.special_tokens["<end_of_turn>"]
    assert end_of_turn in engine.stop_token_ids
    assert engine.info.eos.id in engine.stop_token_ids
    assert engine.template.name == "fallback:gemma"


def test_prompt_has_exactly_one_bos(engine):
    tokens = engine.prompt_tokens(ask("Hello"))
    assert tokens[0] == engine.info.bos.id
    assert tokens.count(engine.info.bos.id) == 1


def test_stream_yields_text_and_stats(engine):
    chunks, stats = run(engine, ask("The capital of France is"))
    assert len(chunks) > 3 and "".join(chunks).strip()
    assert stats.stop_reason in ("length", "end_of_turn")
    assert 0 < stats.completion_tokens <= GREEDY.max_tokens
    assert stats.prompt_tokens == len(engine.prompt_tokens(ask("The capital of France is")))
    assert stats.ttft_s > 0 and stats.tokens_per_s > 0
    assert stats.error is None


def test_max_tokens_ends_with_length(engine):
    _, stats = run(engine, ask("Count: one, two, three,"), GREEDY.with_changes(max_tokens=5, logit_bias={BYTE_C3: 5.0}))
    assert stats.completion_tokens == 5 and stats.stop_reason == "length"


def test_a_reply_cut_at_max_tokens_ends_without_a_forward_pass_for_its_last_token(engine):
    """No token follows the last one a reply has room for, so its logits would go unread: the
    ReplyStats comes without evaluating it (a whole forward pass that held the reply's last words
    back from the window, #31). The cache holds the prompt and the reply up to it; the next
    prompt evaluates it, as test_multi_turn_reuses_the_prefix_including_the_generated_reply's
    replies that end at their end of turn show the rest."""
    question = ask("Count: one, two, three,")
    _, stats = run(engine, question, GREEDY.with_changes(max_tokens=5, logit_bias={BYTE_C3: 5.0}))
    assert stats.completion_tokens == 5 and stats.stop_reason == "length"
    assert engine._llm.n_tokens == len(engine.prompt_tokens(question)) + 4  # what the KV cache holds


def test_greedy_is_reproducible_and_seed_fixes_sampling(engine):
    assert run(engine, ask("Once upon a time"))[0] == run(engine, ask("Once upon a time"))[0]
    warm = SamplingParams(temperature=1.0, max_tokens=20, seed=1234)
    assert run(engine, ask("Tell me a story"), warm)[0] == run(engine, ask("Tell me a story"), warm)[0]


def test_fresh_seed_per_request(engine):
    params = SamplingParams(temperature=1.0, max_tokens=2)
    seeds = {run(engine, ask("Hi"), params)[1].seed for _ in range(4)}
    assert len(seeds) == 4


def test_end_of_turn_token_stops_and_is_not_shown(engine):
    end_of_turn = engine.info.special_tokens["<end_of_turn>"]
    chunks, stats = run(engine, ask("Hi"), GREEDY.with_changes(logit_bias={end_of_turn: 100.0}))
    assert stats.stop_reason == "end_of_turn"
    assert stats.completion_tokens == 0 and "".join(chunks) == ""


def test_stop_string_ends_reply_and_is_hidden(engine):
    full = "".join(run(engine, ask("The capital of France is"))[0])
    stop = full.strip()[4:9]
    assert stop and stop in full
    chunks, stats = run(engine, ask("The capital of France is"), GREEDY.with_changes(stop=(stop,)))
    assert stats.stop_reason == "stop_string"
    assert "".join(chunks) == full[: full.index(stop)]


def test_token_pieces_longer_than_32_bytes_are_kept(engine):
    piece = engine._piece(LONG_PIECE_TOKEN)
    assert len(piece) > 32
    chunks, _ = run(engine, ask("Hi"), GREEDY.with_changes(max_tokens=3, logit_bias={LONG_PIECE_TOKEN: 100.0}))
    assert "".join(chunks) == piece.decode("utf-8") * 3


def test_text_is_valid_utf8_across_token_boundaries(engine):
    # <0xC3> then <0xA9> is "é" split over two tokens; a repeat penalty over the last token
    # makes greedy sampling alternate between them.
    params = GREEDY.with_changes(max_tokens=8, repeat_penalty=2.0, repeat_last_n=1,
                                 logit_bias={BYTE_C3: 100.0, BYTE_A9: 90.0})
    chunks, stats = run(engine, ask("Hi"), params)
    assert stats.completion_tokens == 8
    assert "".join(chunks) == "é" * 4
    assert all("\ufffd" not in chunk for chunk in chunks)


def test_cancel_mid_reply_from_another_thread(engine):
    cancel = threading.Event()
    chunks = []
    stats = None
    params = SamplingParams(temperature=0.8, max_tokens=500, logit_bias={BYTE_C3: -100.0})
    for event in engine.stream(ask("Write a long story about a dragon."), params, cancel):
        if isinstance(event, ReplyStats):
            stats = event
            break
        chunks.append(event)
        if len(chunks) == 5:
            threading.Thread(target=cancel.set).start()
    assert stats.stop_reason == "cancelled"
    assert 5 <= stats.completion_tokens < 50


def test_cancel_before_prompt_evaluation(engine):
    cancel = threading.Event()
    cancel.set()
    chunks, stats = run(engine, ask("A question nobody reads"), GREEDY, cancel)
    assert chunks == [] and stats.stop_reason == "cancelled" and stats.completion_tokens == 0


def test_multi_turn_reuses_the_prefix_including_the_generated_reply(engine):
    conversation = [{"role": "system", "content": "You are terse."}] + ask("Name a colour.")
    first_prompt = engine.prompt_tokens(conversation)
    chunks, first = run(engine, conversation)
    generated = engine.cached_tokens[len(first_prompt):]
    assert len(generated) == first.completion_tokens
    # Gemma's template trims the reply, so trailing whitespace tokens are not part of turn 2.
    while generated and not engine._piece(generated[-1]).strip():
        generated.pop()
    conversation += [{"role": "assistant", "content": "".join(chunks)}] + ask("Another one.")
    second_prompt = engine.prompt_tokens(conversation)
    assert second_prompt[: len(first_prompt) + len(generated)] == first_prompt + generated
    _, second = run(engine, conversation)
    # Only the new turn is evaluated: the previous prompt and reply come from the KV cache.
    assert second.prompt_tokens == len(second_prompt)
    assert second.evaluated_prompt_tokens == len(second_prompt) - len(first_prompt) - len(generated)


def test_context_overflow_drops_oldest_turns_keeping_system(gemma_path):
    small = Engine(gemma_path, LoadOptions(n_ctx=256))
    try:
        conversation = [{"role": "system", "content": "SYSTEM-MARKER"}]
        for turn in range(12):
            conversation += ask(f"Question {turn}: " + "tell me more " * 6)
            conversation += [{"role": "assistant", "content": f"Answer {turn}: " + "sure " * 6}]
        conversation += ask("Final question")
        fitted = small.fit(conversation, max_tokens=64)
        assert fitted.dropped_messages > 0
        assert fitted.messages[0]["content"] == "SYSTEM-MARKER"
        assert fitted.messages[-1]["content"] == "Final question"
        assert fitted.messages[1]["role"] == "user"
        _, stats = run(small, conversation, GREEDY.with_changes(max_tokens=64))
        assert stats.dropped_messages == fitted.dropped_messages
        assert stats.stop_reason in ("length", "end_of_turn") and stats.prompt_tokens <= 256 - 64

        with pytest.raises(ContextFullError, match="too long for the context window"):
            small.stream(ask("word " * 400), GREEDY)
        # The engine is still usable after the failure.
        assert run(small, ask("Hi"), GREEDY.with_changes(max_tokens=3))[1].completion_tokens == 3
    finally:
        small.close()


def test_after_an_overflow_the_next_reply_drops_the_same_turns_and_evaluates_only_new_tokens(gemma_path):
    small = Engine(gemma_path, LoadOptions(n_ctx=512))
    try:
        conversation = [{"role": "system", "content": "You are terse."}]
        for turn in range(30):
            conversation += ask(f"Question {turn}: " + "tell me more " * 6)
            conversation += [{"role": "assistant", "content": f"Answer {turn}: " + "sure " * 6}]
        conversation += ask("Name a colour.")
        params = GREEDY.with_changes(max_tokens=16)
        chunks, first = run(small, conversation, params)
        assert first.dropped_messages > 0
        assert first.prompt_tokens <= (512 - 16) * REFILL_FRACTION  # cut down to leave room

        conversation += [{"role": "assistant", "content": "".join(chunks)}] + ask("Another one.")
        _, second = run(small, conversation, params)
        assert second.dropped_messages == first.dropped_messages
        # The kept turns and the first reply come from the KV cache (all but the reply's last
        # token: generation stopped at the length limit before evaluating it).
        new_tokens = second.prompt_tokens - first.prompt_tokens - first.completion_tokens
        assert second.evaluated_prompt_tokens == new_tokens + 1
    finally:
        small.close()


def test_llama_cpp_log_reaches_python_logging(gemma_path, caplog):
    caplog.set_level("DEBUG", logger="llama.cpp")
    Engine(gemma_path, LoadOptions(n_ctx=256)).close()
    assert any(r.name == "llama.cpp" and "gemma3" in r.getMessage() for r in caplog.records)


def test_gpu_offload_is_requested_when_the_build_supports_it(gemma_path, monkeypatch):
    # A mock, because there is no CUDA device here: pretend the build can offload and check
    # what the engine asks for and reports. llama.cpp itself ignores the layers on a CPU build.
    import app.engine.llama.generator as generator

    monkeypatch.setattr(generator, "supports_gpu_offload", lambda: True)
    monkeypatch.setattr(generator, "free_vram", lambda: 8 * 1024**3)
    everything = Engine(gemma_path, LoadOptions(n_ctx=256))  # GPU layers Auto, with room to spare
    assert everything.device.backend == "CUDA" and everything.device.gpu_layers == 19
    everything.close()
    # Auto keeps llama.cpp's 1 GiB margin: Gemma's output layer (its 262k-token embedding,
    # offloaded first) does not fit in 150 MiB more, so nothing is offloaded.
    monkeypatch.setattr(generator, "free_vram", lambda: 1024**3 + 150 * 1024**2)
    none = Engine(gemma_path, LoadOptions(n_ctx=256))
    assert none.device.gpu_layers == 0
    none.close()
    some = Engine(gemma_path, LoadOptions(n_ctx=256, n_gpu_layers=5))
    assert some.device.describe() == "CUDA (5/19 layers)"
    some.close()


def test_device_matches_the_build(engine):
    from app.engine.llama.devices import offload_support, supports_gpu_offload

    if supports_gpu_offload():
        assert engine.device.backend == "CUDA" and engine.device.gpu_layers == engine.device.total_layers
    else:
        assert engine.device.gpu_layers == 0
        # One thread per physical core: llama-cpp-python's default (half the logical CPUs)
        # halved the speed on machines without SMT, this one included.
        threads = cpu_threads().generate
        assert engine._llm.context_params.n_threads == engine.device.cpu_threads == threads
        assert threads >= max(len(os.sched_getaffinity(0)) // 2, 1)
        if psutil.cpu_count(logical=False) == len(os.sched_getaffinity(0)):  # no SMT: every core
            assert threads == len(os.sched_getaffinity(0))
        # A CUDA build on a machine without a usable GPU says why it runs on the CPU.
        reason = offload_support().reason
        assert engine.device.describe() == f"CPU ({threads} thread{'s' if threads != 1 else ''}" + (
            f"; {reason})" if reason else ")")
