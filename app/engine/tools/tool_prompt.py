"""The messages and tools a template is rendered with when a reply may call tools.

A template that puts the tool list in the prompt itself gets it as Hugging Face gives it
(`tools=`), and the messages unchanged. One that does not gets what llama.cpp gives such
templates: a system note with the tool schemas and the call syntax to use (the family's own
when the template writes calls in it, else the generic JSON form), and a history it can show:
calls it cannot write become the assistant's text in that syntax, results it cannot write
become user turns.
"""

from __future__ import annotations

import json

from .formats import ToolFormat
from .types import ToolUse

_NOTE = """You can call the following tools to answer the user. To call one, write the call exactly in this form:

{example}

{several}The tools, one per line, as JSON schemas:
{tools}"""


def template_tools(fmt: ToolFormat, use: ToolUse) -> list[dict] | None:
    """The `tools` to render the template with (None where the template does not read them)."""
    return use.template_tools() if fmt.native and not fmt.tools_in_system_field else None


def prompt_messages(fmt: ToolFormat, messages: list[dict], use: ToolUse) -> list[dict]:
    """The messages to render for this format: with the tool list where the template reads it
    from a message, the system note where it does not read it at all, and the history's calls
    and results as text where the template cannot write them."""
    out = [dict(message) for message in messages]
    if use.tools and fmt.tools_in_system_field and fmt.native:
        out = _with_system(out, "", tools=json.dumps([tool.to_openai()["function"] for tool in use.tools],
                                                      ensure_ascii=False))
    elif use.tools and not fmt.native:
        out = _with_system(out, system_note(fmt, use))
    if not fmt.renders_calls:
        out = [_call_as_text(fmt, message) if message.get("tool_calls") else message for message in out]
    if not fmt.renders_results:
        out = _results_as_user_turns(out)
    return out


def system_note(fmt: ToolFormat, use: ToolUse) -> str:
    """The note that tells a model whose template knows no tools what it may call and how."""
    first = use.tools[0]
    example_arguments = {name: "..." for name in (first.parameters.get("properties") or {})}
    example = fmt.calls_text([(first.name, json.dumps(example_arguments, ensure_ascii=False), "")])
    several = ("To call several tools at once, write the calls one after another in that form.\n\n"
               if use.parallel and fmt.parallel_capable else "")
    # One compact line per tool, as the templates with tool support write them (Qwen's, Hermes'):
    # indented JSON reads no better to a model and costs about half as many tokens again, which
    # every reply of the conversation then attends to.
    tools = "\n".join(json.dumps(tool.to_openai()["function"], ensure_ascii=False) for tool in use.tools)
    return _NOTE.format(example=example, several=several, tools=tools)


def _with_system(messages: list[dict], note: str, **fields: str) -> list[dict]:
    if messages and messages[0].get("role") == "system":
        content = messages[0].get("content") or ""
        joined = f"{content}\n\n{note}" if content and note else content or note
        return [dict(messages[0], content=joined, **fields)] + messages[1:]
    return [{"role": "system", "content": note, **fields}] + messages


def _call_as_text(fmt: ToolFormat, message: dict) -> dict:
    calls = []
    for call in message["tool_calls"]:
        function = call.get("function") or {}
        arguments = function.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        calls.append((str(function.get("name", "")), text, str(call.get("id") or "")))
    content = message.get("content") or ""
    written = fmt.calls_text(calls)
    rest = {key: value for key, value in message.items() if key != "tool_calls"}
    return dict(rest, content=f"{content}\n{written}" if content else written)


def _results_as_user_turns(messages: list[dict]) -> list[dict]:
    """Tool results as user turns (llama.cpp's form, `{"tool_response": …}`), merged with a
    user turn beside them: templates that know no tool role often insist that roles alternate."""
    out: list[dict] = []
    for message in messages:
        if message.get("role") == "tool":
            response = {"tool": message.get("name", ""), "content": message.get("content", "")}
            if message.get("tool_call_id"):
                response["tool_call_id"] = message["tool_call_id"]
            message = {"role": "user", "content": json.dumps({"tool_response": response}, ensure_ascii=False)}
        if out and message.get("role") == "user" and out[-1].get("role") == "user":
            out[-1] = dict(out[-1], content=f"{out[-1].get('content') or ''}\n\n{message.get('content') or ''}")
        else:
            out.append(message)
    return out
