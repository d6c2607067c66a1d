"""A server's tools/list answer made into the tools Hearth offers (ListedTool) and those it does
not, each with why.

A tool's name reaches the model's prompt, the approval card and the settings; the server chose
it, so it is held to MCP's own rule for names (SEP-986: 1 to 128 letters, digits, '_', '.' and
'-'). A name with anything else (markup, a right-to-left override, control characters, spaces)
is not offered at all rather than "cleaned": two tools cleaned to one name, or a name that
looks like another, would make the user approve one tool and run another. Descriptions are kept
as written (every view escapes them) but cut, so a server of 400 tools cannot fill the prompt.
"""

from __future__ import annotations

import re
from typing import Any

from ..common.text import printable
from .types import ListedTool

TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
MAX_DESCRIPTION_CHARS = 2000
MAX_TITLE_CHARS = 200
MAX_TOOLS = 1000  # tools read from one server; more are left unread and said so
MAX_PAGES = 100  # tools/list pages followed; a server whose cursor never ends is cut there


def listed_tools(server: str, tools: list[Any]) -> tuple[tuple[ListedTool, ...], tuple[str, ...]]:
    """The tools offered, in the server's order, and the skipped ones as "name: why"."""
    offered: list[ListedTool] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for tool in tools:
        name = tool.name if isinstance(tool.name, str) else str(tool.name)
        why = _refusal(name, tool.input_schema, seen)
        if why:
            skipped.append(f"{printable(name, limit=60) or '(no name)'}: {why}")
            continue
        seen.add(name)
        annotations = tool.annotations
        offered.append(ListedTool(
            server=server, name=name, description=_cut(tool.description or "", MAX_DESCRIPTION_CHARS),
            input_schema=tool.input_schema, title=_cut(tool.title or getattr(annotations, "title", None) or "",
                                                       MAX_TITLE_CHARS),
            read_only=getattr(annotations, "read_only_hint", None),
            destructive=getattr(annotations, "destructive_hint", None)))
    return tuple(offered), tuple(skipped)


def _refusal(name: str, schema: object, seen: set[str]) -> str | None:
    if not TOOL_NAME.fullmatch(name):
        if not name:
            return "a tool without a name"
        if len(name) > 128:
            return "a name longer than 128 characters"
        bad = next(char for char in name if not TOOL_NAME.fullmatch(char))
        return f"its name holds {_describe(bad)}, which tool names may not"
    if name in seen:
        return "the server lists a second tool of this name"
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema is not a JSON object schema"
    return None


def _describe(char: str) -> str:
    if char.isspace():
        return "a space" if char == " " else f"spacing (U+{ord(char):04X})"
    if not char.isprintable():
        return f"an invisible or control character (U+{ord(char):04X})"
    return f'"{char}"'


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
