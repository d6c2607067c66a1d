"""Request bodies read into typed requests, or refused with a 400 that names the field.

No pydantic: the two bodies are small, and reading them here keeps the bundle ~5 MB lighter
and the limits in one place. The sampling bounds are `sampling.BOUNDS`, the same the
parameters panel and `hearth chat` use, so the server accepts exactly what the engine can do.
A field the request leaves out (or sends as null) takes the served model's default
(ServedModel.sampling: its author's general.sampling.* over the Balanced preset, what
`hearth chat` and the window start from). Tools, tool choice and response formats are read by
engine/tools/wire.py, which `hearth chat` shares; tool-use history (assistant calls and tool
results) is read here into the dicts the chat templates take.

Images come as OpenAI's `image_url` content parts of a user's message (image_parts.py reads
them; image_reading.py decodes or fetches them once the model is known to read images).

What the engine cannot do is refused rather than ignored, so a client is never told it got
something it did not: audio, files, predicted outputs, best_of. Fields that change nothing about the
reply (`user`, `metadata`, `store`, ...) are ignored, as llama.cpp's server ignores what it
does not know.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..engine.logprobs import MAX_TOP_LOGPROBS
from ..engine.sampling import BOUNDS, Drafting, SamplingError, SamplingParams
from ..engine.tools.types import PLAIN, ToolsError, ToolUse
from ..engine.tools.wire import tool_use_from_openai
from .completions import MAX_CHOICES
from .errors import bad_request
from .image_parts import ImageSource, chat_image, content_parts

MAX_BODY_BYTES = 16 * 2**20  # a 4-million-character message (the longest any prompt may be) as UTF-8
MAX_STOP_STRINGS = 16

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
MAX_CALLS_PER_MESSAGE = 128
MAX_CALL_ID_CHARS = 256
# Sampling fields under OpenAI's names and llama.cpp's extensions, all checked by sampling.BOUNDS.
SAMPLING_FIELDS = ("temperature", "top_p", "presence_penalty", "frequency_penalty", "seed",
                   "top_k", "min_p", "repeat_penalty")
# Fields whose meaning the engine cannot honour, refused when they ask for anything.
_UNSUPPORTED = {
    "audio": "audio", "prediction": "predicted outputs", "echo": "echoing the prompt", "suffix": "a suffix",
}
MAX_LOGIT_BIAS = 1024  # entries; OpenAI takes 300
LOGIT_BIAS_RANGE = 100.0  # OpenAI's: -100 bans a token, 100 all but forces it


@dataclass(frozen=True)
class ChatRequest:
    """POST /v1/chat/completions: a conversation for the model's own chat template."""

    model: str
    messages: list[dict]  # {"role", "content"}, roles as the templates know them
    params: SamplingParams
    stream: bool
    include_usage: bool  # stream_options.include_usage: a last chunk with the token counts
    n: int  # choices to write
    logprobs: int | None  # None: none asked; else alternatives per token (top_logprobs; 0 without it)
    tools: ToolUse = PLAIN


@dataclass(frozen=True)
class CompletionRequest:
    """POST /v1/completions: raw text the model continues, no template."""

    model: str
    prompt: str
    params: SamplingParams
    stream: bool
    include_usage: bool
    n: int
    logprobs: int | None  # the legacy `logprobs`: alternatives per token, None for none


def parse_chat(body: bytes, defaults: SamplingParams) -> ChatRequest:
    data = json_object(body)
    common = _common(data, defaults)
    try:
        tools = tool_use_from_openai(data.get("tools"), data.get("tool_choice"), data.get("parallel_tool_calls"),
                                     data.get("response_format"), functions=data.get("functions"),
                                     function_call=data.get("function_call"))
    except ToolsError as exc:
        raise bad_request(str(exc), param=exc.param, code="invalid_tools") from None
    return ChatRequest(messages=_messages(data.get("messages")), tools=tools, logprobs=_chat_logprobs(data), **common)


def parse_completion(body: bytes, defaults: SamplingParams) -> CompletionRequest:
    data = json_object(body)
    for name in ("tools", "functions", "tool_choice", "function_call"):
        if data.get(name) not in (None, [], "none"):
            raise bad_request(f"{name}: a raw completion has no chat template to offer tools in; "
                              "use /v1/chat/completions.", param=name, code="unsupported_parameter")
    response_format = data.get("response_format")
    if response_format not in (None, {"type": "text"}):
        raise bad_request("response_format: a raw completion writes plain text; use /v1/chat/completions "
                          "for JSON.", param="response_format", code="unsupported_parameter")
    common = _common(data, defaults)
    logprobs = data.get("logprobs")
    if logprobs is not None:
        logprobs = _top_count("logprobs", logprobs)
    return CompletionRequest(prompt=_prompt(data.get("prompt")), logprobs=logprobs, **common)


def json_object(body: bytes) -> dict:
    """The body as a JSON object; strict JSON (no NaN or Infinity, which no sampler takes)."""
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise bad_request(f"The request body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(data, dict):
        raise bad_request("The request body must be a JSON object.", code="invalid_json")
    return data


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _common(data: dict, defaults: SamplingParams) -> dict:
    """The fields both endpoints share: model, sampling, streaming."""
    for name, what in _UNSUPPORTED.items():
        if data.get(name) not in (None, False, [], {}, ""):
            raise bad_request(f"{name}: this server does not support {what}.", param=name, code="unsupported_parameter")
    if data.get("best_of") not in (None, 1):
        raise bad_request("best_of: this server does not rank candidates; leave best_of out (or 1), and use n "
                          "for several choices.", param="best_of", code="unsupported_parameter")
    n = data.get("n")
    if n is not None and (type(n) is not int or not 1 <= n <= MAX_CHOICES):
        raise bad_request(f"n must be a whole number from 1 to {MAX_CHOICES} (the choices are written one after "
                          "another while other requests wait).", param="n", code="invalid_value")
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model: name the model to use (GET /v1/models lists it).", param="model")
    stream = optional(data, "stream", bool, False)
    options = data.get("stream_options")
    if options is not None and not stream:
        raise bad_request("stream_options: only allowed when stream is true.", param="stream_options")
    if options is not None and not isinstance(options, dict):
        raise bad_request("stream_options must be an object.", param="stream_options")
    include_usage = optional(options or {}, "include_usage", bool, False, "stream_options.include_usage")
    return {"model": model, "params": _sampling(data, defaults), "stream": stream, "include_usage": include_usage,
            "n": n or 1}


def _chat_logprobs(data: dict) -> int | None:
    """A chat's `logprobs` (true or false) and `top_logprobs` (alternatives per token, which
    needs logprobs true, as OpenAI has it), as the number of alternatives; None for none."""
    asked = optional(data, "logprobs", bool, False)
    top = data.get("top_logprobs")
    if top is None:
        return 0 if asked else None
    if not asked:
        raise bad_request("top_logprobs: only allowed when logprobs is true.", param="top_logprobs")
    return _top_count("top_logprobs", top)


def _top_count(name: str, value) -> int:
    if type(value) is not int or not 0 <= value <= MAX_TOP_LOGPROBS:
        raise bad_request(f"{name} must be a whole number from 0 to {MAX_TOP_LOGPROBS}.", param=name,
                          code="invalid_value")
    return value


def _sampling(data: dict, defaults: SamplingParams) -> SamplingParams:
    changes = {}
    for name in SAMPLING_FIELDS:
        value = data.get(name)
        if value is not None:
            changes[name] = checked(name, value)
    # max_completion_tokens is OpenAI's newer name for max_tokens; either may come.
    for name in ("max_tokens", "max_completion_tokens"):
        value = data.get(name)
        if value is not None:
            changes["max_tokens"] = checked("max_tokens", value, name)
    stop = _stop(data.get("stop"))
    if stop is not None:
        changes["stop"] = stop
    bias = _logit_bias(data.get("logit_bias"))
    if bias:
        changes["logit_bias"] = bias
    draft = data.get("draft")  # Hearth's own field: prompt lookup on (the default) or off for this request
    if draft is not None:
        if draft not in [way.value for way in Drafting]:
            raise bad_request(f"draft must be {' or '.join(repr(way.value) for way in Drafting)}, not {str(draft)[:40]!r}.",
                              param="draft")
        changes["draft"] = Drafting(draft)
    try:
        return defaults.with_changes(**changes)
    except SamplingError as exc:  # every field was checked alone; this is a safety net
        raise bad_request(str(exc)) from None


def checked(name: str, value, param: str | None = None):
    """The value if `sampling.BOUNDS[name]` accepts it, as the type the engine wants."""
    try:
        BOUNDS[name].check(param or name, value)
    except SamplingError as exc:
        raise bad_request(str(exc), param=param or name, code="invalid_value") from None
    return value if BOUNDS[name].whole else float(value)


def _stop(value) -> tuple[str, ...] | None:
    if value is None:
        return None
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise bad_request("stop must be a string or a list of strings.", param="stop")
    if len(stops) > MAX_STOP_STRINGS:
        raise bad_request(f"stop: at most {MAX_STOP_STRINGS} stop strings.", param="stop")
    if not all(stops):
        raise bad_request("stop: a stop string cannot be empty.", param="stop")
    return tuple(stops)


def _logit_bias(value) -> dict[int, float] | None:
    """OpenAI's `logit_bias`: token ids (as JSON object keys, so strings) to a bias in ±100.
    llama.cpp's own sampler applies it; an id past the model's vocabulary is skipped there."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad_request("logit_bias must be an object of token ids to numbers.", param="logit_bias")
    if len(value) > MAX_LOGIT_BIAS:
        raise bad_request(f"logit_bias: at most {MAX_LOGIT_BIAS} tokens.", param="logit_bias")
    bias = {}
    for key, number in value.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 10 and int(key) < 2**31):
            raise bad_request(f"logit_bias: {key[:40]!r} is not a token id.", param="logit_bias")
        if isinstance(number, bool) or not isinstance(number, (int, float)) or abs(number) > LOGIT_BIAS_RANGE:
            raise bad_request(f"logit_bias[{key}] must be a number from -100 to 100.", param="logit_bias")
        bias[int(key)] = float(number)
    return bias


def optional(data: dict, name: str, kind: type, default, param: str | None = None):
    value = data.get(name)
    if value is None:
        return default
    if type(value) is not kind:
        raise bad_request(f"{param or name} must be {_KIND_WORDS[kind]}, not {json.dumps(value)[:40]}.",
                          param=param or name)
    return value


_KIND_WORDS = {bool: "true or false", str: "a string"}


def _messages(value) -> list[dict]:
    if value is None:
        raise bad_request("messages: a chat needs a list of messages.", param="messages")
    if not isinstance(value, list) or not value:
        raise bad_request("messages must be a non-empty list of {role, content} objects.", param="messages")
    calls: dict[str, str] = {}  # the ids of the calls made so far, to their tools' names
    return [_message(index, message, calls) for index, message in enumerate(value)]


def _message(index: int, message, calls: dict[str, str]) -> dict:
    """One message as the chat templates take it: {"role", "content"}, an assistant's calls as
    `tool_calls` (arguments as the JSON text the client sent), and a tool's result with the
    `tool_call_id` it answers and that call's tool `name` (templates print either)."""
    param = f"messages[{index}]"
    if not isinstance(message, dict):
        raise bad_request(f"{param} must be an object with a role and content.", param=param)
    role = message.get("role")
    if role == "tool":
        return _tool_result(param, message, calls)
    if role not in ROLES:
        if role == "function":
            raise bad_request(f"{param}.role: the legacy 'function' role is not supported; send tool results "
                              "as role 'tool' with the call's tool_call_id.", param=f"{param}.role")
        raise bad_request(f"{param}.role must be one of system, developer, user, assistant or tool.",
                          param=f"{param}.role")
    if message.get("function_call"):
        raise bad_request(f"{param}.function_call: the legacy form is not supported; send tool_calls.",
                          param=f"{param}.function_call", code="unsupported_parameter")
    tool_calls = message.get("tool_calls")
    if tool_calls not in (None, []):
        if role != "assistant":
            raise bad_request(f"{param}.tool_calls: only an assistant message makes calls.", param=f"{param}.tool_calls")
        content = message.get("content")
        text = "" if content is None else _content(content, f"{param}.content", role)
        return {"role": "assistant", "content": text, "tool_calls": _calls(f"{param}.tool_calls", tool_calls, calls)}
    if role == "user":
        return _user_message(message.get("content"), f"{param}.content")
    return {"role": ROLES[role], "content": _content(message.get("content"), f"{param}.content", role)}


def _calls(param: str, value, calls: dict[str, str]) -> list[dict]:
    """An assistant's tool calls in OpenAI's form, each remembered for the results that follow."""
    if not isinstance(value, list) or len(value) > MAX_CALLS_PER_MESSAGE:
        raise bad_request(f"{param} must be a list of at most {MAX_CALLS_PER_MESSAGE} calls.", param=param)
    read = []
    for index, call in enumerate(value):
        where = f"{param}[{index}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or call.get("type", "function") != "function":
            raise bad_request(f"{where} must be {{'id', 'type': 'function', 'function': {{'name', 'arguments'}}}}.",
                              param=where)
        made = chat_call(call.get("id"), function.get("name"), function.get("arguments", "{}"),
                         f"{where}.id", f"{where}.function.name")
        calls[made["id"]] = made["function"]["name"]
        read.append(made)
    return read


def chat_call(call_id, name, arguments, id_param: str, name_param: str) -> dict:
    """A tool call a client sends back, checked, in the chat form the templates take (its
    arguments the JSON text sent); a Responses function_call item is read by it too."""
    check_call_id(call_id, id_param)
    if not isinstance(name, str) or not name:
        raise bad_request(f"{name_param} must be a non-empty string.", param=name_param)
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)  # some clients send the object itself
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def check_call_id(call_id, param: str) -> None:
    if not isinstance(call_id, str) or not 0 < len(call_id) <= MAX_CALL_ID_CHARS:
        raise bad_request(f"{param} must be a string of 1 to {MAX_CALL_ID_CHARS} characters.", param=param)


def _tool_result(param: str, message: dict, calls: dict[str, str]) -> dict:
    """A tool's result: it must answer a call made earlier in the conversation, or no template
    could place it (and a model would read an answer to a question nobody asked)."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise bad_request(f"{param}.tool_call_id: a tool message names the call it answers.",
                          param=f"{param}.tool_call_id")
    if call_id not in calls:
        raise bad_request(f"{param}.tool_call_id: no call with the id {call_id[:80]!r} was made earlier in "
                          "the conversation.", param=f"{param}.tool_call_id")
    content = _content(message.get("content"), f"{param}.content", "tool")
    return {"role": "tool", "tool_call_id": call_id, "name": calls[call_id], "content": content}


def _user_message(content, param: str) -> dict:
    """A user's message: its text, and its images' sources under "images" where it has any."""
    text, images = _parts(content, param, "user")
    return {"role": "user", "content": text, **({"images": images} if images else {})}


def _content(content, param: str, role: str) -> str:
    """The text of a message that is not a user's (such a message carries no images)."""
    return _parts(content, param, role)[0]


def _parts(content, param: str, role: str) -> tuple[str, tuple[ImageSource, ...]]:
    """Text, or a list of text parts and a user's image_url parts; anything else refused."""
    return content_parts(content, param, role, "image_url", chat_image,
                         lambda part: part.get("text") if part.get("type") == "text" else None,
                         "text parts ({'type': 'text', 'text': ...}) and a user's image_url parts")


def _prompt(value) -> str:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if isinstance(value, str):
        return value
    if value is None:
        raise bad_request("prompt: a completion needs a prompt.", param="prompt")
    raise bad_request("prompt must be a string (or a list of one string; token ids and several prompts "
                      "are not supported).", param="prompt")

