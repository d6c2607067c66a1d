"""POST /v1/responses bodies (OpenAI's Responses API) read into a typed request, or refused
with a 400 that names the field as the Responses API names it.

The Responses API says what Chat Completions says in other words: `input` items instead of
messages (a `function_call` item is an assistant's tool call, a `function_call_output` item
the tool's result), flat function tools, `text.format` for `response_format`,
`max_output_tokens` for `max_tokens`. Everything is turned into the chat form here (messages
as the chat templates take them, tools as OpenAI's chat `tools`), so the model gets exactly
what a chat request saying the same would give it, and the tools, tool choice and format
are checked by engine/tools/wire.py, as for a chat.

A user message's `input_image` parts are its images (image_parts.py reads them, as a chat's
image_url parts).

`instructions` hold for the request that sends them, as OpenAI's do: a response continued
with `previous_response_id` is not given the instructions of the one before. System and
developer messages in `input` are read the same way (they are not kept with the stored
conversation, whose messages are the user's, the model's and the tools').

What the server cannot do is refused rather than ignored: hosted tools (web search, file
search, computer use, MCP, ...), files and audio in the input, references to items
by id, OpenAI's stored conversations and prompt templates, background responses and
log-probabilities. Fields that change nothing here (`metadata`, `user`, `reasoning`,
`truncation`, `prompt_cache_key`, `service_tier`, ...) are accepted and ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..engine.sampling import SamplingError, SamplingParams
from ..engine.tools.types import ToolsError, ToolUse
from ..engine.tools.wire import tool_use_from_openai
from .errors import bad_request
from .image_parts import ImageSource, content_parts, responses_image
from .requests import ROLES, SAMPLING_FIELDS, chat_call, check_call_id, checked, json_object, optional

MAX_INPUT_ITEMS = 100_000  # a long agent run's whole history, sent again each turn
TEXT_PARTS = ("input_text", "output_text", "text")  # "text": what some clients send for either
# Item types the model can only get from OpenAI's own servers (hosted tools, reasoning it keeps).
_REFUSED_TOOL_WORDS = "this server offers function tools only; {kind!r} is a tool OpenAI runs on its own servers"
_UNSUPPORTED_FIELDS = {
    "conversation": "OpenAI's stored conversations (continue with previous_response_id)",
    "prompt": "prompt templates stored with OpenAI",
    "background": "background responses",
    "top_logprobs": "log-probabilities",
}


@dataclass(frozen=True)
class ResponsesRequest:
    """POST /v1/responses, in the chat form: `input` is the new messages (after the stored
    conversation of `previous_response_id`, if any), `instructions` the system message
    that comes first. `echo`: the fields a Response object repeats back as sent."""

    model: str
    input: list[dict]
    params: SamplingParams
    tools: ToolUse
    stream: bool
    store: bool
    instructions: str | None = None
    previous_response_id: str | None = None
    # The input's tool results: (index in `input`, the field to name if it answers no call).
    results: tuple[tuple[int, str], ...] = ()
    echo: dict = field(default_factory=dict)


def parse_responses(body: bytes, defaults: SamplingParams) -> ResponsesRequest:
    data = json_object(body)
    for name, what in _UNSUPPORTED_FIELDS.items():
        if data.get(name) not in (None, False, "", {}, 0):
            raise bad_request(f"{name}: this server does not support {what}.", param=name,
                              code="unsupported_parameter")
    if "message.output_text.logprobs" in (data.get("include") or ()):
        raise bad_request("include: this server does not return log-probabilities.", param="include",
                          code="unsupported_parameter")
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model: name the model to use (GET /v1/models lists it).", param="model")
    instructions = optional(data, "instructions", str, None)
    previous = optional(data, "previous_response_id", str, None)
    messages, results = _input(data.get("input"))
    return ResponsesRequest(
        model=model, input=messages, results=results, params=_sampling(data, defaults),
        tools=_tool_use(data), stream=optional(data, "stream", bool, False),
        store=optional(data, "store", bool, True), instructions=instructions,
        previous_response_id=previous, echo=_echo(data, instructions, previous))


def answered(history: list[dict], request: ResponsesRequest) -> list[dict]:
    """The request's input after `history` (the stored conversation it continues, if any),
    each tool result naming its call's tool. A result answers a call of the reply above it
    (other results of that reply may come between), as the chat templates and the store
    want it; one that does not is refused."""
    params = dict(request.results)
    calls = _calls_above(history)
    messages = []
    for index, message in enumerate(request.input):
        if message["role"] == "tool":
            name = calls.get(message["tool_call_id"])
            if name is None:
                raise bad_request(f"{params[index]}: the reply before this function_call_output made no function_call "
                                  f"with the call_id {message['tool_call_id'][:80]!r}.", param=params[index])
            message = {**message, "name": name}
        else:
            calls = _calls_of(message)
        messages.append(message)
    return messages


def _calls_above(history: list[dict]) -> dict[str, str]:
    """The calls a result added after `history` may answer: those of its last reply, above
    the results already given."""
    for message in reversed(history):
        if message["role"] != "tool":
            return _calls_of(message)
    return {}


def _calls_of(message: dict) -> dict[str, str]:
    return {call["id"]: call["function"]["name"] for call in message.get("tool_calls", ())}


def _sampling(data: dict, defaults: SamplingParams) -> SamplingParams:
    """temperature and top_p as OpenAI names them, max_output_tokens for max_tokens, and the
    llama.cpp extensions a chat request takes (top_k, min_p, seed, ...), checked by the bounds
    the engine and the parameters panel share."""
    changes = {}
    for name, param in [*((name, name) for name in SAMPLING_FIELDS), ("max_tokens", "max_output_tokens")]:
        value = data.get(param)
        if value is not None:
            changes[name] = checked(name, value, param)
    try:
        return defaults.with_changes(**changes)
    except SamplingError as exc:  # every field was checked alone; this is a safety net
        raise bad_request(str(exc)) from None


# --- tools, tool choice, text format: into the chat form, checked by wire.py ----------------------


def _tool_use(data: dict) -> ToolUse:
    try:
        return tool_use_from_openai(_chat_tools(data.get("tools")), _chat_tool_choice(data.get("tool_choice")),
                                    data.get("parallel_tool_calls"), _chat_format(data.get("text")))
    except ToolsError as exc:
        param = _responses_words(exc.param)
        message = _responses_words(str(exc))
        raise bad_request(f"{param}: {message}" if param else message, param=param, code="invalid_tools") from None


def _chat_tools(tools) -> list | None:
    """Flat function tools ({"type": "function", "name", "parameters", ...}) as chat tools;
    hosted tools refused by name."""
    if not isinstance(tools, list):
        return tools  # None, or not a list: wire.py says what tools must be
    chat = []
    for index, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind != "function":
            if not isinstance(kind, str):
                raise bad_request(f"tools[{index}] must be an object with a type.", param=f"tools[{index}]")
            raise bad_request(f"tools[{index}]: {_REFUSED_TOOL_WORDS.format(kind=kind[:40])}.",
                              param=f"tools[{index}].type", code="unsupported_parameter")
        function = {key: tool[key] for key in ("name", "description", "parameters", "strict")
                    if tool.get(key) is not None}
        chat.append({"type": "function", "function": function})
    return chat


def _chat_tool_choice(choice):
    """"auto", "none", "required" as they are; {"type": "function", "name"} in the chat form."""
    if not isinstance(choice, dict):
        return choice
    kind = choice.get("type")
    if kind == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    raise bad_request(f"tool_choice: this server chooses among function tools only, not {str(kind)[:40]!r}.",
                      param="tool_choice.type", code="unsupported_parameter")


def _chat_format(text) -> dict | None:
    """`text.format` as a chat `response_format`: a json_schema's name, schema, strict and
    description move under "json_schema" ("verbosity" changes nothing here)."""
    if text is None:
        return None
    if not isinstance(text, dict):
        raise bad_request("text must be an object such as {\"format\": {\"type\": \"text\"}}.", param="text")
    form = text.get("format")
    if not isinstance(form, dict) or form.get("type") != "json_schema":
        return form
    return {"type": "json_schema", "json_schema": {key: value for key, value in form.items() if key != "type"}}


# wire.py's field names in a chat request, and the same fields' names in a Responses request.
_CHAT_PARAMS = ((re.compile(r"^tools\[(\d+)\]\.function"), r"tools[\1]"), (re.compile(r"^tool_choice\.function"), "tool_choice"),
                (re.compile(r"^response_format(\.json_schema)?"), "text.format"))


def _responses_words(text: str | None) -> str | None:
    """A field named as wire.py names it for a chat (`tools[0].function.parameters`,
    `response_format.json_schema.schema`), or a message that begins with one, in the words
    of a Responses request."""
    if text is None:
        return None
    for pattern, replacement in _CHAT_PARAMS:
        text = pattern.sub(replacement, text)
    return text


# --- input items: into chat messages ------------------------------------------------------------


def _input(value) -> tuple[list[dict], tuple[tuple[int, str], ...]]:
    """The input as chat messages. A function_call item joins the assistant message before it
    (its text, and the other calls of the same turn), as a model writes several calls in one
    reply; a function_call_output becomes a tool message."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}], ()
    if not isinstance(value, list) or not value:
        raise bad_request("input must be a string or a non-empty list of input items.", param="input")
    if len(value) > MAX_INPUT_ITEMS:
        raise bad_request(f"input: at most {MAX_INPUT_ITEMS} items.", param="input")
    messages: list[dict] = []
    results: list[tuple[int, str]] = []
    for index, item in enumerate(value):
        param = f"input[{index}]"
        if not isinstance(item, dict):
            raise bad_request(f"{param} must be an object (a message, a function_call or a function_call_output).",
                              param=param)
        kind = item.get("type", "message")
        if kind == "message":
            messages.append(_message(param, item))
        elif kind == "function_call":
            call = _call(param, item)
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            results.append((len(messages), f"{param}.call_id"))
            messages.append(_result(param, item))
        elif kind == "item_reference":
            raise bad_request(f"{param}: this server does not keep items by id; send the item itself, or continue "
                              "a response with previous_response_id.", param=param, code="unsupported_parameter")
        elif kind == "reasoning":
            continue  # a model's reasoning summary sent back: nothing this server's models read
        else:
            raise bad_request(f"{param}: this server reads messages, function_call and function_call_output items, "
                              f"not {str(kind)[:40]!r}.", param=f"{param}.type", code="unsupported_parameter")
    return messages, tuple(results)


def _message(param: str, item: dict) -> dict:
    role = item.get("role")
    if role not in ROLES:
        raise bad_request(f"{param}.role must be one of user, assistant, system or developer.", param=f"{param}.role")
    text, images = _parts(item.get("content"), f"{param}.content", role)
    return {"role": ROLES[role], "content": text, **({"images": images} if images else {})}


def _text(content, param: str) -> str:
    """A function_call_output's text (which carries no images)."""
    return _parts(content, param, "tool")[0]


def _parts(content, param: str, role: str) -> tuple[str, tuple[ImageSource, ...]]:
    """A string, or a list of text parts (input_text, output_text; a refusal's text) and a
    user's input_image parts."""
    return content_parts(content, param, role, "input_image", responses_image, _text_of,
                         "text parts (input_text, output_text) and a user's input_image parts")


def _text_of(part: dict) -> str | None:
    kind = part.get("type")
    if kind == "refusal":
        return part.get("refusal")
    return part.get("text") if kind in TEXT_PARTS else None


def _call(param: str, item: dict) -> dict:
    """A function_call item as a chat tool call (its arguments the JSON text sent)."""
    return chat_call(item.get("call_id"), item.get("name"), item.get("arguments", "{}"), f"{param}.call_id",
                     f"{param}.name")


def _result(param: str, item: dict) -> dict:
    """A function_call_output item as a chat tool message (its tool's name added by `answered`)."""
    call_id = item.get("call_id")
    check_call_id(call_id, f"{param}.call_id")
    return {"role": "tool", "tool_call_id": call_id, "content": _text(item.get("output"), f"{param}.output")}


def _echo(data: dict, instructions: str | None, previous: str | None) -> dict:
    """What a Response repeats of its request: its tools and choices as sent."""
    return {"instructions": instructions, "previous_response_id": previous, "tools": data.get("tools") or [],
            "tool_choice": data.get("tool_choice") or "auto",
            "parallel_tool_calls": data.get("parallel_tool_calls") is True,
            "text": {"format": (data.get("text") or {}).get("format") or {"type": "text"}},
            "temperature": data.get("temperature"), "top_p": data.get("top_p"),
            "max_output_tokens": data.get("max_output_tokens"), "metadata": data.get("metadata") or {}}
