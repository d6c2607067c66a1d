"""Chat templates: turn a list of messages into the exact prompt text a model was trained on.

A GGUF's template is Jinja written by strangers, so it is untrusted code. It is rendered in
Jinja's `ImmutableSandboxedEnvironment` with Hugging Face `apply_chat_template` semantics
(the same environment options, globals and filters), so the prompt is byte-for-byte what the
model authors' tooling produces. Compiling and rendering are also bounded in time, size and
nesting (sandbox.py), because a sandbox stops attribute escapes but not loops that
never end; every way either can fail becomes a one-line TemplateError.

When a file carries no template we choose one by architecture and vocabulary instead of
llama-cpp-python's silent `llama-2` default, which is wrong for nearly every modern model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import SecurityError

from ...common.text import shorten
from ..gguf.modelfile import ModelInfo
from .limits import MAX_PROMPT_CHARS, MESSAGE_DETAIL_CHARS, TemplateError
from .sandbox import BoundedSandbox
from .sizes import value_size

MAX_MESSAGE_CHARS = MAX_PROMPT_CHARS


class _TemplateRaised(Exception):
    """The template called raise_exception(): it rejected the conversation on purpose."""


class MessageTooLongError(TemplateError):
    """A message is longer than any prompt may be: the conversation's fault, not the template's."""


@dataclass(frozen=True)
class Message:
    role: str
    content: str

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


def _with_argument_objects(message: dict) -> dict:
    """`message` with each tool call's arguments as an object where they came as JSON text
    (OpenAI sends them so; templates iterate them or dump them with tojson, which would quote
    the text again). Text that is not JSON stays text: the template shows what was sent."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not any(isinstance(call, dict) and isinstance(call.get("function"), dict)
                                              and isinstance(call["function"].get("arguments"), str) for call in calls):
        return message
    decoded = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("arguments"), str):
            try:
                call = dict(call, function=dict(function, arguments=json.loads(function["arguments"])))
            except ValueError:
                pass
        decoded.append(call)
    return dict(message, tool_calls=decoded)


def _raise_exception(message: str):
    raise _TemplateRaised(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


_MAX_DATE_FORMAT_CHARS = 200


def _strftime_now(fmt: str) -> str:
    """HF's `strftime_now`; a date format is a few characters, and each of its codes can write
    a dozen, so a long one is refused before it is expanded."""
    if len(str(fmt)) > _MAX_DATE_FORMAT_CHARS:
        raise TemplateError(
            f"The chat template asked for a date format longer than {_MAX_DATE_FORMAT_CHARS} characters; "
            "it looks broken."
        )
    return datetime.now().strftime(fmt)


class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}…{% endgeneration %}`, which HF templates use to mark assistant text.

    Transformers tracks the marked spans for training masks; for a prompt only the text
    matters, so the body is rendered unchanged.
    """

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def _environment() -> BoundedSandbox:
    env = BoundedSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.bound_filters()
    return env


_ENV = _environment()


class ChatTemplate:
    """A compiled chat template and the special-token texts it refers to."""

    def __init__(self, source: str, bos_token: str = "", eos_token: str = "", name: str = "model"):
        self.source = source
        self.bos_token = bos_token or ""
        self.eos_token = eos_token or ""
        self.name = name
        self._compiled = _ENV.compile_bounded(source)

    def render(self, messages: list[Message] | list[dict], add_generation_prompt: bool = True,
               tools: list[dict] | None = None) -> str:
        """Render the prompt; fold the system prompt into the first user turn if it's refused.

        `tools` is OpenAI's `tools` array, given to the template as Hugging Face's
        `apply_chat_template(messages, tools=tools)` gives it (None: no tools, as HF passes it).
        Messages may carry tool calls (`tool_calls`, the assistant's) and results (`role: "tool"`
        with `tool_call_id` and `name`); a call's arguments that arrive as a JSON text, OpenAI's
        wire form, render as the object they encode, as templates expect them."""
        dicts = [_with_argument_objects(m.to_dict() if isinstance(m, Message) else dict(m)) for m in messages]
        check_message_sizes(dicts)
        try:
            return self._render(dicts, add_generation_prompt, tools)
        except _TemplateRaised as exc:
            folded = fold_system_prompt(dicts)
            if folded is dicts:
                raise TemplateError(f"The chat template rejected this conversation: {shorten(str(exc), MESSAGE_DETAIL_CHARS)}") from None
            try:
                return self._render(folded, add_generation_prompt, tools)
            except _TemplateRaised as again:
                raise TemplateError(f"The chat template rejected this conversation: {shorten(str(again), MESSAGE_DETAIL_CHARS)}") from None

    def _render(self, messages: list[dict], add_generation_prompt: bool, tools: list[dict] | None = None) -> str:
        context = {
            "messages": messages,
            "tools": tools,
            "add_generation_prompt": add_generation_prompt,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
        }
        try:
            return _ENV.render_bounded(self._compiled, context)
        except (TemplateError, _TemplateRaised):
            raise
        except SecurityError as exc:
            raise TemplateError(
                f"The chat template tried something unsafe and was stopped: {shorten(str(exc), MESSAGE_DETAIL_CHARS)}"
            ) from None
        except RecursionError:
            raise TemplateError("The chat template nested its macros or values too deeply; it looks broken.") from None
        except MemoryError:
            raise TemplateError("The chat template ran out of memory; it looks broken.") from None
        except jinja2.TemplateError as exc:
            raise TemplateError(f"The chat template failed: {shorten(str(exc), MESSAGE_DETAIL_CHARS)}") from None
        except Exception as exc:  # a template can raise anything Python can (TypeError, ZeroDivision…)
            raise TemplateError(f"The chat template failed: {type(exc).__name__}: {shorten(str(exc), MESSAGE_DETAIL_CHARS)}") from None


def check_message_sizes(messages: list[dict]) -> None:
    """Refuse a message longer than any prompt may be before the template sees it, so the
    error names the message rather than calling the template broken."""
    for index, message in enumerate(messages):
        size = value_size(message.get("content"), MAX_MESSAGE_CHARS)
        if size <= MAX_MESSAGE_CHARS:
            continue
        size = value_size(message.get("content"), 1 << 40)
        counted = f"{size:,} characters" if size <= 1 << 40 else "nested too deeply to count"
        limits = f"({counted}; at most {MAX_MESSAGE_CHARS:,})"
        if message.get("role") == "system":
            raise MessageTooLongError(f"The system prompt is too long {limits}. Shorten it.")
        if index == len(messages) - 1:
            raise MessageTooLongError(f"The message is too long {limits}. Shorten it, or send it in parts.")
        raise MessageTooLongError(f"Message {index + 1} of this conversation is too long {limits}. "
                                  "Shorten or delete it.")


def fold_system_prompt(messages: list[dict]) -> list[dict]:
    """Move a leading system message into the first user message (returns the input if none)."""
    if not messages or messages[0]["role"] != "system":
        return messages
    system, rest = messages[0]["content"], messages[1:]
    for index, message in enumerate(rest):
        if message["role"] == "user":
            merged = dict(message, content=f"{system}\n\n{message['content']}")
            return rest[:index] + [merged] + rest[index + 1:]
    return [{"role": "user", "content": system}] + rest


# --- Fallbacks for files without a template --------------------------------------------------
# Each is a family's published template, copied verbatim (sources in tests/data/families.json):
# gemma = google/gemma-3-1b-it, llama3 = meta-llama/Llama-3.1-8B-Instruct, chatml = the generic
# ChatML template, phi4 = microsoft/phi-4, phi3 = microsoft/Phi-3-mini-4k-instruct,
# llama2 = meta-llama/Llama-2-7b-chat-hf.
_FALLBACK_DIR = Path(__file__).with_name("fallback_templates")
FALLBACK_NAMES = ("gemma", "llama3", "phi4", "chatml", "phi3", "llama2")


def fallback_source(name: str) -> str:
    return (_FALLBACK_DIR / f"{name}.jinja").read_text(encoding="utf-8")


def fallback_name(info: ModelInfo) -> str:
    """Pick the fallback format from the architecture first, then from the vocabulary."""
    arch, vocab = info.architecture, info.special_tokens
    if arch.startswith("gemma") or "<start_of_turn>" in vocab:
        return "gemma"
    if "<|start_header_id|>" in vocab and "<|eot_id|>" in vocab:
        return "llama3"
    if "<|im_sep|>" in vocab and "<|im_start|>" in vocab:  # Phi-4: ChatML with a separator token
        return "phi4"
    if arch in ("qwen2", "qwen3", "qwen2moe", "qwen3moe") or "<|im_start|>" in vocab:
        return "chatml"
    if arch == "phi3" or ("<|assistant|>" in vocab and "<|end|>" in vocab):
        return "phi3"
    return "llama2"


def template_for(info: ModelInfo, override: str | None = None) -> ChatTemplate:
    """The template to use for a model: the user's override, its own, or a fallback."""
    bos = info.bos.text if info.bos else ""
    eos = info.eos.text if info.eos else ""
    if override:
        return ChatTemplate(override, bos, eos, name="custom")
    if info.chat_template:
        return ChatTemplate(info.chat_template, bos, eos, name="model")
    name = fallback_name(info)
    return ChatTemplate(fallback_source(name), bos, eos, name=f"fallback:{name}")
