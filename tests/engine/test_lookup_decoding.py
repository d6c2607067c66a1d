"""Prompt-lookup decoding in the engine's loop, on the real Gemma 3 270M: a drafted reply ends
as the undrafted one does (the same text, stop reason and counts, and a KV cache holding the
prompt and the reply, nothing of a rejected draft), for greedy and seeded sampling.

The default model is a base model that repeats its input, so a "copy this" prompt drafts
most of its reply. Each comparison warms the prompt first, so both replies find it in the
cache and re-decode its last token alike.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
from llama_cpp import llama_cpp as llama_c
from support.reply_events import collect

from app.__main__ import build_parser
from app.cli.load_options import chat_overrides
from app.engine import lookup
from app.engine.llama.generator import Engine
from app.engine.lookup import DraftStats
from app.engine.options import NOTHING_STORED, ModelSettings, StoredSettings, resolve
from app.engine.sampling import Drafting, ModelDefaults, SamplingError, SamplingParams
from app.engine.types import LoadOptions, ReplyStats, StopReason

SNIPPET = '''def scale(points, factor):
    """Multiply every coordinate by factor."""
    result = []
    for x, y in points:
        result.append((x * factor, y * factor))
    return result
'''
COPY = [{"role": "user", "content": "Repeat the following code exactly.\n\n```python\n" + SNIPPET + "```"}]
GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=48)  # past "result.append"


@pytest.fixture(scope="module")
def engine(gemma_path):
    engine = Engine(gemma_path, LoadOptions(n_ctx=1024))
    yield engine
    engine.close()


@dataclass
class Reply:
    text: str
    chunks: list[str]
    stats: ReplyStats
    drafting: DraftStats | None
    cached_tokens: list[int]  # what the engine says the cache holds (prefix reuse reads it)
    n_tokens: int  # what llama-cpp-python's counters say it holds
    kv_positions: int  # what llama.cpp's KV cache really holds


def reply(engine: Engine, messages, params: SamplingParams, cancel_after: int | None = None) -> Reply:
    cancel = threading.Event()
    chunks, stats = collect(engine.stream(messages, params, cancel), cancel, cancel_after)
    llm = engine._llm
    kv_positions = llama_c.llama_memory_seq_pos_max(llama_c.llama_get_memory(llm._ctx.ctx), 0) + 1
    return Reply("".join(chunks), chunks, stats, engine.last_draft_stats, engine.cached_tokens, llm.n_tokens,
                 kv_positions)


def both(engine: Engine, messages, params: SamplingParams, **kwargs) -> tuple[Reply, Reply]:
    """The reply without drafting and with it, each after the prompt was put in the cache."""
    replies = []
    for draft in (Drafting.NONE, Drafting.LOOKUP):
        reply(engine, messages, params.with_changes(max_tokens=1, stop=()))
        replies.append(reply(engine, messages, params.with_changes(draft=draft), **kwargs))
    return replies[0], replies[1]


def assert_same_ending(plain: Reply, drafted: Reply) -> None:
    assert drafted.text == plain.text and drafted.chunks == plain.chunks
    for field in ("stop_reason", "completion_tokens", "prompt_tokens", "evaluated_prompt_tokens"):
        assert getattr(drafted.stats, field) == getattr(plain.stats, field), field
    assert drafted.cached_tokens == plain.cached_tokens
    # The cache holds the prompt and the evaluated reply, and not one rejected drafted token.
    assert drafted.n_tokens == drafted.kv_positions == plain.n_tokens == plain.kv_positions


@pytest.fixture(scope="module")
def greedy_copy(engine) -> tuple[Reply, Reply]:
    """The greedy copy without drafting and with it: compared by one test, its text read by another."""
    return both(engine, COPY, GREEDY)


def test_a_greedy_copy_is_the_same_with_lookup_and_mostly_drafted(greedy_copy):
    plain, drafted = greedy_copy
    assert_same_ending(plain, drafted)
    assert plain.drafting is None
    assert drafted.drafting.accepted >= GREEDY.max_tokens // 2
    assert drafted.stats.tokens_per_s > 0 and drafted.stats.ttft_s > 0


def test_max_tokens_ends_a_drafted_reply_at_the_same_token(engine):
    params = GREEDY.with_changes(max_tokens=37)
    plain, drafted = both(engine, COPY, params)
    assert_same_ending(plain, drafted)
    assert drafted.stats.completion_tokens == 37 and drafted.stats.stop_reason is StopReason.LENGTH
    assert drafted.drafting.accepted > 0


def test_a_copy_cut_at_max_tokens_drafts_up_to_its_last_token_and_counts_every_draft(engine):
    """The last token a reply has room for is sampled from the row before it and evaluated by
    nobody: drafts stop short of it, so it is neither decoded and taken out again nor left in a
    draft whose accepted tokens go uncounted. Every drafted token of a greedy copy is accepted,
    and the cache holds the prompt and the reply but that last token, as without drafting."""
    for max_tokens in (30, 46):
        plain, drafted = both(engine, COPY, GREEDY.with_changes(max_tokens=max_tokens))
        assert_same_ending(plain, drafted)
        assert drafted.drafting.drafted > 0 and drafted.drafting.accepted == drafted.drafting.drafted
        assert drafted.n_tokens == drafted.stats.prompt_tokens + max_tokens - 1


def test_a_stop_string_inside_a_draft_ends_the_reply_as_without(engine, greedy_copy):
    full = greedy_copy[0].text
    stop = full[full.index("result.append") + 3:][:9]  # well after drafting began
    plain, drafted = both(engine, COPY, GREEDY.with_changes(stop=(stop,)))
    assert_same_ending(plain, drafted)
    assert drafted.stats.stop_reason is StopReason.STOP_STRING and stop not in drafted.text
    assert drafted.drafting.accepted > 0


def test_an_end_of_turn_token_inside_a_draft_ends_the_reply_as_without(engine, monkeypatch):
    # Make a token of the copied code end the turn, as <end_of_turn> would: it is drafted,
    # the sampler picks it, and it ends the reply unshown.
    append = engine.tokenize("append", at_start=False)[-1]
    monkeypatch.setattr(engine, "stop_token_ids", engine.stop_token_ids | {append})
    plain, drafted = both(engine, COPY, GREEDY)
    assert_same_ending(plain, drafted)
    assert drafted.stats.stop_reason is StopReason.END_OF_TURN and drafted.text.endswith("result.")
    assert drafted.drafting.accepted > 0


def test_cancelling_mid_draft_stops_at_the_same_token(engine):
    plain, drafted = both(engine, COPY, GREEDY, cancel_after=40)
    assert_same_ending(plain, drafted)
    assert drafted.stats.stop_reason is StopReason.CANCELLED
    assert drafted.drafting.accepted > 0


def test_the_next_turn_evaluates_only_its_new_tokens_after_a_drafted_reply(engine):
    evaluated = {}
    for draft in (Drafting.NONE, Drafting.LOOKUP):
        reply(engine, [{"role": "user", "content": "Unrelated."}], GREEDY.with_changes(max_tokens=1))
        # 24 tokens: the greedy copy's first draft comes after token 16
        first = reply(engine, COPY, GREEDY.with_changes(max_tokens=24, draft=draft))
        conversation = COPY + [{"role": "assistant", "content": first.text}, {"role": "user", "content": "Thanks."}]
        second = reply(engine, conversation, GREEDY.with_changes(max_tokens=2, draft=draft))
        evaluated[draft] = second.stats.evaluated_prompt_tokens
    assert first.drafting.accepted > 0
    assert 0 < evaluated[Drafting.LOOKUP] == evaluated[Drafting.NONE] < 20


def test_seeded_sampling_draws_the_same_random_stream_and_penalties(engine, monkeypatch):
    """Six seeded replies over three tokens made exactly equally likely (a bias of 1e10 leaves
    nothing of the model's own logits in float32, and no top-k/top-p sorts their ties), and a
    repeat penalty that rules out the last token: each token is a coin toss of the sampler's
    random number between the two its penalty state allows. Drafts are forced on and mostly
    rejected (over 20 rejected drafted tokens in all), so any extra or skipped sample call, or a
    rejected token accepted into the penalties, would change later tokens. Both bugs, put into
    the engine by hand, changed replies here: an extra sample call at each rejected draft all
    six, the first rejected token accepted into the penalties four of them. (Each drafted row
    costs the model's 262k-wide output layer, so more replies would only cost time.)"""
    a, b, c = (engine.tokenize(word, at_start=False)[-1] for word in (" A", " B", " C"))
    prompt = [{"role": "user", "content": " A B C B A C A B A C B C" * 6}]
    params = SamplingParams(temperature=0.8, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.5, repeat_last_n=1,
                            max_tokens=8, logit_bias={a: 1e10, b: 1e10, c: 1e10})
    monkeypatch.setattr(lookup.DraftLength, "choose", lambda self, available, match: 3 if available >= 3 else 0)
    checked = accepted = 0
    for seed in range(6):
        plain, drafted = both(engine, prompt, params.with_changes(seed=seed))
        assert_same_ending(plain, drafted)
        checked += drafted.drafting.drafted
        accepted += drafted.drafting.accepted
    assert 0 < accepted and checked - accepted > 20


def test_a_seeded_reply_with_lookup_is_the_same_every_time(engine):
    """Drafts depend on the conversation alone (not on timing), so the same seed and
    conversation draft, and so round, alike."""
    params = SamplingParams(temperature=0.8, max_tokens=24, seed=11)  # its first draft comes after token 16
    first, second = (reply(engine, COPY, params) for _ in range(2))
    assert first.text == second.text and first.drafting == second.drafting
    assert first.drafting.batches > 0


def test_no_drafting_when_off_or_when_the_model_cannot_forget_a_draft(engine, monkeypatch):
    """A reply that drafts reports DraftStats (zeros before its first draft), so four tokens show
    whether it would have."""
    assert reply(engine, COPY, GREEDY.with_changes(max_tokens=4, draft=Drafting.NONE)).drafting is None
    monkeypatch.setattr(engine._llm, "_is_recurrent", True)  # Mamba/RWKV: no positions to remove
    assert reply(engine, COPY, GREEDY.with_changes(max_tokens=4)).drafting is None


# --- the setting ---------------------------------------------------------------------------------

def test_drafting_is_on_by_default_and_round_trips_through_the_stored_dict():
    assert SamplingParams().draft is Drafting.LOOKUP
    off = SamplingParams(draft=Drafting.NONE)
    assert off.to_dict()["draft"] == "none"
    assert SamplingParams.from_dict(off.to_dict()) == off
    assert SamplingParams.from_dict({"temperature": 0.5}).draft is Drafting.LOOKUP  # stored before it existed
    with pytest.raises(SamplingError, match="draft must be 'lookup' or 'none'"):
        SamplingParams(draft="sometimes")


def test_hearth_chat_draft_flag():
    """--draft as `hearth chat` reads it: its flags over what is stored, merged by options.resolve."""
    parser = build_parser()

    def draft(argv: list[str], stored: StoredSettings = NOTHING_STORED) -> Drafting:
        return resolve(stored, ModelDefaults(), chat_overrides(parser.parse_args(argv))).sampling.draft

    assert draft(["chat", "m.gguf", "hi"]) is Drafting.LOOKUP
    assert draft(["chat", "m.gguf", "hi", "--draft", "none"]) is Drafting.NONE
    window = StoredSettings(ModelSettings(sampling=SamplingParams(draft=Drafting.NONE)), sampling_saved=True)
    assert draft(["chat", "hi", "--conversation", "1"], window) is Drafting.NONE  # the window's setting
    assert draft(["chat", "hi", "--conversation", "1", "--draft", "lookup"], window) is Drafting.LOOKUP
    with pytest.raises(SystemExit):
        parser.parse_args(["chat", "m.gguf", "hi", "--draft", "always"])
