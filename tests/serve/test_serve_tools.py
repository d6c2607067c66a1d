"""Tool calls through a real `hearth serve`, on the scripted Qwen 3 model whose reply is a
call by construction: what a client gets for a call that cannot run as written, and hostile
tool requests refused with a 400 while the server goes on serving.

(The default model under a forced tool, and the clients people use, are in test_clients.py.)
"""

from __future__ import annotations

import json

import httpx
import pytest
from support.model_files.scripted_models import scripted_models
from support.served import openai_client, serving

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                          "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
CUT = 15  # tokens: the call's name is written, its arguments are not finished


@pytest.fixture(scope="module")
def served():
    with serving(scripted_models()["qwen3"].path, "--ctx", "2048") as server:
        yield server


@pytest.fixture(scope="module")
def client(served):
    with openai_client(served, timeout=60) as client:
        yield client


def ask(client, served, **fields):
    return client.chat.completions.create(model=served.model_id, messages=ASK, tools=[WEATHER], temperature=0,
                                          **fields)


def test_a_call_cut_off_says_so_whole(client, served):
    reply = ask(client, served, max_tokens=CUT)
    [call] = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and "cut off" in call.model_extra["problem"]
    assert reply.choices[0].finish_reason == "length"


def test_a_call_cut_off_says_so_streamed(client, served):
    problems, names = [], []
    for chunk in ask(client, served, max_tokens=CUT, stream=True):
        for piece in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            names += [piece.function.name] if piece.function and piece.function.name else []
            problems += [piece.model_extra["problem"]] if "problem" in (piece.model_extra or {}) else []
    assert names == ["get_weather"] and len(problems) == 1 and "cut off" in problems[0]


def test_a_valid_call_carries_no_problem(client, served):
    [call] = ask(client, served, max_tokens=80).choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"city": "Paris"} and "problem" not in (call.model_extra or {})


HOSTILE = [
    {"tools": [{"type": "function", "function": {"name": "x" * 65}}]},
    {"tools": [{"type": "function", "function": {"name": "a\nb"}}]},
    {"tools": [WEATHER, WEATHER]},
    {"tools": [{"type": "function", "function": {"name": "deep", "parameters": json.loads(
        '{"type": "object", "properties": {"a": ' * 300 + "{}" + "}}" * 300)}}]},
    {"tools": [{"type": "function", "function": {"name": "loop", "parameters": {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}}}]},
    {"tools": [{"type": "function", "function": {"name": "big", "parameters": {
        "type": "object", "properties": {f"p{n}": {"type": "string"} for n in range(20_000)}}}}]},
    {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "rm_rf"}}},
    {"messages": [{"role": "tool", "tool_call_id": "nobody", "content": "42"}]},
    {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "allOf": [{"type": "object"}]}}}},
]


@pytest.mark.parametrize("fields", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_tool_requests_get_a_400_and_the_server_goes_on(served, fields):
    body = {"model": served.model_id, "messages": ASK, "max_tokens": 4, **fields}
    with httpx.Client(base_url=served.base_url, timeout=60) as http:
        refused = http.post("/chat/completions", json=body)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["message"] and refused.json()["error"]["param"]
        assert http.post("/chat/completions", json={"model": served.model_id, "messages": ASK,
                                                    "max_tokens": 2}).status_code == 200


def test_a_responses_call_cut_off_is_an_incomplete_item(client, served):
    tool = {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"]}
    response = client.responses.create(model=served.model_id, input=ASK[0]["content"], tools=[tool], temperature=0,
                                       max_output_tokens=CUT, store=False)
    [call] = [item for item in response.output if item.type == "function_call"]
    assert response.status == "incomplete" and call.status == "incomplete" and call.name == "get_weather"
