"""Request bodies read into typed requests, or refused with a 400 that names the field.

No pydantic: the two bodies are small, and reading them here keeps the bundle ~5 MB lighter
and the limits in one place. The sampling bounds are `sampling.BOUNDS`, the same the
parameters panel and `hearth chat` use, so the server accepts exactly what the engine can do.
A field the request leaves out (or sends as null) takes the served model's default
(ServedModel.sampling: its author's general.sampling.* over the Balanced preset, what
`hearth chat` and the window start from).

What the engine cannot do is refused rather than ignored, so a client is never told it got
something it did not: several choices (`n` > 1), log-probabilities, tools and function calls,
structured output, images, logit bias. Fields that change nothing about the reply (`user`,
`metadata`, `store`, ...) are ignored, as llama.cpp's server ignores what it does not know.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..engine.sampling import BOUNDS, SamplingError, SamplingParams
from .errors import bad_request

MAX_BODY_BYTES = 16 * 2**20  # a 4-million-character message (the longest any prompt may be) as UTF-8
MAX_STOP_STRINGS = 16

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
# Sampling fields under OpenAI's names and llama.cpp's extensions, all checked by sampling.BOUNDS.
SAMPLING_FIELDS = ("temperature", "top_p", "presence_penalty", "frequency_penalty", "seed",
                   "top_k", "min_p", "repeat_penalty")
# Fields whose meaning the engine cannot honour, refused when they ask for anything.
_UNSUPPORTED = {
    "tools": "tools and function calls", "functions": "tools and function calls",
    "tool_choice": "tools and function calls", "logprobs": "log-probabilities",
    "top_logprobs": "log-probabilities", "logit_bias": "logit bias", "audio": "audio",
    "prediction": "predicted outputs", "echo": "echoing the prompt", "suffix": "a suffix",
}


@dataclass(frozen=True)
class ChatRequest:
    """POST /v1/chat/completions: a conversation for the model's own chat template."""

    model: str
    messages: list[dict]  # {"role", "content"}, roles as the templates know them
    params: SamplingParams
    stream: bool
    include_usage: bool  # stream_options.include_usage: a last chunk with the token counts


@dataclass(frozen=True)
class CompletionRequest:
    """POST /v1/completions: raw text the model continues, no template."""

    model: str
    prompt: str
    params: SamplingParams
    stream: bool
    include_usage: bool


def parse_chat(body: bytes, defaults: SamplingParams) -> ChatRequest:
    data = json_object(body)
    common = _common(data, defaults)
    return ChatRequest(messages=_messages(data.get("messages")), **common)


def parse_completion(body: bytes, defaults: SamplingParams) -> CompletionRequest:
    data = json_object(body)
    common = _common(data, defaults)
    return CompletionRequest(prompt=_prompt(data.get("prompt")), **common)


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
    for name in ("n", "best_of"):
        if data.get(name) not in (None, 1):
            raise bad_request(f"{name}: this server writes one choice per request; {name} must be 1.", param=name)
    response_format = data.get("response_format")
    if response_format not in (None, {"type": "text"}):
        raise bad_request("response_format: this server writes plain text only.", param="response_format",
                          code="unsupported_parameter")
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model: name the model to use (GET /v1/models lists it).", param="model")
    stream = _optional(data, "stream", bool, False)
    options = data.get("stream_options")
    if options is not None and not stream:
        raise bad_request("stream_options: only allowed when stream is true.", param="stream_options")
    if options is not None and not isinstance(options, dict):
        raise bad_request("stream_options must be an object.", param="stream_options")
    include_usage = _optional(options or {}, "include_usage", bool, False, "stream_options.include_usage")
    return {"model": model, "params": _sampling(data, defaults), "stream": stream, "include_usage": include_usage}


def _sampling(data: dict, defaults: SamplingParams) -> SamplingParams:
    changes = {}
    for name in SAMPLING_FIELDS:
        value = data.get(name)
        if value is not None:
            changes[name] = _checked(name, value)
    # max_completion_tokens is OpenAI's newer name for max_tokens; either may come.
    for name in ("max_tokens", "max_completion_tokens"):
        value = data.get(name)
        if value is not None:
            changes["max_tokens"] = _checked("max_tokens", value, name)
    stop = _stop(data.get("stop"))
    if stop is not None:
        changes["stop"] = stop
    try:
        return defaults.with_changes(**changes)
    except SamplingError as exc:  # every field was checked alone; this is a safety net
        raise bad_request(str(exc)) from None


def _checked(name: str, value, param: str | None = None):
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


def _optional(data: dict, name: str, kind: type, default, param: str | None = None):
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
    return [_message(index, message) for index, message in enumerate(value)]


def _message(index: int, message) -> dict:
    param = f"messages[{index}]"
    if not isinstance(message, dict):
        raise bad_request(f"{param} must be an object with a role and content.", param=param)
    role = message.get("role")
    if role not in ROLES:
        if role in ("tool", "function"):
            raise bad_request(f"{param}.role: this server does not support tools.", param=f"{param}.role",
                              code="unsupported_parameter")
        raise bad_request(f"{param}.role must be one of system, developer, user or assistant.", param=f"{param}.role")
    if message.get("tool_calls") or message.get("function_call"):
        raise bad_request(f"{param}: this server does not support tool calls.", param=param,
                          code="unsupported_parameter")
    return {"role": ROLES[role], "content": _content(message.get("content"), f"{param}.content")}


def _content(content, param: str) -> str:
    """Text, or a list of text parts (joined with newlines, as vLLM does); anything else refused."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise bad_request(f"{param}: this server reads text parts only ({{'type': 'text', 'text': ...}}).",
                                  param=param, code="unsupported_parameter")
            texts.append(part["text"])
        return "\n".join(texts)
    raise bad_request(f"{param} must be a string or a list of text parts.", param=param)


def _prompt(value) -> str:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if isinstance(value, str):
        return value
    if value is None:
        raise bad_request("prompt: a completion needs a prompt.", param="prompt")
    raise bad_request("prompt must be a string (or a list of one string; token ids and several prompts "
                      "are not supported).", param="prompt")

