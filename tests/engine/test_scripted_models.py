"""The scripted models (support/model_files/scripted_models.py) through the engine: each
family's greedy reply is exactly its call text, then end of turn, whatever the conversation
before it and however the engine decodes it. This is what lets the tool-calling tests start
from a real model writing a real call through llama.cpp.

These replies have no tools, so they show no control token's text: a family whose call
markers are control tokens (Mistral Nemo's `[TOOL_CALLS]`, Llama 3.1's `<|python_tag|>`,
Granite's `<|tool_call|>`) shows the call without them (`plain`), as llama.cpp prints such a
reply. Only a reply that may call a tool shows them, for the parser (test_tool_calls.py)."""

from __future__ import annotations

import json

import pytest
from support.model_files.scripted_models import SCRIPTED_FAMILIES, plan_steps, scripted_engines, scripted_models
from support.reply_events import collect

from app.engine.llama.generator import Engine
from app.engine.sampling import Drafting, SamplingParams
from app.engine.types import StopReason

FAMILIES = sorted(SCRIPTED_FAMILIES)
GREEDY = SamplingParams(temperature=0, max_tokens=80)
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def models():
    return scripted_models()


@pytest.fixture(scope="module")
def engines():
    with scripted_engines() as engine:
        yield engine


def reply(engine: Engine, messages: list[dict], params: SamplingParams = GREEDY) -> tuple[str, str]:
    pieces, stats = collect(engine.stream(messages, params))
    assert stats is not None and stats.error is None
    return "".join(pieces), stats.stop_reason


@pytest.mark.parametrize("family", FAMILIES)
def test_the_reply_is_the_call_then_end_of_turn(engines, models, family):
    assert reply(engines(family), ASK) == (models[family].plain, StopReason.END_OF_TURN)


def test_each_family_says_the_same_call_in_its_own_syntax(models):
    for family, model in models.items():
        assert (model.name, model.arguments) == ("get_weather", {"city": "Paris"})
        assert model.text.count("get_weather") == 1 and '"Paris"' in model.text, family
    assert models["qwen3"].text.startswith("<tool_call>\n{") and models["qwen3"].text.endswith("}\n</tool_call>")
    assert json.loads(models["llama-3.1"].text) == {"name": "get_weather", "parameters": {"city": "Paris"}}
    phi = models["phi-4-mini"].text
    assert phi.startswith("<|tool_call|>[") and phi.endswith("]<|/tool_call|>")
    assert json.loads(phi.removeprefix("<|tool_call|>").removesuffix("<|/tool_call|>")) == [
        {"name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    # Control-token markers: in the text a reply with tools shows, not in a plain reply's.
    for family, marker, call in [
        ("llama-3.1-python-tag", "<|python_tag|>", {"name": "get_weather", "parameters": {"city": "Paris"}}),
        ("mistral-nemo", "[TOOL_CALLS]", [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdef123"}]),
        ("granite", "<|tool_call|>", [{"name": "get_weather", "arguments": {"city": "Paris"}}]),
    ]:
        model = models[family]
        assert model.text == marker + model.plain and json.loads(model.plain) == call, family
    assert [family for family, model in models.items() if model.text == model.plain] == [
        "qwen3", "llama-3.1", "phi-4-mini"]
    assert models["mistral-nemo"].call_id == "abcdef123"


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "hi"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "<tool_call> \" \": {\"x\"}"}],
        # Far into the context: the heads must still find the token one and two back.
        [{"role": "user", "content": "Paris, weather. " * 150}],
    ],
    ids=["short", "system-and-call-like-text", "long"],
)
def test_the_prompt_does_not_change_the_reply(engines, models, family, messages):
    assert reply(engines(family), messages) == (models[family].plain, StopReason.END_OF_TURN)


@pytest.mark.parametrize("family", FAMILIES)
def test_drafting_on_and_off_give_the_same_reply(engines, models, family):
    """With the same call earlier in the conversation, lookup drafting copies it and checks
    several tokens per decode, read from the rows of one batch; the sampler still picks every
    token, so the text is the same."""
    engine, text = engines(family), models[family].plain
    again = ASK + [{"role": "assistant", "content": text}, {"role": "user", "content": "And again?"}]
    assert reply(engine, again, GREEDY.with_changes(draft=Drafting.NONE)) == (text, StopReason.END_OF_TURN)
    assert engine.last_draft_stats is None
    assert reply(engine, again, GREEDY.with_changes(draft=Drafting.LOOKUP)) == (text, StopReason.END_OF_TURN)
    assert engine.last_draft_stats.drafted > 0


def test_a_step_looks_back_only_as_far_as_it_must():
    # "a b a c": after the first "a" comes "b", after the second "c"; "a" alone does not
    # tell them apart, the token before it does.
    steps = plan_steps([7, 1, 2, 1, 3, 9], first=0)
    assert steps == [((7,), 1), ((7, 1), 2), ((2,), 1), ((2, 1), 3), ((3,), 9)]


def test_tokens_before_the_prompt_tail_count_as_unknown():
    # The tail is [5]; what precedes it in a prompt is anything, so the step after it cannot
    # rely on it, and a text that repeats the tail's token with another successor is refused.
    assert plan_steps([5, 1, 2], first=0) == [((5,), 1), ((1,), 2)]
    with pytest.raises(ValueError, match="do not tell the next one"):
        plan_steps([5, 1, 5, 2], first=0)
