"""Tokens' log-probabilities from the engine on the real Gemma: asked for, they come as typed
events just before the text they complete, and change nothing else; not asked for, none come.
A model on a remote server refuses them before anything is sent."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from llama_cpp import llama_cpp as llama_c
from support.remote_servers import stand_in  # noqa: F401 - a fixture

from app.engine.llama.generator import Engine
from app.engine.logprobs import LogprobsUnavailable, TokenLogprob, token_text
from app.engine.remote.backend import RemoteBackend
from app.engine.remote.http import RemoteTimeouts
from app.engine.sampling import SamplingParams
from app.engine.tools.types import ToolCall
from app.engine.tools.wire import tool_use_from_openai
from app.engine.types import LoadOptions, RemoteModel, ReplyStats, ServerConfig, StopReason
from app.serve.completions import Job, Refusal
from app.serve.run_job import run_job

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=16)
ASK = [{"role": "user", "content": "Name three colours."}]
BYTE_C3, BYTE_A9 = 433, 407  # Gemma's byte-fallback tokens <0xC3> and <0xA9>: "é" split in two


@pytest.fixture(scope="module")
def engine(gemma_path):
    engine = Engine(gemma_path, LoadOptions(n_ctx=1024))
    yield engine
    engine.close()


def events(engine, params=GREEDY, logprobs=None) -> list:
    return list(engine.stream(ASK, params, threading.Event(), logprobs=logprobs))


def test_a_reply_that_asks_for_none_has_none_and_one_that_asks_has_the_same_text(engine):
    plain = events(engine)
    assert all(isinstance(e, (str, ReplyStats)) for e in plain)
    asked = events(engine, logprobs=4)
    assert [e for e in asked if isinstance(e, str)] == [e for e in plain if isinstance(e, str)]
    tokens = [e for e in asked if isinstance(e, TokenLogprob)]
    assert len(tokens) == asked[-1].completion_tokens == plain[-1].completion_tokens
    # Each token comes before the text it completes: the stream opens with one, and the text
    # so far is never ahead of the tokens so far.
    assert isinstance(asked[0], TokenLogprob)
    text, pieces = "", b""
    for event in asked[:-1]:
        if isinstance(event, TokenLogprob):
            pieces += event.piece
        else:
            text += event
            assert pieces.decode("utf-8", "replace").lstrip(" ").startswith(text.lstrip(" "))
    for token in tokens:
        assert len(token.top) == 4 and token.top[0].piece == token.piece and token.top[0].logprob == token.logprob
        assert sum(math.exp(a.logprob) for a in token.top) <= 1 + 1e-5


def test_the_logprob_is_the_log_softmax_of_the_models_logits(engine):
    """Checked against the full distribution of the first token, read again from the logits
    after its prompt and computed here in float64."""
    [first, *_] = [e for e in events(engine, GREEDY.with_changes(max_tokens=1), logprobs=2) if isinstance(e, TokenLogprob)]
    engine._evaluate_prompt(engine.prompt_tokens(ASK), threading.Event())
    logits = np.ctypeslib.as_array(llama_c.llama_get_logits_ith(engine._llm._ctx.ctx, -1),
                                   shape=(engine._n_vocab,)).astype(np.float64)
    log_softmax = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
    best = int(np.argmax(logits))
    assert first.piece == engine._piece(best, True)
    assert first.logprob == pytest.approx(log_softmax[best], abs=1e-4)
    runner_up = int(np.argsort(logits)[-2])
    assert first.top[1].logprob == pytest.approx(log_softmax[runner_up], abs=1e-4)


def test_a_character_split_over_byte_tokens_is_reported_per_token_with_its_bytes(engine):
    params = GREEDY.with_changes(max_tokens=2, repeat_penalty=2.0, repeat_last_n=1,
                                 logit_bias={BYTE_C3: 100.0, BYTE_A9: 90.0})
    asked = events(engine, params, logprobs=0)
    assert [e.piece for e in asked if isinstance(e, TokenLogprob)] == [b"\xc3", b"\xa9"]
    assert [e.token for e in asked if isinstance(e, TokenLogprob)] == ["bytes:\\xc3", "bytes:\\xa9"]
    assert [e for e in asked if isinstance(e, str)] == ["é"]  # both tokens come before it
    assert token_text("é".encode()) == "é"


def test_a_reply_held_to_a_tool_call_passes_its_tokens_logprobs_through_the_parser(engine):
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    asked = list(engine.stream([{"role": "user", "content": "Weather in Paris?"}], GREEDY.with_changes(max_tokens=40),
                               threading.Event(), tools=tool_use_from_openai([weather], "required"), logprobs=1))
    assert [e.name for e in asked if isinstance(e, ToolCall)] == ["get_weather"]
    assert len([e for e in asked if isinstance(e, TokenLogprob)]) == asked[-1].completion_tokens
    assert asked[-1].stop_reason is StopReason.TOOL_CALLS


def test_a_remote_model_refuses_logprobs_before_sending_anything(stand_in):  # noqa: F811
    backend = RemoteBackend(RemoteModel(ServerConfig(stand_in.url("ok")), "stand-in"),
                            RemoteTimeouts(connect=2.0, read=2.0))
    try:
        with pytest.raises(LogprobsUnavailable):
            backend.stream(ASK, GREEDY, threading.Event(), logprobs=0)
        refused = run_job(backend, Job(GREEDY, messages=ASK, logprobs=2), threading.Event(), lambda e: None,
                          lambda raw: None)
        assert refused.reason is Refusal.UNSUPPORTED and refused.param == "logprobs"
        assert "http" not in refused.message and "127.0.0.1" not in refused.message
        assert not [r for r in stand_in.requests if r.path.endswith("/chat/completions")]
        assert run_job(backend, Job(GREEDY, messages=ASK), threading.Event(), lambda e: None,
                       lambda raw: None).stop_reason is StopReason.END_OF_TURN
    finally:
        backend.close()
