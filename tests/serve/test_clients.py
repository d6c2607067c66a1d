"""The client libraries people point at a local server, each talking to a real `hearth serve` on
the real Gemma as its users write it: LangChain's ChatOpenAI, Pydantic AI's Agent, OpenAI's Agents
SDK, LiteLLM, and Simon Willison's llm (its Python API and its CLI). The official `openai`
client is tested on its own in test_serve_openai.py (and on /v1/responses, function tools
included, in test_serve_responses_model.py); here it gives the reference: greedy, every
library must get back byte for byte the reply the official client gets to the same message,
whole and streamed (a stream in more than one piece).

Tools and structured output, through each library as its users ask for them: a forced tool
(tool_choice required or named) or a JSON schema, on a base model that would write neither by
itself, so what is checked is what the grammar guarantees and a user relies on: a call to the
right tool whose arguments parse and satisfy the schema the library sent, JSON that validates,
never the model's wording. The official client's calls, streamed and in the history, are here
too, as the wire the libraries build on.

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
import json
import socket
import subprocess
import sys
from typing import Literal

import openai
import pytest
from pydantic import BaseModel
from support.served import ROOT, openai_client, serving

from app.engine.tools.schema import check_schema, problem

PROMPT = "Say hello."
MAX_TOKENS = 8
CALL_TOKENS = 64  # room for a whole call or JSON reply: one cut off would prove nothing
WEATHER_PROMPT = "What is the weather in Paris?"
CITY_PROMPT = "Name a city and its country."
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
                   "required": ["city", "unit"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time now in a time zone.",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
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
    with serving(gemma_path, "--ctx", "1024") as server:
        yield server


@pytest.fixture(scope="module")
def client(served):
    with openai_client(served, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def expected(served, client) -> str:
    """The official client's greedy reply to PROMPT, alone in the conversation."""
    reply = client.chat.completions.create(model=served.model_id, messages=[{"role": "user", "content": PROMPT}],
                                           max_tokens=MAX_TOKENS, temperature=0)
    assert reply.choices[0].message.content
    return reply.choices[0].message.content


def check_streamed(pieces: list[str], expected: str) -> None:
    assert len([piece for piece in pieces if piece]) > 1, pieces  # it came as it was written
    assert "".join(pieces) == expected


def valid(value: str | dict, schema: dict) -> dict:
    """`value` (JSON text, or what a library parsed from it), which must satisfy `schema`: the
    one the client sent, which the server must have held the model to."""
    parsed = json.loads(value) if isinstance(value, str) else value
    assert problem(parsed, check_schema(schema, "schema")) is None, parsed
    return parsed


class City(BaseModel):
    """The structured reply the libraries ask for, as their users declare it."""

    name: str
    country: str


# The official client ----------------------------------------------------------------------------


def ask_weather(client, served, **fields):
    return client.chat.completions.create(model=served.model_id, messages=[{"role": "user", "content": WEATHER_PROMPT}],
                                          tools=[WEATHER, TIME], max_tokens=CALL_TOKENS, temperature=0, **fields)


def test_openai_streams_a_required_call_as_openai_does(client, served):
    chunks = list(ask_weather(client, served, tool_choice="required", stream=True))
    deltas = [call for chunk in chunks for call in chunk.choices[0].delta.tool_calls or []]
    assert deltas and {delta.index for delta in deltas} == {0}  # one call: parallel_tool_calls is off
    first, rest = deltas[0], deltas[1:]
    assert first.id and first.function.name in ("get_weather", "get_time") and first.type == "function"
    assert rest and all(delta.id is None and delta.function.name is None for delta in rest)  # fragments after
    tool = WEATHER if first.function.name == "get_weather" else TIME
    valid("".join(delta.function.arguments or "" for delta in deltas), tool["function"]["parameters"])
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_openai_named_call_and_its_result_in_the_history(client, served):
    called = ask_weather(client, served, tool_choice={"type": "function", "function": {"name": "get_time"}})
    (call,) = called.choices[0].message.tool_calls
    assert call.function.name == "get_time" and called.choices[0].finish_reason == "tool_calls"
    valid(call.function.arguments, TIME["function"]["parameters"])
    history = [{"role": "user", "content": WEATHER_PROMPT}, called.choices[0].message.model_dump(exclude_none=True),
               {"role": "tool", "tool_call_id": call.id, "content": "12:00"}]
    # tool_choice "none" asks for the answer in words; under "auto" the base model may call again.
    answer = client.chat.completions.create(model=served.model_id, messages=history, tools=[WEATHER, TIME],
                                            tool_choice="none", max_tokens=MAX_TOKENS, temperature=0)
    assert answer.choices[0].message.content and not answer.choices[0].message.tool_calls
    assert answer.usage.prompt_tokens > called.usage.prompt_tokens  # the call and its result were read


def test_openai_strict_json_schema(client, served):
    schema = City.model_json_schema() | {"additionalProperties": False}
    reply = client.chat.completions.create(
        model=served.model_id, messages=[{"role": "user", "content": CITY_PROMPT}], max_tokens=CALL_TOKENS,
        temperature=0, response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema,
                                                                               "strict": True}})
    assert set(valid(reply.choices[0].message.content, schema)) == {"name", "country"}


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


def test_langchain_forced_tool_and_structured_output(chat_openai):
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    @tool
    def get_weather(city: str, unit: Literal["c", "f"]) -> str:
        """The current weather in a city."""
        raise AssertionError("LangChain's model only asks for the call; nothing here runs it")

    chat = chat_openai.model_copy(update={"max_tokens": CALL_TOKENS})
    (call,) = chat.bind_tools([get_weather], tool_choice="get_weather").invoke(WEATHER_PROMPT).tool_calls
    assert call["name"] == "get_weather" and call["id"]
    valid(call["args"], convert_to_openai_tool(get_weather)["function"]["parameters"])
    assert isinstance(chat.with_structured_output(City, method="json_schema").invoke(CITY_PROMPT), City)


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


@pytest.fixture(scope="module")
def pydantic_ai_responses_model(served):
    """Pydantic AI's model for the Responses API (/v1/responses)."""
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIResponsesModel(served.model_id, provider=OpenAIProvider(base_url=served.base_url, api_key="unused"))


def test_pydantic_ai_output_type(pydantic_ai_model, pydantic_ai_responses_model):
    """Both ways Pydantic AI asks for a typed output, through both its OpenAI models: its
    default, a tool it forces the model to call, and native structured output (response_format
    json_schema; the Responses API's text.format)."""
    from pydantic_ai import Agent, NativeOutput

    settings = {"max_tokens": CALL_TOKENS, "temperature": 0}
    for model in (pydantic_ai_model, pydantic_ai_responses_model):
        for output_type in (City, NativeOutput(City)):
            run = Agent(model, output_type=output_type, model_settings=settings).run_sync(CITY_PROMPT)
            assert isinstance(run.output, City)


# OpenAI Agents SDK -----------------------------------------------------------------------------


@pytest.fixture
def agents_model(served):
    """The SDK's Chat Completions model (its default, the Responses API model, is tested in
    test_serve_responses_model.py), one per test: an async client's pooled connections belong
    to the event loop that opened them, and each test runs its own."""
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


def test_openai_agents_function_tool(agents_model):
    """The SDK runs the tool the model must call, with arguments of the types its signature
    declares; its output ends the run (stop_on_first_tool), so what the base model would write
    after it is not what this is about. The Responses model: test_serve_responses_model.py."""
    from agents import Agent, ModelSettings, Runner, function_tool

    calls: list[tuple[str, int]] = []

    @function_tool
    def forecast(city: str, days: int) -> str:
        """The weather in a city over the next days."""
        calls.append((city, days))
        return "sunny"

    agent = Agent(name="Weather", model=agents_model, tools=[forecast], tool_use_behavior="stop_on_first_tool",
                  model_settings=ModelSettings(tool_choice="required", max_tokens=CALL_TOKENS, temperature=0))
    result = Runner.run_sync(agent, "The weather in Paris for the next 3 days?", max_turns=2)
    assert [(type(city), type(days)) for city, days in calls] == [(str, int)]
    assert result.final_output == "sunny"


def test_openai_agents_output_type(agents_model):
    from agents import Agent, ModelSettings, Runner

    agent = Agent(name="Cities", model=agents_model, output_type=City,
                  model_settings=ModelSettings(max_tokens=CALL_TOKENS, temperature=0))
    assert isinstance(Runner.run_sync(agent, CITY_PROMPT, max_turns=1).final_output, City)


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


def test_litellm_forced_tool(litellm_call):
    reply = litellm_call(messages=[{"role": "user", "content": WEATHER_PROMPT}], tools=[WEATHER, TIME],
                         tool_choice={"type": "function", "function": {"name": "get_weather"}},
                         max_tokens=CALL_TOKENS, temperature=0)
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and call.id and reply.choices[0].finish_reason == "tool_calls"
    valid(call.function.arguments, WEATHER["function"]["parameters"])


# llm -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llm_model(served):
    """The server as an llm model, as its documentation says: an entry in extra-openai-models.yaml
    of the user's llm directory (LLM_USER_PATH, a temporary one: `offline`), saying it takes
    schemas (llm refuses --schema otherwise)."""
    import llm

    (llm.user_dir() / "extra-openai-models.yaml").write_text(
        f"- model_id: {LLM_MODEL}\n  model_name: {served.model_id}\n  api_base: {served.base_url}\n"
        "  supports_schema: true\n")
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


def test_llm_cli_schema(llm_model):
    import llm

    printed = llm_cli("-m", LLM_MODEL, "--schema", "name, country", CITY_PROMPT,
                      "-o", "max_tokens", str(CALL_TOKENS), "-o", "temperature", "0")
    assert set(valid(printed, llm.schema_dsl("name, country"))) == {"name", "country"}
