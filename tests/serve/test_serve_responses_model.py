"""/v1/responses on a real `hearth serve` and the real Gemma 3 270M, through the official
`openai` client and OpenAI's Agents SDK (whose default model speaks the Responses API).

Greedy replies, so a Response's text is byte for byte the chat reply to the same message.
The base model is weak; under `tool_choice: "required"` the grammar holds it to a call whose
arguments satisfy the tool's schema, which is the point. The responses are kept in the test
profile's conversation database (HEARTH_HOME, set by conftest.py), as `hearth serve` keeps
them in the user's, and continued by id.
"""

from __future__ import annotations

import openai
import pytest
from support.served import Served

PROMPT = "Say hello."


@pytest.fixture(scope="module")
def served(gemma_path):
    server = Served(gemma_path, "--ctx", "2048")
    yield server
    assert server.stop() == 0, server.stderr


@pytest.fixture(scope="module")
def client(served):
    with openai.OpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=120) as client:
        yield client


def respond(client, served, **fields):
    return client.responses.create(model=served.model_id, **{"temperature": 0, **fields})


def test_a_response_is_the_chat_reply_to_the_same_message(client, served):
    chat = client.chat.completions.create(model=served.model_id, messages=[{"role": "user", "content": PROMPT}],
                                          max_tokens=12, temperature=0)
    response = respond(client, served, input=PROMPT, max_output_tokens=12)
    assert response.output_text == chat.choices[0].message.content and response.output_text
    assert response.status in ("completed", "incomplete") and response.usage.output_tokens <= 12
    assert response.usage.input_tokens == chat.usage.prompt_tokens


def test_a_streamed_response_is_the_same_text_piece_by_piece(client, served):
    whole = respond(client, served, input=PROMPT, max_output_tokens=12)
    events = list(respond(client, served, input=PROMPT, max_output_tokens=12, stream=True))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == whole.output_text
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created" and events[-1].type in ("response.completed", "response.incomplete")
    assert events[-1].response.output_text == whole.output_text
