"""What a request asks of tools and structured output, and what a reply gives back.

These cross the house the way SamplingParams do: the server and the command line read them
from OpenAI's wire form (dicts only at that edge), the Backend takes them with a reply
(`Backend.stream(..., tools=ToolUse)`), and a reply's stream yields `ToolCallDelta`s as a
call is written and one `ToolCall` when it is complete, before its ReplyStats.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field

from ..options import Word


class ToolsError(ValueError):
    """A tool list, tool choice, response format or tool-use history the reply cannot use;
    the message names the field and the reason, for a 400 or the command line. Raised before
    a reply starts, as template and context errors are."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Tool:
    """A function the model may call: OpenAI's `{"type": "function", "function": {...}}`.

    `parameters` is a JSON schema, already checked by schema.check_schema (so it holds only
    what the grammar and the validator both understand)."""

    name: str
    description: str = ""
    parameters: dict = field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool = False

    def to_openai(self) -> dict:
        """The wire form, as templates and servers expect it."""
        function = {"name": self.name, "description": self.description, "parameters": self.parameters}
        if self.strict:
            function["strict"] = True
        return {"type": "function", "function": function}


class ToolChoiceMode(Word):
    """Whether the model may, must or must not call a tool (OpenAI's `tool_choice`)."""

    AUTO = "auto"  # text or calls, as the model likes; a call, once started, is held to its schema
    NONE = "none"  # text only; the tools are still in the prompt, as OpenAI does
    REQUIRED = "required"  # at least one call, and nothing but calls
    FUNCTION = "function"  # exactly this one function (ToolChoice.name)


@dataclass(frozen=True)
class ToolChoice:
    mode: ToolChoiceMode = ToolChoiceMode.AUTO
    name: str | None = None  # the function, for FUNCTION

    def __post_init__(self):
        if (self.mode is ToolChoiceMode.FUNCTION) != (self.name is not None):
            raise ValueError("a named tool choice names exactly one function")


class ResponseKind(Word):
    TEXT = "text"
    JSON_OBJECT = "json_object"  # any JSON object
    JSON_SCHEMA = "json_schema"  # JSON that satisfies `schema`


@dataclass(frozen=True)
class ResponseFormat:
    """OpenAI's `response_format`: the shape the reply's text must take."""

    kind: ResponseKind = ResponseKind.TEXT
    schema: dict | None = None  # for JSON_SCHEMA, checked by schema.check_schema
    name: str = "response"
    strict: bool = False


@dataclass(frozen=True)
class ToolUse:
    """Everything a reply is told about tools and structured output. An empty ToolUse (the
    default) is a plain chat: no grammar, no parsing, the template rendered without tools."""

    tools: tuple[Tool, ...] = ()
    choice: ToolChoice = ToolChoice()
    # parallel_tool_calls: several calls in one reply. Off unless a request asks (wire.py says why).
    parallel: bool = False
    response_format: ResponseFormat = ResponseFormat()

    @property
    def calls_possible(self) -> bool:
        """Whether the reply may contain calls (to parse them and constrain them)."""
        return bool(self.tools) and self.choice.mode is not ToolChoiceMode.NONE

    @property
    def is_plain(self) -> bool:
        return not self.tools and self.response_format.kind is ResponseKind.TEXT

    def tool(self, name: str) -> Tool | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    def template_tools(self) -> list[dict] | None:
        """The `tools` a template is rendered with (None without tools, as HF passes it)."""
        return [tool.to_openai() for tool in self.tools] or None


PLAIN = ToolUse()


def new_call_id() -> str:
    """An id for a call the model wrote without one: OpenAI's form ("call_" and 24 characters)."""
    return "call_" + secrets.token_urlsafe(18)[:24]


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a call as the model writes it, for streaming (OpenAI's `delta.tool_calls[]`):
    the first delta of a call carries its `id` and `name`, later ones argument text only.
    `index` counts the reply's calls from 0."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""  # the next fragment of the arguments' JSON text


@dataclass(frozen=True)
class ToolCall:
    """A complete call, yielded after its deltas. `arguments` is JSON text (OpenAI's wire form),
    exactly the concatenation of its deltas' fragments.

    `problem` says why the call cannot be run as written (None: it can): it names a tool that
    was not offered, its arguments are not JSON, or they fail the tool's schema. A call with a
    problem is still reported, never silently dropped or passed on as valid."""

    index: int
    id: str
    name: str
    arguments: str
    problem: str | None = None
    complete: bool = True  # False: the reply ended before the call did (max_tokens, Stop); `problem` says so

    def parsed_arguments(self) -> object:
        """The arguments as a value (raises ValueError if they are not JSON)."""
        return json.loads(self.arguments)

    def to_openai(self) -> dict:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}
