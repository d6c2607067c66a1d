"""The engine process's wire (#29): the engine's typed values to JSON frames and back,
each checked against its declared types; a hostile or broken other side gets a ProtocolError or
ChannelClosed, never a value of the wrong shape or an exception from inside a constructor."""

from __future__ import annotations

import json
import math
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from app.engine.gguf.reading import inspect_model
from app.engine.logprobs import Alternative, TokenLogprob
from app.engine.options import LoadOptions
from app.engine.process.codec import CLASSES, MAX_DEPTH, ProtocolError, decode, encode
from app.engine.process.frames import (
    MAX_FRAME_BYTES,
    ChannelClosed,
    FrameSocket,
    checked,
    frame,
)
from app.engine.sampling import SamplingParams
from app.engine.tools.types import ToolCall, ToolCallDelta, ToolChoice, ToolUse
from app.engine.types import DeviceInfo, LocalModel, ModelDescription, ReplyStats, StopReason

EVENTS = [
    ReplyStats(prompt_tokens=12, evaluated_prompt_tokens=3, completion_tokens=7, ttft_s=0.04, tokens_per_s=33.5,
               stop_reason=StopReason.END_OF_TURN, seed=42),
    ReplyStats.failed("llama.cpp crashed"),
    ToolCall(0, "call_1", "get_weather", '{"city": "Zürich"}', None),
    ToolCallDelta(0, "call_1", "get_weather", '{"ci'),
    TokenLogprob("Hi", -0.25, b"Hi", (Alternative("Hi", -0.25, b"Hi"), Alternative("bytes:\\xe2", -1.5, b"\xe2"))),
    "plain text, with ünïcode and \u2028",
    SamplingParams(temperature=0.0, max_tokens=9),
    # A logit bias's keys are token ids: JSON spells them as strings, and they come back as ints.
    SamplingParams(temperature=0.7, logit_bias={1: -100.0, 262143: 2.5}, stop=("\n\n", "User:"), seed=7),
    ToolUse(),
    LoadOptions(),
]


def wire(value):
    return json.loads(json.dumps(encode(value), allow_nan=False))


@pytest.mark.parametrize("value", EVENTS, ids=lambda value: type(value).__name__)
def test_each_value_comes_back_as_it_went(value):
    assert decode(wire(value)) == value if not isinstance(value, str) else decode(wire(value), str) == value


def test_a_model_description_with_its_header_comes_back_whole(gemma_path):
    info = inspect_model(gemma_path)
    described = ModelDescription(LocalModel(gemma_path), info, DeviceInfo("CPU", 0, info.block_count, 2), 32768,
                                 "model", (), ("mlock was refused",))
    assert decode(wire(described), ModelDescription) == described
    assert len(json.dumps(encode(described))) < MAX_FRAME_BYTES


def test_floats_that_json_cannot_spell_travel():
    stats = decode(wire(ReplyStats(tokens_per_s=math.inf, ttft_s=math.nan)))
    assert stats.tokens_per_s == math.inf and math.isnan(stats.ttft_s)


HOSTILE = {
    "a class the protocol does not carry": {"$": "Popen", "args": ["rm", "-rf", "/"]},
    "a field the class does not have": {"$": "ReplyStats", "prompt_tokens": 1, "__class__": "x"},
    "a string where an int is declared": {"$": "ReplyStats", "prompt_tokens": "12"},
    "a bool where an int is declared": {"$": "ReplyStats", "prompt_tokens": True},
    "a stop reason that is none": {"$": "ReplyStats", "stop_reason": "exploded"},
    "a required field left out": {"$": "ToolCall", "index": 0, "id": "c"},
    "a token id that is no number": {"$": "SamplingParams", "logit_bias": {"1e9": 1.0}},
    "a token id of two signs": {"$": "SamplingParams", "logit_bias": {"--5": 1.0}},
    "an int too large to be any count": {"$": "ReplyStats", "prompt_tokens": 10**400},
    "a float too large to be any number": {"$": "ReplyStats", "ttft_s": 10**400},
    "a tuple that is an object": {"$": "TokenLogprob", "token": "a", "logprob": 0.0, "piece": "YQ==",
                                  "top": {"0": 1}},
    "bytes that are not base64": {"$": "Alternative", "token": "a", "logprob": 0.0, "piece": "not base64!"},
    "a path with a NUL": {"$": "LocalModel", "path": "/tmp/a\x00b"},
    "a class name that is not text": {"$": ["ReplyStats"]},
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_value_of_the_wrong_shape_is_a_protocol_error(name):
    with pytest.raises(ProtocolError):
        decode(HOSTILE[name])


def test_nesting_past_any_class_is_refused_not_recursed():
    deep = "x"
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(ProtocolError):
        decode({"$": "ToolUse", "tools": deep})


def test_only_the_protocol_classes_are_sent():
    class Stranger:
        pass

    with pytest.raises(ProtocolError):
        encode(Stranger())
    assert {"ReplyStats", "ModelDescription", "ToolCall", "SamplingParams", "LoadOptions"} <= set(CLASSES)


def test_frames_go_over_a_socket_pair_in_order():
    parent, child = socket.socketpair()
    reading, writing = FrameSocket(parent), FrameSocket(child)
    sender = threading.Thread(target=lambda: [writing.send("event", event) for event in EVENTS])
    sender.start()
    got = [checked(reading.read(), {"event": Any})[1] for _ in EVENTS]
    sender.join()
    assert got == EVENTS
    parent.close()
    child.close()


def test_a_frame_is_read_without_blocking_only_once_it_has_come_whole():
    """An event loop reads what has come and returns at once; a frame begun without blocking is
    finished by a blocking read, and the reader's buffer keeps the order (the served reply's
    tokens are read so, and its end by the owner's thread)."""
    parent, child = socket.socketpair()
    reading = FrameSocket(parent)
    data = b"".join(frame("event", text) for text in ("one", "two", "three"))
    first_end = 4 + int.from_bytes(data[:4], "big")
    assert reading.read_ready() is None  # nothing has come: None at once, not a wait
    child.sendall(data[:first_end - 2])
    assert reading.read_ready() is None  # most of a frame is not a frame
    child.sendall(data[first_end - 2:first_end + 3])
    assert reading.read_ready() == ("event", "one") and reading.read_ready() is None
    child.sendall(data[first_end + 3:])
    assert reading.read() == ("event", "two") and reading.read_ready() == ("event", "three")
    child.close()
    with pytest.raises(ChannelClosed):
        reading.read_ready()
    with pytest.raises(ChannelClosed):
        reading.read()
    parent.close()


def test_frames_go_whole_both_ways_over_a_socket_an_event_loop_left_non_blocking():
    """libuv (uvloop) sets a socket it watches non-blocking and leaves it so: a frame larger
    than the socket's buffer still goes whole, and a read still waits for what has not come."""
    parent, child = socket.socketpair()
    parent.setblocking(False)
    child.setblocking(False)
    ours, theirs = FrameSocket(parent), FrameSocket(child)
    big = "x" * (8 * 2**20)  # far more than a socket pair buffers
    sender = threading.Thread(target=lambda: [theirs.send("event", big), theirs.send("event", "after")])
    sender.start()
    assert ours.read() == ("event", big) and ours.read() == ("event", "after")
    sender.join()
    parent.close()
    child.close()


def test_a_frame_that_is_not_one_is_a_protocol_error_read_either_way():
    for read in (FrameSocket.read, FrameSocket.read_ready):
        parent, child = socket.socketpair()
        child.sendall((2).to_bytes(4, "big") + b"[]")
        with pytest.raises(ProtocolError):
            read(FrameSocket(parent))
        parent.close()
        child.close()


@pytest.fixture
def arrived():
    """arrived(raw): a FrameSocket on the reading end of a socket pair `raw` was sent on, the
    other end closed after it; the reading ends are closed after the test."""
    opened = []

    def arrive(raw: bytes) -> FrameSocket:
        reading, sending = socket.socketpair()
        opened.append(reading)
        sending.sendall(raw)
        sending.close()
        return FrameSocket(reading)

    yield arrive
    for reading in opened:
        reading.close()


def test_a_stream_that_ends_inside_a_frame_is_the_other_side_gone(arrived):
    with pytest.raises(ChannelClosed):
        arrived(frame("event", ReplyStats())[:-3]).read()
    with pytest.raises(ChannelClosed):
        arrived(b"").read()


@pytest.mark.parametrize("raw", [
    (MAX_FRAME_BYTES + 1).to_bytes(4, "big"),  # refused by its length, before a byte of it is read
    (4).to_bytes(4, "big") + b"\xff\xfe\xfd\xfc",
    (2).to_bytes(4, "big") + b"[]",
    (13).to_bytes(4, "big") + b'{"kind": "x"}',
], ids=["too long", "not UTF-8", "not an object", "no body"])
def test_a_frame_that_is_not_one_is_a_protocol_error(raw, arrived):
    with pytest.raises(ProtocolError):
        arrived(raw + b"\x00" * 8).read()


def test_a_kind_not_expected_is_a_protocol_error(arrived):
    with pytest.raises(ProtocolError, match="'shutdown' message"):
        checked(arrived(frame("shutdown")).read(), {"event": ReplyStats})


def test_a_tool_choice_keeps_its_mode():
    choice = ToolChoice()
    assert decode(wire(choice), ToolChoice) == choice and Path("/x") == decode("/x", Path)


def test_a_json_schema_travels_as_json():
    from app.engine.tools.types import ResponseFormat, ResponseKind, Tool

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    use = ToolUse(tools=(Tool("get_weather", "The weather.", schema),),
                  response_format=ResponseFormat(ResponseKind.JSON_SCHEMA, schema=schema))
    assert decode(wire(use), ToolUse) == use
    with pytest.raises(ProtocolError):
        decode({"$": "ResponseFormat", "kind": "json_schema", "schema": ["not", "an", "object"]})


def test_a_failure_raised_again_keeps_its_class_and_a_tools_errors_field():
    from app.engine.process.protocol import failure_of, raised
    from app.engine.templates.chat_template import MessageTooLongError
    from app.engine.templates.limits import TemplateError
    from app.engine.tools.types import ToolsError

    again = raised(decode(wire(failure_of(ToolsError("tools[0].function.name: too long", "tools")))))
    assert type(again) is ToolsError and again.param == "tools" and str(again) == "tools[0].function.name: too long"
    assert type(raised(decode(wire(failure_of(MessageTooLongError("too long")))))) is TemplateError
