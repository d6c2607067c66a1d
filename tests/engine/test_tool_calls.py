"""Tool calls from a real model to typed ToolCall events, through the Engine as the server,
the command line and the window use it.

The scripted models (support/model_files/scripted_models.py) write each family's call by
construction, through llama.cpp, with the family's tokenizer and template; the default Gemma
3 270M, a base model with no tool template, is held to a call by the grammar alone. Some
families write their call markers with control tokens (`[TOOL_CALLS]`, `<|python_tag|>`,
Granite's `<|tool_call|>`), whose text a reply shows only while it may call a tool, for the
parser to read (engine/llama/tool_reply.py); never in the text events.
"""

from __future__ import annotations

import json
import threading

import pytest
from support.model_files.scripted_models import SCRIPTED_FAMILIES, scripted_engines, scripted_models
from support.reply_events import every_event

from app.engine.llama.generator import Engine
from app.engine.sampling import Drafting, SamplingParams
from app.engine.tools.detection import detect_format
from app.engine.tools.schema import check_schema, problem
from app.engine.tools.types import ToolCall, ToolCallDelta, ToolsError
from app.engine.tools.wire import tool_use_from_openai
from app.engine.types import LoadOptions, StopReason

FAMILIES = sorted(SCRIPTED_FAMILIES)
GREEDY = SamplingParams(temperature=0, max_tokens=80)
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather now in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
CLOCK = {"type": "function", "function": {
    "name": "get_time", "description": "The time now in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def events_of(engine: Engine, messages: list[dict], params: SamplingParams, tools) -> list:
    return every_event(engine.stream(messages, params, threading.Event(), tools=tools))


def check_streamed_as_openai(events: list) -> list[ToolCall]:
    """The deltas of each call come before it, the first naming it; its arguments are exactly
    its fragments joined. Returns the complete calls."""
    calls = [event for event in events if isinstance(event, ToolCall)]
    for call in calls:
        deltas = [event for event in events[:events.index(call)]
                  if isinstance(event, ToolCallDelta) and event.index == call.index]
        assert (deltas[0].id, deltas[0].name) == (call.id, call.name)
        assert all(delta.name is None for delta in deltas[1:])
        assert "".join(delta.arguments for delta in deltas) == call.arguments
    return calls


@pytest.fixture(scope="module")
def engines():
    with scripted_engines() as engine:
        yield engine


# Each family's template is read as its own row (detection.py), whatever the vocabulary.
FORMAT_OF = {"qwen3": "hermes", "llama-3.1": "llama3", "llama-3.1-python-tag": "llama3", "phi-4-mini": "phi4-mini",
             "mistral-nemo": "mistral-nemo", "granite": "granite"}


@pytest.mark.parametrize("family", FAMILIES)
def test_each_familys_template_is_read_as_its_format(engines, family):
    assert detect_format(engines(family).template).name == FORMAT_OF[family]


@pytest.mark.parametrize("choice", ["auto", "required", {"type": "function", "function": {"name": "get_weather"}}],
                         ids=["auto", "required", "named"])
@pytest.mark.parametrize("family", FAMILIES)
def test_each_familys_call_becomes_a_tool_call(engines, family, choice):
    use = tool_use_from_openai([WEATHER, CLOCK], choice)
    events = events_of(engines(family), ASK, GREEDY, use)
    [call] = check_streamed_as_openai(events)
    assert (call.name, json.loads(call.arguments), call.problem) == ("get_weather", {"city": "Paris"}, None)
    assert events[-1].stop_reason is StopReason.TOOL_CALLS
    assert not [event for event in events if isinstance(event, str) and event.strip()]  # no call text shown
    fmt = detect_format(engines(family).template)
    if fmt.id_length:  # Mistral's 9 alphanumerics: the next turn's template refuses any other
        assert len(call.id) == fmt.id_length and call.id.isalnum()


@pytest.mark.parametrize("family", FAMILIES)
def test_drafting_keeps_the_same_call(engines, family):
    use = tool_use_from_openai([WEATHER], "auto")
    # A 9-character id and an answer before the next question: Mistral's template refuses
    # any other id, and a user turn right after a tool result.
    call = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    history = ASK + [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "call00001", "type": "function", "function": call}]},
        {"role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": "Sunny, 21 C"},
        {"role": "assistant", "content": "Sunny, 21 C."}, {"role": "user", "content": "And again?"}]
    calls = [[event for event in events_of(engines(family), history, GREEDY.with_changes(draft=draft), use)
              if isinstance(event, ToolCall)] for draft in (Drafting.NONE, Drafting.LOOKUP)]
    assert [(c.name, c.arguments) for c in calls[0]] == [(c.name, c.arguments) for c in calls[1]] != []


@pytest.mark.parametrize("family", FAMILIES)
def test_without_tool_choice_the_call_stays_text(engines, family):
    """tool_choice none: the tools are in the prompt, but the reply is read as text."""
    events = events_of(engines(family), ASK, GREEDY, tool_use_from_openai([WEATHER], "none"))
    assert not [event for event in events if isinstance(event, (ToolCall, ToolCallDelta))]
    # A control-token marker is no text: the reply shows the call without it, as a plain reply.
    assert "".join(event for event in events if isinstance(event, str)) == scripted_models()[family].plain
    assert events[-1].stop_reason is StopReason.END_OF_TURN


def test_a_call_cut_off_by_max_tokens_says_so(engines):
    events = events_of(engines("qwen3"), ASK, GREEDY.with_changes(max_tokens=15), tool_use_from_openai([WEATHER]))
    [call] = [event for event in events if isinstance(event, ToolCall)]
    assert call.name == "get_weather" and call.arguments == '{"city":'  # what it had when cut
    assert "cut off" in call.problem and "max_tokens" in call.problem
    assert events[-1].stop_reason is StopReason.LENGTH


def test_a_tool_choice_naming_no_offered_tool_fails_before_the_reply(engines):
    from app.engine.tools.types import ToolChoice, ToolChoiceMode, ToolUse

    use = ToolUse(tools=tool_use_from_openai([WEATHER]).tools, choice=ToolChoice(ToolChoiceMode.FUNCTION, "nope"))
    with pytest.raises(ToolsError, match="nope"):
        engines("qwen3").stream(ASK, GREEDY, threading.Event(), tools=use)


@pytest.fixture(scope="module")
def gemma(gemma_path):
    engine = Engine(gemma_path, LoadOptions(n_ctx=2048))
    yield engine
    engine.close()


def test_the_base_model_forced_to_call_writes_a_valid_call(gemma):
    """Gemma 3 270M has no tool template (the system note carries the tools) and is no chat
    model: the grammar alone makes its reply a call whose arguments satisfy the schema."""
    tool = {"type": "function", "function": {"name": "book_table", "parameters": {
        "type": "object", "additionalProperties": False, "required": ["guests", "day"],
        "properties": {"guests": {"type": "integer"}, "day": {"enum": ["friday", "saturday"]}}}}}
    use = tool_use_from_openai([tool, WEATHER], {"type": "function", "function": {"name": "book_table"}})
    events = events_of(gemma, [{"role": "user", "content": "A table for four on Friday."}],
                       SamplingParams(temperature=0.8, seed=5, max_tokens=96), use)
    [call] = check_streamed_as_openai(events)
    assert call.name == "book_table" and call.problem is None
    assert problem(json.loads(call.arguments), check_schema(tool["function"]["parameters"], "p")) is None
    assert events[-1].stop_reason is StopReason.TOOL_CALLS


def test_the_base_model_under_a_schema_writes_json_that_satisfies_it(gemma):
    schema = {"type": "object", "additionalProperties": False, "required": ["city", "rainy"],
              "properties": {"city": {"type": "string", "maxLength": 20}, "rainy": {"type": "boolean"}}}
    use = tool_use_from_openai(response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": schema}})
    events = events_of(gemma, ASK, SamplingParams(temperature=0.8, seed=9, max_tokens=96), use)
    assert events[-1].stop_reason is StopReason.END_OF_TURN
    assert problem(json.loads("".join(e for e in events if isinstance(e, str))), check_schema(schema, "s")) is None


def test_the_tools_are_part_of_the_reused_prefix(gemma):
    """A second request with the same tools evaluates only its new turn (bench/tool_prompt.py
    measures what that is worth with twenty)."""
    tools = [{"type": "function", "function": {"name": f"tool_{n}", "description": f"Tool number {n}",
                                               "parameters": WEATHER["function"]["parameters"]}} for n in range(4)]
    use = tool_use_from_openai(tools, "auto")
    first = events_of(gemma, ASK, GREEDY.with_changes(max_tokens=4), use)[-1]
    follow = ASK + [{"role": "assistant", "content": "Let me see."}, {"role": "user", "content": "Well?"}]
    second = events_of(gemma, follow, GREEDY.with_changes(max_tokens=4), use)[-1]
    assert first.prompt_tokens > 250 and second.evaluated_prompt_tokens < 40


def test_a_bias_on_a_token_past_the_vocabulary_is_skipped_under_a_grammar(gemma):
    """llama.cpp skips such a bias; the grammar's resample must too, not fail the reply."""
    use = tool_use_from_openai(response_format={"type": "json_object"})
    events = events_of(gemma, ASK, SamplingParams(temperature=0, max_tokens=48, logit_bias={300_000: 1.0, 5: -1.0}),
                       use)
    assert events[-1].error is None and events[-1].stop_reason is not StopReason.ERROR
