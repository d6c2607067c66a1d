"""A server's input schema made into parameters the grammar can hold a call to.

engine/tools/schema.py accepts exactly the JSON schemas llama.cpp's converter honours, and
refuses the rest (`minimum`, `format: "uri"`, a pattern it cannot write...), which is right for a
request that asked for them: silently dropping a constraint would let a model write what the
client forbade. An MCP server's schema is different: the server checks the arguments itself
when the call arrives, and one tool's `minimum` must not keep every other tool (or the whole
reply) from being offered. So a tool's schema is taken as it is where the grammar can hold it;
else loosened, keeping its shape (properties, types, required) and dropping only the keywords
the converter would not honour; else any JSON object, the model reading the schema's properties
from the description instead. Each step is checked the way a request's tools are
(wire.tool_use_from_openai), so what comes out always works end to end.
"""

from __future__ import annotations

import json

from ..engine.tools.schema import ANNOTATIONS, ROOT_ONLY, shape
from ..engine.tools.types import Tool, ToolsError
from ..engine.tools.wire import tool_use_from_openai

ANY_OBJECT = {"type": "object"}
MAX_LOOSEN_DEPTH = 64
MAX_SCHEMA_IN_DESCRIPTION = 2000  # characters of a schema written into the description


def offered_tool(name: str, description: str, schema: dict) -> tuple[Tool, str | None]:
    """The Tool for the model, and a note saying what was loosened (None: the schema is the
    server's own)."""
    try:
        return _checked(name, description, schema), None
    except ToolsError as exc:
        first = str(exc)
    loosened = _loosen(schema, 0, root=True)
    if isinstance(loosened, dict):
        try:
            return _checked(name, description, loosened), f"constraints the grammar cannot hold were left to the server ({first})"
        except ToolsError:
            pass
    written = json.dumps(schema.get("properties", {}), ensure_ascii=False)
    if len(written) <= MAX_SCHEMA_IN_DESCRIPTION:
        description = f"{description}\nArguments (JSON schema of its properties): {written}".strip()
    return _checked(name, description, ANY_OBJECT), f"its schema cannot be held by the grammar ({first}): any object is accepted"


def _checked(name: str, description: str, parameters: dict) -> Tool:
    use = tool_use_from_openai(tools=[{"type": "function", "function": {
        "name": name, "description": description, "parameters": parameters}}])
    return use.tools[0]


def _loosen(node: object, depth: int, root: bool = False) -> object:
    """`node` with only the keywords its shape honours, recursively (a schema the converter
    reads as it is); None where it cannot be loosened (too deep)."""
    if depth > MAX_LOOSEN_DEPTH:
        return None
    if isinstance(node, bool):
        return {}  # true: anything (false cannot be offered; the server will say so)
    if not isinstance(node, dict):
        return None
    _, allowed = shape(node)
    kept = {key: value for key, value in node.items()
            if key in allowed or key in ANNOTATIONS or (root and key in ROOT_ONLY)}
    for key in ("properties", "$defs", "definitions"):
        if isinstance(kept.get(key), dict):
            kept[key] = {name: sub if (sub := _loosen(value, depth + 1)) is not None else {}
                         for name, value in kept[key].items()}
    for key in ("additionalProperties", "items"):
        if isinstance(kept.get(key), dict):
            kept[key] = _loosen(kept[key], depth + 1)
            if kept[key] is None:
                kept[key] = {}
    for key in ("anyOf", "oneOf", "prefixItems", "items"):
        if isinstance(kept.get(key), list):
            kept[key] = [sub if (sub := _loosen(value, depth + 1)) is not None else {} for value in kept[key]]
    if isinstance(kept.get("required"), list) and isinstance(kept.get("properties"), dict):
        kept["required"] = [name for name in kept["required"] if name in kept["properties"]]
    return kept
