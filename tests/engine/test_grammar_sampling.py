"""The reply sampler on the real Gemma 3 270M, through the Engine's own decode loop (drafting
on): unchanged without a grammar; under a response schema or a forced call the base model
writes JSON that parses and validates; a lazy grammar does nothing until its trigger."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from support.reply_events import collect

from app.engine.llama import generator
from app.engine.llama.generator import Engine
from app.engine.llama.grammar import calls_grammar, reply_grammar, response_grammar
from app.engine.llama.reply_sampler import ReplySampler
from app.engine.sampling import SamplingParams
from app.engine.tools.formats import BY_NAME, Opener, ToolFormat
from app.engine.tools.schema import check_schema, problem
from app.engine.tools.types import ResponseFormat, ResponseKind
from app.engine.tools.wire import call_problem, tool_use_from_openai
from app.engine.types import LoadOptions, StopReason

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=24)
PARIS = [{"role": "user", "content": "Describe Paris as JSON with name, country, population."}]
CITY = {"type": "object", "additionalProperties": False, "required": ["name", "country", "capital"], "properties": {
    "name": {"type": "string", "maxLength": 12}, "country": {"enum": ["France", "Spain"]}, "capital": {"type": "boolean"}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "additionalProperties": False, "required": ["city", "unit"], "properties": {
        "city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["c", "f"]}}}}}


def call_format(opener: str = "<tool_call>", closer: str = "</tool_call>") -> ToolFormat:
    """Hermes's row (formats.py) with other markers around the call, for the lazy tests:
    OPENER {"name": ..., "arguments": {...}} CLOSER."""
    return replace(BY_NAME["hermes"], openers=(Opener(opener),),
                   spelling=opener + '\n{"name": {name_json}, "arguments": {arguments}}\n' + closer, call_end=closer)


@pytest.fixture(scope="module")
def engine(gemma_path):
    engine = Engine(gemma_path, LoadOptions(n_ctx=1024))
    yield engine
    engine.close()


def reply(engine, messages, params, grammar=None):
    """A reply through the Engine's own loop, its sampler given `grammar` (the Engine builds
    its grammar from a request's tools; these tests hand it one directly)."""
    made: list[ReplySampler] = []

    def sampler(llm, params, seed, _grammar, stop_tokens):
        made.append(ReplySampler(llm, params, seed, grammar, stop_tokens))
        return made[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(generator, "ReplySampler", sampler)
        chunks, stats = collect(engine.stream(messages, params))
    return "".join(chunks), stats, made[-1]


def test_without_a_grammar_the_tokens_are_unchanged(engine):
    for params in (GREEDY, SamplingParams(temperature=0.9, seed=11, max_tokens=24, logit_bias={236761: 2.0})):
        before = collect(engine.stream(PARIS, params))
        text, stats, _ = reply(engine, PARIS, params)
        assert text == "".join(before[0]) and stats.completion_tokens == before[1].completion_tokens


@pytest.mark.parametrize("params", [GREEDY, SamplingParams(temperature=0.8, seed=3, max_tokens=48)])
def test_a_base_model_under_a_schema_writes_valid_json(engine, params):
    schema = check_schema(CITY, "schema")
    text, stats, sampler = reply(engine, PARIS, params.with_changes(max_tokens=48),
                                 response_grammar(ResponseFormat(ResponseKind.JSON_SCHEMA, schema)))
    assert stats.stop_reason is StopReason.END_OF_TURN
    assert problem(json.loads(text), schema) is None
    assert sampler.rejections > 0  # the model wanted otherwise: the grammar held it


def test_a_forced_call_is_a_valid_call(engine):
    use = tool_use_from_openai([WEATHER], "required")
    grammar = reply_grammar(call_format(), use)
    assert not grammar.lazy
    text, stats, _ = reply(engine, [{"role": "user", "content": "Weather in Oslo?"}], GREEDY.with_changes(max_tokens=48),
                           grammar)
    call = json.loads(re.fullmatch(r"\s*<tool_call>\s?(.*)</tool_call>", text, re.S).group(1))
    assert call["name"] == "get_weather"
    assert call_problem(use, call["name"], json.dumps(call["arguments"])) is None
    assert stats.stop_reason is StopReason.END_OF_TURN


def test_a_lazy_grammar_waits_for_its_trigger(engine):
    use = tool_use_from_openai([WEATHER], "auto")
    plain, _, _ = reply(engine, PARIS, GREEDY)
    assert " Paris" in plain  # the base model echoes the prompt: "Paris" comes as one token, space first
    never = calls_grammar(call_format("<never>"), use)
    assert never.lazy
    assert reply(engine, PARIS, GREEDY, never)[0] == plain
    text, stats, sampler = reply(engine, PARIS, GREEDY.with_changes(max_tokens=48),
                                 calls_grammar(call_format("Paris", "."), use))
    before, _, after = text.partition("Paris")
    assert plain.startswith(before + " ") or plain.startswith(before)
    call = json.loads(after.strip()[:-1])
    assert call_problem(use, call["name"], json.dumps(call["arguments"])) is None
    assert sampler.grammar_active and stats.stop_reason is StopReason.END_OF_TURN


ZOO = [  # one of each shape check_schema accepts, the converter's fixes included
    {}, {"description": "any value"}, {"type": ["string", "null"]}, {"oneOf": [{"const": "a"}, {"const": 1}]},
    {"type": "object", "properties": {"a": {"type": "string", "enum": ["x", "é"]}}, "additionalProperties": True},
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"type": "array", "items": {}, "minItems": 1, "maxItems": 3}, {"type": "array", "prefixItems": [{"type": "null"}]},
    {"type": "string", "pattern": r"^v\d+(\.\d+){0,2}[a-z ]*.$"}, {"type": "string", "format": "date-time"},
    {"type": "string", "format": "uuid"}, {"type": "string", "minLength": 1, "maxLength": 1000},
    {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}},
               "kids": {"type": "integer"}}, "type": "object",
     "properties": {"node": {"$ref": "#/$defs/node"}, "kids": {"$ref": "#/$defs/kids"}}},
]


def test_every_accepted_shape_compiles_for_the_model(engine):
    for schema in ZOO:
        grammar = response_grammar(ResponseFormat(ResponseKind.JSON_SCHEMA, check_schema(schema, "s")))
        ReplySampler(engine._llm, GREEDY, 0, grammar).close()


def test_grammars_are_cached_per_request_shape():
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "parameters": WEATHER["function"]["parameters"]}}
             for i in range(20)]
    hermes = call_format()
    first = calls_grammar(hermes, tool_use_from_openai(tools, "auto"))
    assert calls_grammar(hermes, tool_use_from_openai(json.loads(json.dumps(tools)), "auto")) is first
    assert first.gbnf.count("tool19-args ::=") == 1
