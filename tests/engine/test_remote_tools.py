"""Tools through a remote model: the RemoteBackend sends them as OpenAI's fields and turns
the server's streamed `delta.tool_calls` back into ToolCallDelta and ToolCall events.

The server is a real `hearth serve` on the scripted Qwen 3 model (whose reply is a call, by
construction): a real server that really returns calls, which llama-cpp-python's own server
never does. The pieces servers send differently (llama.cpp, vLLM, a whole call in one chunk)
are read by RemoteCalls, tested here on those shapes directly.
"""

from __future__ import annotations

import json
import threading

import pytest
from support.model_files.scripted_models import scripted_models
from support.reply_events import every_event
from support.served import Served

from app.engine.opening import open_backend
from app.engine.remote.tool_calls import MAX_ARGUMENT_CHARS, RemoteCalls
from app.engine.sampling import SamplingParams
from app.engine.tools.types import ToolCall, ToolCallDelta
from app.engine.tools.wire import call_problem, tool_use_from_openai
from app.engine.types import LoadOptions, RemoteModel, ServerConfig, StopReason

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                          "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
GREEDY = SamplingParams(temperature=0, max_tokens=80)


@pytest.fixture(scope="module")
def remote():
    served = Served(scripted_models()["qwen3"].path, "--ctx", "2048")
    backend = open_backend(RemoteModel(ServerConfig(served.base_url), served.model_id), LoadOptions())
    yield backend
    backend.close()
    served.stop()


def events_of(backend, messages, tools) -> list:
    return every_event(backend.stream(messages, GREEDY, threading.Event(), tools=tools))


def test_a_servers_call_comes_back_typed_and_streamed(remote):
    events = events_of(remote, ASK, tool_use_from_openai([WEATHER], "required"))
    [call] = [event for event in events if isinstance(event, ToolCall)]
    assert (call.name, json.loads(call.arguments), call.problem) == ("get_weather", {"city": "Paris"}, None)
    deltas = [event for event in events if isinstance(event, ToolCallDelta)]
    assert (deltas[0].id, deltas[0].name) == (call.id, "get_weather")
    assert "".join(delta.arguments for delta in deltas) == call.arguments
    assert events[-1].stop_reason is StopReason.TOOL_CALLS


def test_a_tool_use_history_goes_to_the_server(remote):
    use = tool_use_from_openai([WEATHER])
    first = [event for event in events_of(remote, ASK, use) if isinstance(event, ToolCall)][0]
    history = ASK + [{"role": "assistant", "content": "", "tool_calls": [first.to_openai()]},
                     {"role": "tool", "tool_call_id": first.id, "name": first.name, "content": "Sunny, 21 C"}]
    assert events_of(remote, history, use)[-1].stop_reason is StopReason.TOOL_CALLS  # the scripted model calls again


def assembled(chunks: list[list[dict]], use=tool_use_from_openai([WEATHER])) -> tuple[list, list[ToolCall]]:
    calls = RemoteCalls(lambda name, arguments: call_problem(use, name, arguments))
    deltas = [delta for pieces in chunks for delta in calls.take(pieces)]
    return deltas, calls.complete(None)


def test_a_whole_call_in_one_chunk_without_an_index():
    deltas, [call] = assembled([[{"id": "abc", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]])
    assert deltas == [ToolCallDelta(0, "abc", "get_weather", '{"city": "Oslo"}')]
    assert (call.id, call.problem) == ("abc", None)


def test_a_name_sent_again_and_arguments_before_the_name():
    _, [call] = assembled([
        [{"index": 0, "function": {"arguments": '{"city": '}}],
        [{"index": 0, "id": "x", "type": "function", "function": {"name": "get_weather", "arguments": '"Rome"'}}],
        [{"index": 0, "function": {"name": "get_weather", "arguments": "}"}}],
    ])
    assert (call.name, call.arguments, call.problem) == ("get_weather", '{"city": "Rome"}', None)


def test_parallel_calls_by_index_and_a_call_to_no_offered_tool():
    _, calls = assembled([[{"index": 1, "id": "b", "function": {"name": "rm_rf", "arguments": "{}"}},
                           {"index": 0, "id": "a", "function": {"name": "get_weather", "arguments": "{}"}}]])
    assert [(c.index, c.id) for c in calls] == [(0, "a"), (1, "b")]
    assert "city" in calls[0].problem and "not one of the tools offered" in calls[1].problem


def test_hostile_pieces_are_bounded_and_named():
    _, [call] = assembled([[{"index": 0, "function": {"name": "get_weather\x1b[31m", "arguments": "x" * 1000}}],
                           [{"index": 0, "function": {"arguments": "y" * MAX_ARGUMENT_CHARS}}],
                           [{"index": 10**9}, {"index": True}, "junk", None]])
    assert len(call.arguments) == MAX_ARGUMENT_CHARS and "cut" in call.problem
    assert "\x1b" not in call.name
