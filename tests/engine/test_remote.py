"""A remote model against a real OpenAI-compatible server: llama-cpp-python's own
`llama_cpp.server` on the real Gemma, on 127.0.0.1 (tests/support/remote_servers.py).

The reference for "the same reply" is the official `openai` client reading the same server
with the same request: Hearth's backend must write exactly what it reads.
"""

from __future__ import annotations

import threading

import openai
import pytest
from support.remote_servers import llama_server  # noqa: F401 - a fixture
from support.reply_events import collect

from app.engine.opening import open_backend
from app.engine.remote.backend import RemoteBackend
from app.engine.remote.errors import RemoteError, RemoteFailure
from app.engine.remote.models import list_models
from app.engine.sampling import PRESETS
from app.engine.templates.limits import TemplateError
from app.engine.types import SERVER_TEMPLATE, LoadOptions, RemoteModel, ServerConfig, StopReason

GREEDY = PRESETS["Precise"].with_changes(max_tokens=24, seed=7)
QUESTION = [{"role": "user", "content": "Name three colours of the rainbow."}]


@pytest.fixture(scope="module")
def server(llama_server):  # noqa: F811 - the fixture imported above
    return ServerConfig(llama_server.base_url, "llama server")


@pytest.fixture(scope="module")
def backend(server, llama_server):  # noqa: F811
    backend = open_backend(RemoteModel(server, llama_server.model_id), LoadOptions())
    yield backend
    backend.close()


def reply(backend, messages=QUESTION, params=GREEDY, cancel=None):
    """The reply's text and its statistics."""
    events = list(backend.stream(messages, params, cancel or threading.Event()))
    assert all(isinstance(event, str) for event in events[:-1])
    return "".join(events[:-1]), events[-1]


def openai_reply(llama_server, messages=QUESTION, params=GREEDY):  # noqa: F811
    """What the official client reads for the same request: (text, finish_reason)."""
    client = openai.OpenAI(base_url=llama_server.base_url, api_key="unused")
    stream = client.chat.completions.create(
        model=llama_server.model_id, messages=messages, stream=True, temperature=params.temperature,
        top_p=params.top_p, max_tokens=params.max_tokens, seed=params.seed, stop=list(params.stop) or None,
        presence_penalty=params.presence_penalty, frequency_penalty=params.frequency_penalty,
        extra_body={"top_k": params.top_k, "min_p": params.min_p, "repeat_penalty": params.repeat_penalty},
    )
    text, finish = [], None
    for chunk in stream:
        if chunk.choices:
            text.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    client.close()
    return "".join(text), finish


def test_the_servers_models_are_listed(server, llama_server):  # noqa: F811
    models = list_models(server)
    assert [model.model_id for model in models] == [llama_server.model_id]
    assert models[0].source(server) == RemoteModel(server, llama_server.model_id)


def test_a_reply_is_what_the_openai_client_reads(backend, llama_server):  # noqa: F811
    text, stats = reply(backend)
    expected, finish = openai_reply(llama_server)
    assert text == expected and text.strip()
    assert finish == "length" and stats.stop_reason is StopReason.LENGTH
    assert stats.error is None and stats.seed == 7
    # llama_cpp.server sends no usage: the counts stay unknown rather than invented,
    # and the rate counts the stream's pieces (one per token there).
    assert stats.completion_tokens is None
    assert 0 < stats.ttft_s < 30 and stats.tokens_per_s > 0


def test_a_stop_string_ends_the_reply_where_the_server_stopped(backend, llama_server):  # noqa: F811
    full, _ = reply(backend)
    word = full.split()[1]
    params = GREEDY.with_changes(stop=(word,))
    text, stats = reply(backend, params=params)
    assert (text, "stop") == openai_reply(llama_server, params=params)
    assert full.startswith(text) and word not in text
    # llama_cpp.server reports a stop string as "stop", as it does an end of turn
    assert stats.stop_reason is StopReason.END_OF_TURN


def test_stop_mid_reply_keeps_the_text_and_the_model_goes_on(backend):
    full, _ = reply(backend)
    cancel = threading.Event()
    pieces, stats = collect(backend.stream(QUESTION, GREEDY, cancel), cancel, cancel_after=3)
    assert stats.stop_reason is StopReason.CANCELLED and len(pieces) == 3
    assert full.startswith("".join(pieces)) and len("".join(pieces)) < len(full)
    assert reply(backend)[0] == full  # the connection Stop shut down is replaced


def test_a_remote_model_describes_itself_and_keeps_the_servers_template(backend, llama_server):  # noqa: F811
    description = backend.describe()
    assert description.is_remote and description.info is None and description.path is None
    assert description.template_name == SERVER_TEMPLATE and description.n_ctx is None
    assert description.unsent_fields == ("repeat_last_n",)  # llama_cpp.server took the extensions
    assert description.device.describe() == "llama server (remote)"
    assert description.record_name.startswith(llama_server.model_id[:50]) and description.record_name.endswith("@ llama server")
    assert backend.set_template_override(None) == SERVER_TEMPLATE
    with pytest.raises(TemplateError, match="own chat template"):
        backend.set_template_override("{{ messages }}")


def test_a_model_the_server_does_not_have_fails_when_chosen(server):
    with pytest.raises(RemoteError) as failure:
        RemoteBackend.open(RemoteModel(server, "gpt-imaginary"))
    assert failure.value.failure is RemoteFailure.UNKNOWN_MODEL
    assert "gpt-imaginary" in str(failure.value) and "gemma-3-270m" in str(failure.value)
