"""OpenAI's tools, tool_choice and response_format read into a ToolUse, every refusal naming
its field; and the check each complete call goes through."""

from __future__ import annotations

import pytest

from app.engine.tools.types import ResponseKind, ToolChoiceMode, ToolsError
from app.engine.tools.wire import call_problem, tool_use_from_openai

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
CLOCK = {"type": "function", "function": {"name": "now"}}


def test_tools_choice_and_format_are_read():
    use = tool_use_from_openai([WEATHER, CLOCK], {"type": "function", "function": {"name": "now"}}, False,
                               {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"},
                                                                       "strict": True}})
    assert [tool.name for tool in use.tools] == ["get_weather", "now"]
    assert use.tools[1].parameters == {"type": "object", "properties": {}}
    assert (use.choice.mode, use.choice.name, use.parallel) == (ToolChoiceMode.FUNCTION, "now", False)
    assert (use.response_format.kind, use.response_format.name, use.response_format.strict) == (
        ResponseKind.JSON_SCHEMA, "out", True)


def test_plain_requests_and_none_without_tools():
    assert tool_use_from_openai().is_plain
    assert tool_use_from_openai(None, "none").is_plain
    assert tool_use_from_openai(response_format={"type": "json_object"}).response_format.kind is ResponseKind.JSON_OBJECT


def test_legacy_functions_read_as_tools():
    use = tool_use_from_openai(functions=[WEATHER["function"]], function_call={"name": "get_weather"})
    assert use.tools[0].name == "get_weather" and use.choice.name == "get_weather"


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, "<b>bold</b>", "tab\there", "nul\x00", "naïve"])
def test_bad_tool_names_are_refused(name):
    tool = {"type": "function", "function": {"name": name}}
    with pytest.raises(ToolsError) as caught:
        tool_use_from_openai([WEATHER, tool])
    assert caught.value.param == "tools[1].function.name"


@pytest.mark.parametrize("kwargs,param", [
    ({"tools": [WEATHER, WEATHER]}, "tools[1].function.name"),
    ({"tools": "get_weather"}, "tools"),
    ({"tools": [{"type": "retrieval"}]}, "tools[0].type"),
    ({"tools": [{"type": "function", "function": {"name": "f", "description": "x" * 9000}}]}, "tools[0].function.description"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}]}, "tools[0].function.parameters"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}}}}]}, "tools[0].function.parameters.properties.n"),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "now"}}}, "tool_choice.function.name"),
    ({"tools": [WEATHER], "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"response_format": {"type": "yaml"}}, "response_format.type"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "response_format.json_schema.schema"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"when": {"type": "string", "format": "hostname"}}}}}},
     "response_format.json_schema.schema.properties.when"),
])
def test_refusals_name_the_field(kwargs, param):
    with pytest.raises(ToolsError) as caught:
        tool_use_from_openai(**kwargs)
    assert caught.value.param == param


def test_call_problem():
    use = tool_use_from_openai([WEATHER, CLOCK])
    assert call_problem(use, "get_weather", '{"city": "Paris"}') is None
    assert call_problem(use, "now", "{}") is None
    assert "not one of the tools offered (get_weather, now)" in call_problem(use, "delete_all", "{}")
    assert "not JSON" in call_problem(use, "get_weather", '{"city": "Par')
    assert "not a JSON object" in call_problem(use, "get_weather", '["Paris"]')
    assert call_problem(use, "get_weather", '{"town": "Paris"}') == (
        'the arguments do not satisfy the schema: $: the required property "city" is missing')
    assert "not JSON" in call_problem(use, "get_weather", "[" * 100_000)
