"""POST /v1/responses through the real Starlette app, read by the official `openai` client:
the request's items in the chat form the engine gets, the Response and its events as the
client parses them, refusals as 400s naming the field, and responses kept in a real
conversation database and continued by id.

The engine side is a stand-in Completions that records each job and answers with scripted
events (text, a tool call's deltas, its whole call, the ReplyStats), so every event order
the engine can give is tried in milliseconds; tests/serve/test_serve_responses_model.py runs
the same requests on the real model.
"""

from __future__ import annotations

import json

import openai
import pytest
from starlette.testclient import TestClient

from app.engine.tools.types import ToolCall, ToolCallDelta, ToolChoiceMode
from app.engine.types import ReplyStats, StopReason
from app.serve.app import create_app
from app.serve.completions import ServedModel
from app.serve.kept_responses import KeptResponses
from app.store import ConversationStore

MODEL = "stand-in.gguf"
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city.", "strict": True,
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                          "additionalProperties": False}}
ENDED = ReplyStats(prompt_tokens=12, evaluated_prompt_tokens=5, completion_tokens=3, stop_reason=StopReason.END_OF_TURN)
CALLED = ReplyStats(prompt_tokens=30, completion_tokens=9, stop_reason=StopReason.TOOL_CALLS)
CALL = [ToolCallDelta(0, "call_1", "get_weather", '{"city": '), ToolCallDelta(0, arguments='"Paris"}'),
        ToolCall(0, "call_1", "get_weather", '{"city": "Paris"}')]


class Scripted:
    """A Completions whose every job is answered with `script`, recorded in `jobs`."""

    def __init__(self):
        self.jobs = []
        self.script: list = ["Hello", " there", ENDED]

    def model(self) -> ServedModel:
        return ServedModel(MODEL, 2048)

    def submit(self, job, deliver, follow=None):  # its replies are scripted events, none to follow
        self.jobs.append(job)
        for event in self.script:
            deliver(event)
        return self

    def cancel(self) -> None:
        pass


@pytest.fixture
def database(tmp_path):
    return tmp_path / "conversations.sqlite3"


@pytest.fixture
def engine():
    return Scripted()


@pytest.fixture
def client(engine, database):
    with TestClient(create_app(engine, kept=KeptResponses(database))) as http:
        yield openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http, max_retries=0)


def respond(client, **fields):
    return client.responses.create(model=MODEL, **fields)


def stored(database) -> list[list[tuple]]:
    """Each stored conversation's branch, oldest conversation first: (role, content, the names of its calls,
    the call id its result answers)."""
    with ConversationStore(database, recover=False) as store:
        return [[(m.role, m.content, [c.name for c in m.tool_calls], m.tool_result and m.tool_result.call_id)
                 for m in store.messages(c.id)] for c in reversed(store.list_conversations())]


def test_a_text_reply_is_a_message_item_with_its_usage(client, engine):
    response = respond(client, input="Hi", instructions="Be brief.", max_output_tokens=50, temperature=0.3)
    assert response.object == "response" and response.status == "completed" and response.id.startswith("resp_")
    assert response.output_text == "Hello there" and response.model == MODEL
    (item,) = response.output
    assert item.type == "message" and item.role == "assistant" and item.status == "completed"
    assert item.content[0].type == "output_text" and item.id.startswith("msg_")
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (12, 3, 15)
    assert response.usage.input_tokens_details.cached_tokens == 7  # 12 prompt tokens, 5 evaluated
    job = engine.jobs[-1]
    assert job.messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert job.params.max_tokens == 50 and job.params.temperature == 0.3
    assert response.instructions == "Be brief." and response.max_output_tokens == 50 and response.store


def test_a_streamed_reply_sends_the_events_in_openais_order(client):
    events = list(respond(client, input="Hi", stream=True))
    assert [e.type for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Hello there"
    assert events[6].text == "Hello there" and events[8].item.content[0].text == "Hello there"
    created, completed = events[0].response, events[-1].response
    assert created.status == "in_progress" and created.output == [] and created.id == completed.id
    assert completed.output_text == "Hello there" and completed.usage.total_tokens == 15
    assert len({e.item_id for e in events if hasattr(e, "item_id")}) == 1


def test_a_tool_call_streams_as_a_function_call_item_after_the_text(client, engine):
    engine.script = ["Let me look.", *CALL, CALLED]
    events = list(respond(client, input="Weather in Paris?", tools=[WEATHER], tool_choice="required", stream=True))
    kinds = [e.type for e in events]
    assert kinds[kinds.index("response.output_item.done") + 1:] == [
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.completed"]
    added = events[kinds.index("response.output_item.done") + 1]
    assert added.output_index == 1 and added.item.type == "function_call" and added.item.name == "get_weather"
    assert added.item.call_id == "call_1" and added.item.id.startswith("fc_")
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert done.arguments == '{"city": "Paris"}' and done.item_id == added.item.id
    message, call = events[-1].response.output
    assert message.content[0].text == "Let me look." and call.arguments == '{"city": "Paris"}'
    tools = engine.jobs[-1].tools
    assert [t.name for t in tools.tools] == ["get_weather"] and tools.choice.mode is ToolChoiceMode.REQUIRED
    assert tools.tools[0].parameters == WEATHER["parameters"]


def test_a_call_and_its_output_continue_by_id_in_one_stored_conversation(client, engine, database):
    first = respond(client, input="Hi")
    engine.script = [*CALL, CALLED]
    called = respond(client, input="Weather in Paris?", previous_response_id=first.id, tools=[WEATHER])
    (call,) = called.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Paris"}
    engine.script = ["Sunny.", ENDED]
    answer = respond(client, previous_response_id=called.id, tools=[WEATHER],
                     input=[{"type": "function_call_output", "call_id": call.call_id, "output": "22 C, sunny"}])
    assert answer.output_text == "Sunny." and answer.previous_response_id == called.id
    assert engine.jobs[-1].messages == [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there"},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "22 C, sunny"}]
    assert stored(database) == [[
        ("user", "Hi", [], None), ("assistant", "Hello there", [], None), ("user", "Weather in Paris?", [], None),
        ("assistant", "", ["get_weather"], None), ("tool", "22 C, sunny", [], "call_1"),
        ("assistant", "Sunny.", [], None)]]


def test_continuing_a_response_twice_branches_its_conversation(client, database):
    first = respond(client, input="Hi")
    respond(client, input="One", previous_response_id=first.id)
    respond(client, input="Two", previous_response_id=first.id)
    one, two = stored(database)
    assert [m[1] for m in one] == ["Hi", "Hello there", "One", "Hello there"]
    assert [m[1] for m in two] == ["Hi", "Hello there", "Two", "Hello there"]


def test_a_whole_history_sent_as_input_is_read_and_kept_as_sent(client, engine, database):
    """What openai-agents sends without previous_response_id: every item so far, the model's
    own output items (ids, statuses, annotations) included."""
    engine.script = ["Sunny.", ENDED]
    respond(client, input=[
        {"role": "user", "content": "Weather in Paris?"},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
        {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}',
         "status": "completed"},
        {"id": "fc_2", "type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": '{"city":"Rome"}'},
        {"type": "function_call_output", "call_id": "c2", "output": "hot"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "mild"}]},
    ], tools=[WEATHER])
    assert engine.jobs[-1].messages[1:] == [
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "hot", "name": "get_weather"},
        {"role": "tool", "tool_call_id": "c1", "content": "mild", "name": "get_weather"}]
    assert [m[0] for m in stored(database)[0]] == ["user", "assistant", "tool", "tool", "assistant"]


def test_a_response_sent_with_store_false_is_not_kept_and_cannot_be_continued(client, database):
    response = respond(client, input="Hi", store=False)
    assert response.output_text == "Hello there" and not database.exists()  # never even opened
    with pytest.raises(openai.NotFoundError) as raised:
        respond(client, input="More", previous_response_id=response.id)
    assert raised.value.body["code"] == "previous_response_not_found"
    assert raised.value.body["param"] == "previous_response_id"


def test_a_server_that_keeps_nothing_answers_and_says_it_did_not_keep(engine):
    """The window's "Serve the loaded model", which is given no database."""
    with TestClient(create_app(engine)) as http:
        answer = http.post("/v1/responses", json={"model": MODEL, "input": "Hi"}).json()
        again = http.post("/v1/responses", json={"model": MODEL, "input": "Hi", "previous_response_id": answer["id"]})
    assert answer["store"] is False and answer["output"][0]["content"][0]["text"] == "Hello there"
    assert again.status_code == 404 and again.json()["error"]["code"] == "previous_response_not_found"


@pytest.mark.parametrize("unknown", ["resp_123456", "resp_x1", "chatcmpl-1", "resp_" + "9" * 40])
def test_an_unknown_previous_response_is_a_404_before_the_model_runs(client, engine, unknown):
    with pytest.raises(openai.NotFoundError) as raised:
        respond(client, input="Hi", previous_response_id=unknown)
    assert raised.value.body["code"] == "previous_response_not_found" and not engine.jobs


def test_a_database_that_cannot_be_opened_is_an_error_that_says_so(engine, tmp_path):
    damaged = tmp_path / "conversations.sqlite3"
    damaged.write_bytes(b"not a database" * 100)
    with TestClient(create_app(engine, kept=KeptResponses(damaged))) as http:
        answer = http.post("/v1/responses", json={"model": MODEL, "input": "Hi"})
        assert answer.status_code == 500 and "conversation database" in answer.json()["error"]["message"]
        assert '"store": false' in answer.json()["error"]["message"] and not engine.jobs  # said before the model ran
        unkept = http.post("/v1/responses", json={"model": MODEL, "input": "Hi", "store": False})
    assert unkept.status_code == 200 and unkept.json()["output"][0]["content"][0]["text"] == "Hello there"


@pytest.mark.parametrize("fields, param", [
    ({"input": []}, "input"),
    ({"input": 3}, "input"),
    ({"input": [{"role": "wizard", "content": "Hi"}]}, "input[0].role"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "input[0].content[0].image_url"),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}, "input[0].content[0]"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
    ({"input": [{"type": "web_search_call", "id": "ws_1"}]}, "input[0].type"),
    ({"input": [{"type": "function_call_output", "call_id": "nobody", "output": "x"}]}, "input[0].call_id"),
    ({"input": [{"type": "function_call", "call_id": "", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
    ({"input": "Hi", "tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"input": "Hi", "tools": [{"type": "file_search", "vector_store_ids": []}]}, "tools[0].type"),
    ({"input": "Hi", "tool_choice": {"type": "web_search_preview"}}, "tool_choice.type"),
    ({"input": "Hi", "tools": [{"type": "function", "name": "bad name"}]}, "tools[0].name"),
    ({"input": "Hi", "tools": [WEATHER], "tool_choice": {"type": "function", "name": "other"}}, "tool_choice.name"),
    ({"input": "Hi", "tool_choice": "required"}, "tool_choice"),
    ({"input": "Hi", "text": {"format": {"type": "json_schema", "name": "x"}}}, "text.format.schema"),
    ({"input": "Hi", "text": {"format": {"type": "xml"}}}, "text.format.type"),
    ({"input": "Hi", "temperature": 9}, "temperature"),
    ({"input": "Hi", "max_output_tokens": 0}, "max_output_tokens"),
    ({"input": "Hi", "conversation": "conv_1"}, "conversation"),
    ({"input": "Hi", "background": True}, "background"),
    ({"input": "Hi", "include": ["message.output_text.logprobs"]}, "include"),
    ({"input": "Hi", "stream": "yes"}, "stream"),
    ({"input": "Hi", "previous_response_id": 7}, "previous_response_id"),
])
def test_what_the_server_cannot_do_is_a_400_naming_the_field(client, engine, fields, param):
    with pytest.raises(openai.BadRequestError) as raised:
        respond(client, **fields)
    assert raised.value.body["param"] == param and raised.value.body["message"]
    assert not engine.jobs


def test_fields_that_change_nothing_are_accepted(client):
    response = respond(client, input="Hi", metadata={"k": "v"}, user="u", truncation="auto",
                       reasoning={"effort": "low"}, prompt_cache_key="k", include=[], service_tier="auto",
                       text={"format": {"type": "text"}, "verbosity": "low"})
    assert response.status == "completed"


def test_a_reply_cut_at_max_output_tokens_is_incomplete(client, engine):
    engine.script = ["Hel", ReplyStats(prompt_tokens=5, completion_tokens=1, stop_reason=StopReason.LENGTH)]
    response = respond(client, input="Hi", max_output_tokens=1)
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    events = list(respond(client, input="Hi", max_output_tokens=1, stream=True))
    assert events[-1].type == "response.incomplete" and events[-1].response.output_text == "Hel"


def test_a_reply_that_fails_midway_ends_its_stream_with_response_failed(client, engine, database):
    engine.script = ["Hel", ReplyStats(completion_tokens=1, stop_reason=StopReason.ERROR, error="The GPU went away.")]
    events = list(respond(client, input="Hi", stream=True))
    assert events[-1].type == "response.failed"
    assert events[-1].response.error.message == "The GPU went away." and events[-1].response.status == "failed"
    assert stored(database)[0][-1][:2] == ("assistant", "Hel")
    with pytest.raises(openai.InternalServerError):
        respond(client, input="Hi")
