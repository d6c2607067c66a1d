"""The client libraries people point at a local server, each talking to a real `hearth serve` on
the real Gemma as its users write it: LangChain's ChatOpenAI, Pydantic AI's Agent, OpenAI's Agents
SDK, LiteLLM, and Simon Willison's llm (its Python API and its CLI). The official `openai`
client is tested on its own in test_serve_openai.py; here it gives the reference: greedy, every
library must get back byte for byte the reply the official client gets to the same message,
whole and streamed (a stream in more than one piece).

One server for the module, short greedy replies. Each library is built by a fixture from
`served` (the server's base URL and model id), so that a test of another feature (tools,
structured output) takes the same fixture and writes only its request.

Offline: nothing here may reach beyond this machine. LiteLLM fetches a price list when imported
unless LITELLM_LOCAL_MODEL_COST_MAP is set; LangSmith sends traces when LANGSMITH_TRACING asks,
the Agents SDK unless set_tracing_disabled. `offline` sets and clears those, and refuses, then
reports, any name looked up but this machine's.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys

import openai
import pytest
from support.served import ROOT, Served

PROMPT = "Say hello."
MAX_TOKENS = 8
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
LLM_MODEL = "hearth"  # the id the llm tests give the server in extra-openai-models.yaml


@pytest.fixture(scope="module", autouse=True)
def offline(tmp_path_factory):
    """The libraries' network habits off, and any lookup of a name beyond loopback refused
    (and reported when the module ends, in case a library swallowed the refusal)."""
    looked_up: list[str] = []
    real_getaddrinfo = socket.getaddrinfo

    def loopback_only(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name not in LOOPBACK:
            looked_up.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"test_clients.py is offline: {name}")
        return real_getaddrinfo(host, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "getaddrinfo", loopback_only)
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        for tracing in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
            patch.delenv(tracing, raising=False)
        patch.setenv("LLM_USER_PATH", str(tmp_path_factory.mktemp("llm-user")))
        yield
    assert not looked_up, f"a client library tried to reach {sorted(set(looked_up))}"


@pytest.fixture(scope="module")
def served(gemma_path, offline):
    server = Served(gemma_path, "--ctx", "1024")
    yield server
    assert server.stop() == 0, server.stderr


@pytest.fixture(scope="module")
def expected(served) -> str:
    """The official client's greedy reply to PROMPT, alone in the conversation."""
    with openai.OpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=60) as client:
        reply = client.chat.completions.create(model=served.model_id, messages=[{"role": "user", "content": PROMPT}],
                                               max_tokens=MAX_TOKENS, temperature=0)
    assert reply.choices[0].message.content
    return reply.choices[0].message.content


def check_streamed(pieces: list[str], expected: str) -> None:
    assert len([piece for piece in pieces if piece]) > 1, pieces  # it came as it was written
    assert "".join(pieces) == expected


# LangChain -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chat_openai(served):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=served.base_url, api_key="unused", model=served.model_id, max_tokens=MAX_TOKENS,
                      temperature=0, max_retries=0, timeout=60)


def test_langchain_chat_openai(chat_openai, expected):
    reply = chat_openai.invoke(PROMPT)
    assert reply.content == expected and reply.response_metadata["finish_reason"] == "length"
    check_streamed([chunk.content for chunk in chat_openai.stream(PROMPT)], expected)


# Pydantic AI -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pydantic_ai_model(served):
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(served.model_id, provider=OpenAIProvider(base_url=served.base_url, api_key="unused"))


def test_pydantic_ai_agent(pydantic_ai_model, expected):
    from pydantic_ai import Agent

    agent = Agent(pydantic_ai_model, model_settings={"max_tokens": MAX_TOKENS, "temperature": 0})
    assert agent.run_sync(PROMPT).output == expected
    with agent.run_stream_sync(PROMPT) as run:
        check_streamed(list(run.stream_text(delta=True, debounce_by=None)), expected)


# OpenAI Agents SDK -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def agents_model(served):
    """The SDK's Chat Completions model (its default, the Responses API, is not served yet)."""
    from agents import OpenAIChatCompletionsModel, set_tracing_disabled

    set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=60)
    return OpenAIChatCompletionsModel(model=served.model_id, openai_client=client)


def test_openai_agents(agents_model, expected):
    from agents import Agent, ModelSettings, Runner
    from openai.types.responses import ResponseTextDeltaEvent

    agent = Agent(name="Hearth", model=agents_model, model_settings=ModelSettings(max_tokens=MAX_TOKENS, temperature=0))

    async def whole_and_streamed() -> tuple[str, list[str]]:  # one loop: the client's connections belong to it
        whole = await Runner.run(agent, PROMPT)
        run = Runner.run_streamed(agent, PROMPT)
        return whole.final_output, [event.data.delta async for event in run.stream_events()
                                    if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent)]

    whole, pieces = asyncio.run(whole_and_streamed())
    assert whole == expected
    check_streamed(pieces, expected)


# LiteLLM ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def litellm_call(served):
    """litellm.completion aimed at the server ("openai/" + its model id: any OpenAI-compatible one)."""
    import litellm

    def call(**kwargs):
        return litellm.completion(model=f"openai/{served.model_id}", api_base=served.base_url, api_key="unused",
                                  **{"messages": [{"role": "user", "content": PROMPT}], **kwargs})

    return call


def test_litellm_completion(litellm_call, expected):
    reply = litellm_call(max_tokens=MAX_TOKENS, temperature=0)
    assert reply.choices[0].message.content == expected and reply.choices[0].finish_reason == "length"
    chunks = litellm_call(max_tokens=MAX_TOKENS, temperature=0, stream=True)
    check_streamed([chunk.choices[0].delta.content or "" for chunk in chunks], expected)


# llm -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llm_model(served):
    """The server as an llm model, as its documentation says: an entry in extra-openai-models.yaml
    of the user's llm directory (LLM_USER_PATH, a temporary one: `offline`)."""
    import llm

    (llm.user_dir() / "extra-openai-models.yaml").write_text(
        f"- model_id: {LLM_MODEL}\n  model_name: {served.model_id}\n  api_base: {served.base_url}\n")
    return llm.get_model(LLM_MODEL)


def llm_cli(*args: str) -> str:
    """`llm ARGS…` as a user types it (LLM_USER_PATH from `offline`); its stdout."""
    result = subprocess.run([sys.executable, "-m", "llm", *args], capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_llm_python_api(llm_model, expected):
    assert llm_model.prompt(PROMPT, stream=False, max_tokens=MAX_TOKENS, temperature=0).text() == expected
    check_streamed(list(llm_model.prompt(PROMPT, max_tokens=MAX_TOKENS, temperature=0)), expected)


def test_llm_cli(llm_model, expected):
    options = ["-o", "max_tokens", str(MAX_TOKENS), "-o", "temperature", "0"]
    assert llm_cli("-m", LLM_MODEL, PROMPT, "--no-stream", *options) == expected + "\n"
    assert llm_cli("-m", LLM_MODEL, PROMPT, *options) == expected + "\n"  # streamed to the terminal
