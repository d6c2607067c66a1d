"""OpenAI's wire form of tools, tool choice and response format, read into a ToolUse; and the
check every complete call the model writes goes through (call_problem).

Everything a client sends is checked here, before a reply starts, with the field named the
way OpenAI names it in a 400 (`tools[2].function.name`, `tool_choice`,
`response_format.json_schema.schema.properties.when`). The legacy `functions` /
`function_call` form is read as the `tools` / `tool_choice` it stands for.
"""

from __future__ import annotations

import json
import re

from .schema import check_schema, problem
from .types import ResponseFormat, ResponseKind, Tool, ToolChoice, ToolChoiceMode, ToolsError, ToolUse

NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # OpenAI's rule for function names
MAX_TOOLS = 128
MAX_DESCRIPTION = 8192  # characters of a tool's description
MAX_SCHEMAS_TEXT = 1_000_000  # characters of all the tools' schemas together
EMPTY_PARAMETERS = {"type": "object", "properties": {}}


def tool_use_from_openai(tools: object = None, tool_choice: object = None, parallel_tool_calls: object = None,
                         response_format: object = None, functions: object = None,
                         function_call: object = None) -> ToolUse:
    """A request's tool fields (None where absent) as one ToolUse; ToolsError names the field."""
    if functions is not None:
        if tools is not None:
            raise ToolsError("give tools or the legacy functions, not both", "functions")
        tools = _legacy_tools(functions)
        if function_call is not None:
            tool_choice = function_call if isinstance(function_call, str) else _legacy_choice(function_call)
    elif function_call is not None:
        raise ToolsError("function_call needs functions", "function_call")
    offered = _tools(tools)
    choice = _choice(tool_choice, offered)
    if parallel_tool_calls is not None and not isinstance(parallel_tool_calls, bool):
        raise ToolsError("parallel_tool_calls must be true or false", "parallel_tool_calls")
    # Several calls in one reply only when the request says so, as llama.cpp's server decides
    # (OpenAI's default is on): under a grammar that allows another call after each, a small
    # model writes the same call again and again until max_tokens, and its last one is cut.
    return ToolUse(offered, choice, parallel_tool_calls is True, _response_format(response_format))


def call_problem(use: ToolUse, name: str, arguments: str) -> str | None:
    """Why a complete call cannot be run as written (None: it can): the tool was not
    offered, its arguments are not a JSON object, or they fail the tool's schema."""
    tool = use.tool(name)
    if tool is None:
        offered = ", ".join(t.name for t in use.tools) or "none"
        return f"{json.dumps(name)} is not one of the tools offered ({offered})"
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        return f"the arguments are not JSON: {exc}"
    if not isinstance(value, dict):
        return "the arguments are not a JSON object"
    found = problem(value, tool.parameters)
    return f"the arguments do not satisfy the schema: {found}" if found else None


def _tools(tools: object) -> tuple[Tool, ...]:
    if tools is None:
        return ()
    if not isinstance(tools, list):
        raise ToolsError("tools must be a list", "tools")
    if len(tools) > MAX_TOOLS:
        raise ToolsError(f"at most {MAX_TOOLS} tools are supported", "tools")
    offered: list[Tool] = []
    text = 0
    for index, entry in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(entry, dict) or entry.get("type", "function") != "function":
            raise ToolsError('each tool must be {"type": "function", "function": {...}}', f"{where}.type")
        tool = _function(entry.get("function"), f"{where}.function")
        if any(t.name == tool.name for t in offered):
            raise ToolsError(f"two tools are named {tool.name}", f"{where}.function.name")
        text += len(json.dumps(tool.parameters))
        if text > MAX_SCHEMAS_TEXT:
            raise ToolsError(f"the tools' schemas are longer than {MAX_SCHEMAS_TEXT} characters together", where)
        offered.append(tool)
    return tuple(offered)


def _function(function: object, where: str) -> Tool:
    if not isinstance(function, dict):
        raise ToolsError("must be an object with a name", where)
    name = function.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ToolsError("a function name is 1 to 64 letters, digits, underscores or dashes", f"{where}.name")
    description = function.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise ToolsError(f"a description is text of at most {MAX_DESCRIPTION} characters", f"{where}.description")
    parameters = function.get("parameters")
    if parameters is None:
        parameters = dict(EMPTY_PARAMETERS)
    parameters = check_schema(parameters, f"{where}.parameters")
    if parameters.get("type", "object") != "object" or _not_an_object(parameters):
        raise ToolsError('a function\'s parameters are an object schema ("type": "object")', f"{where}.parameters")
    strict = function.get("strict", False)
    if not isinstance(strict, bool):
        raise ToolsError("strict must be true or false", f"{where}.strict")
    return Tool(name, description, parameters, strict)


def _not_an_object(schema: dict) -> bool:
    """Whether a schema can hold anything but an object (the arguments are one)."""
    return any(key in schema for key in ("anyOf", "oneOf", "$ref", "enum", "const", "items", "prefixItems"))


def _choice(choice: object, offered: tuple[Tool, ...]) -> ToolChoice:
    if choice is None:
        return ToolChoice()
    if isinstance(choice, str):
        try:
            mode = ToolChoiceMode(choice)
        except ValueError:
            mode = None
        if mode is None or mode is ToolChoiceMode.FUNCTION:
            raise ToolsError('tool_choice is "auto", "none", "required" or {"type": "function", '
                             '"function": {"name": ...}}', "tool_choice")
        if mode is ToolChoiceMode.REQUIRED and not offered:
            raise ToolsError('tool_choice "required" needs tools', "tool_choice")
        return ToolChoice(mode)
    function = choice.get("function") if isinstance(choice, dict) and choice.get("type") == "function" else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise ToolsError('a named tool choice is {"type": "function", "function": {"name": ...}}', "tool_choice")
    if not any(tool.name == name for tool in offered):
        raise ToolsError(f"tool_choice names {json.dumps(name)[:80]}, which is not among the tools",
                         "tool_choice.function.name")
    return ToolChoice(ToolChoiceMode.FUNCTION, name)


def _response_format(fmt: object) -> ResponseFormat:
    if fmt is None:
        return ResponseFormat()
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return ResponseFormat()
    if kind == "json_object":
        return ResponseFormat(ResponseKind.JSON_OBJECT)
    if kind != "json_schema":
        raise ToolsError('response_format is {"type": "text"}, {"type": "json_object"} or '
                         '{"type": "json_schema", "json_schema": {...}}', "response_format.type")
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict):
        raise ToolsError("must be an object with a name and a schema", "response_format.json_schema")
    name = spec.get("name", "response")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ToolsError("a name is 1 to 64 letters, digits, underscores or dashes", "response_format.json_schema.name")
    if "schema" not in spec:
        raise ToolsError("a JSON schema is needed", "response_format.json_schema.schema")
    schema = check_schema(spec["schema"], "response_format.json_schema.schema")
    strict = spec.get("strict", False)
    if not isinstance(strict, bool) and strict is not None:
        raise ToolsError("strict must be true or false", "response_format.json_schema.strict")
    return ResponseFormat(ResponseKind.JSON_SCHEMA, schema, name, bool(strict))


def _legacy_tools(functions: object) -> list:
    if not isinstance(functions, list):
        raise ToolsError("functions must be a list", "functions")
    return [{"type": "function", "function": function} for function in functions]


def _legacy_choice(function_call: object) -> object:
    """{"name": X} -> {"type": "function", "function": {"name": X}}."""
    if isinstance(function_call, dict) and "name" in function_call:
        return {"type": "function", "function": {"name": function_call["name"]}}
    raise ToolsError('function_call is "auto", "none" or {"name": ...}', "function_call")


def tool_use_to_openai(use: ToolUse) -> dict:
    """A ToolUse as the request fields OpenAI reads (nothing for a plain reply): what the remote
    backend sends a server, the inverse of tool_use_from_openai."""
    fields: dict = {}
    if use.tools:
        fields["tools"] = [tool.to_openai() for tool in use.tools]
        choice = use.choice
        fields["tool_choice"] = ({"type": "function", "function": {"name": choice.name}}
                                 if choice.mode is ToolChoiceMode.FUNCTION else choice.mode.value)
        fields["parallel_tool_calls"] = use.parallel
    fmt = use.response_format
    if fmt.kind is ResponseKind.JSON_SCHEMA:
        fields["response_format"] = {"type": "json_schema", "json_schema": {
            "name": fmt.name, "schema": fmt.schema, "strict": fmt.strict}}
    elif fmt.kind is ResponseKind.JSON_OBJECT:
        fields["response_format"] = {"type": "json_object"}
    return fields
