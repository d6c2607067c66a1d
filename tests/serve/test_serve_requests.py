"""Request bodies read into typed requests: each field where the engine reads it, the rest defaults.

(The refusals, with their statuses, are tested through the server in test_serve_errors.py.)
"""

from __future__ import annotations

import json

import pytest

from app.engine.sampling import PRESETS, Drafting, SamplingParams
from app.serve.addresses import is_loopback
from app.serve.errors import ApiError
from app.serve.requests import parse_chat, parse_completion

DEFAULTS = PRESETS["Creative"]
USER = [{"role": "user", "content": "Hi"}]


def body(**fields) -> bytes:
    return json.dumps({"model": "m.gguf", "messages": USER, **fields}).encode()


def test_every_sampling_field_reaches_the_engine_typed():
    request = parse_chat(body(temperature=1, top_p=0.5, presence_penalty=-1, frequency_penalty=0.5, seed=9,
                              top_k=7, min_p=0.1, repeat_penalty=1.2, max_tokens=33, stop="END"), DEFAULTS)
    assert request.params == DEFAULTS.with_changes(
        temperature=1.0, top_p=0.5, presence_penalty=-1.0, frequency_penalty=0.5, seed=9, top_k=7, min_p=0.1,
        repeat_penalty=1.2, max_tokens=33, stop=("END",))
    assert isinstance(request.params.temperature, float)
    assert (request.model, request.stream, request.include_usage) == ("m.gguf", False, False)


def test_fields_left_out_or_null_take_the_servers_defaults():
    assert parse_chat(body(), DEFAULTS).params == DEFAULTS
    assert parse_chat(body(temperature=None, stop=None, seed=None, stream=None), DEFAULTS).params == DEFAULTS
    assert parse_chat(body(), SamplingParams()).params == SamplingParams()


def test_prompt_lookup_may_be_turned_off_per_request_and_nothing_else_is_taken():
    """Hearth's own `draft` field: "none" decodes one token at a time (a benchmark's fair side,
    bench/reference_speed.py), "lookup" is the default."""
    assert parse_chat(body(draft="none"), DEFAULTS).params.draft is Drafting.NONE
    assert parse_completion(json.dumps({"model": "m", "prompt": "x", "draft": "lookup"}).encode(),
                            DEFAULTS).params.draft is Drafting.LOOKUP
    for wrong in ("fast", 1, True):
        with pytest.raises(ApiError) as refused:
            parse_chat(body(draft=wrong), DEFAULTS)
        assert refused.value.param == "draft" and "'lookup' or 'none'" in refused.value.message


def test_max_completion_tokens_is_the_newer_name_for_max_tokens():
    assert parse_chat(body(max_completion_tokens=12), DEFAULTS).params.max_tokens == 12
    assert parse_chat(body(max_tokens=5, max_completion_tokens=12), DEFAULTS).params.max_tokens == 12


def test_messages_take_the_roles_templates_know_and_text_parts_become_text():
    request = parse_chat(body(messages=[
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Line one"}, {"type": "text", "text": "line two"}],
         "name": "ignored"},
        {"role": "assistant", "content": "Yes."},
        {"role": "user", "content": "More."},
    ]), DEFAULTS)
    assert request.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Line one\nline two"},
        {"role": "assistant", "content": "Yes."},
        {"role": "user", "content": "More."},
    ]


def test_streaming_and_its_usage_chunk_are_read():
    request = parse_chat(body(stream=True, stream_options={"include_usage": True}, stop=["a", "b"]), DEFAULTS)
    assert request.stream and request.include_usage and request.params.stop == ("a", "b")


def test_fields_that_change_nothing_are_ignored():
    """Accepted, not refused, and the request read is the one without them."""
    assert parse_chat(body(user="someone", metadata={"k": "v"}, store=False, n=1, logprobs=False, tools=[],
                           response_format={"type": "text"}), DEFAULTS) == parse_chat(body(), DEFAULTS)


def test_a_completion_takes_a_prompt_or_a_list_of_one():
    assert parse_completion(json.dumps({"model": "m", "prompt": "Once"}).encode(), DEFAULTS).prompt == "Once"
    assert parse_completion(json.dumps({"model": "m", "prompt": ["Once"]}).encode(), DEFAULTS).prompt == "Once"
    with pytest.raises(ApiError) as refused:
        parse_completion(json.dumps({"model": "m", "prompt": "Once", "echo": True}).encode(), DEFAULTS)
    assert (refused.value.status, refused.value.param) == (400, "echo")


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.2", False), ("example.com", False),
    ("LOCALHOST", False), ("", False),  # a name other than localhost: what it resolves to is not ours to promise
])
def test_only_this_machines_own_addresses_count_as_loopback(host, loopback):
    assert is_loopback(host) is loopback
