"""The JSON schemas a tool's arguments or a structured reply must satisfy: which ones the
grammar can hold a model to (check_schema), and whether a value satisfies one (problem).

A schema is turned into a grammar by llama-cpp-python's converter (engine/llama/grammar.py),
which drops what it does not understand without a word (llama.cpp#19051): `minimum`, a
`format` it does not know, `maxLength` beside `pattern`, anything next to a `$ref`. A grammar
that drops a constraint lets the model write a value that fails it, so check_schema accepts
exactly the shapes the converter honours, keyword by keyword, in the order it reads them,
and refuses anything else with the construct and where it is. Annotations (`description`,
`title`, `default`, `examples`...) change no value and are always accepted.

Hostile schemas are refused in bounded time and memory: the whole value is measured first
without recursion (size, nesting, non-JSON values), before anything walks it recursively;
`$ref` is local only (`#/$defs/NAME`, `#/definitions/NAME`). Recursive references are
accepted, as the converter writes them as recursive rules, except where a cycle writes
nothing before it recurses (left recursion, which llama.cpp's grammar refuses) or a value
would have to contain itself forever (a grammar the model could never finish).
"""

from __future__ import annotations

import json
import math
import re

from .pattern import PatternError, converter_pattern
from .types import ToolsError

MAX_NODES = 5000  # JSON values in one schema, keys and strings included
MAX_TEXT = 200_000  # characters of its keys and strings, all told
MAX_JSON_DEPTH = 64  # nesting of JSON objects and arrays (a subschema is one or two deeper)
MAX_PROPERTIES = 128  # properties of one object, items of one tuple
MAX_CHOICES = 256  # values of one enum, alternatives of one anyOf/oneOf
MAX_DEFS = 128
MAX_LENGTH = 1000  # minLength/maxLength: the converter writes each character position out
MAX_ITEMS = 100  # minItems/maxItems, likewise
MAX_VALUE_DEPTH = 128  # how deep problem() follows a value

ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated",
                         "readOnly", "writeOnly"})
ROOT_ONLY = frozenset({"$schema", "$id", "$defs", "definitions"})
TYPES = ("string", "number", "integer", "boolean", "null", "object", "array")
FORMATS = frozenset({"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"})
_REF = re.compile(r"#/(\$defs|definitions)/([A-Za-z0-9_.-]{1,64})")
# What a keyword needs beside it to mean anything to the converter.
_NEEDS = {"minLength": '"type": "string"', "maxLength": '"type": "string"', "minItems": '"items"',
          "maxItems": '"items"', "required": '"properties"'}


def check_schema(schema: object, param: str) -> dict:
    """`schema`, if the grammar converter honours every constraint in it; otherwise raise
    ToolsError naming the construct and its place under `param` (the field it came in)."""
    if not isinstance(schema, dict):
        raise ToolsError(f"{param}: a JSON schema must be an object", param)
    _measure(schema, param)
    _Checker(schema, param).run()
    return schema


def _measure(schema: dict, param: str) -> None:
    """Refuse a schema too big, too deep or not JSON, before anything recurses into it."""
    nodes = text = 0
    stack: list[tuple[object, int]] = [(schema, 1)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ToolsError(f"{param}: the schema has more than {MAX_NODES} values", param)
        if isinstance(value, dict) or isinstance(value, list):
            if depth > MAX_JSON_DEPTH:
                raise ToolsError(f"{param}: the schema is nested more than {MAX_JSON_DEPTH} levels deep", param)
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(value, dict):
                    if not isinstance(key, str):
                        raise ToolsError(f"{param}: an object key is not a string", param)
                    text += len(key)
                stack.append((item, depth + 1))
        elif isinstance(value, str):
            text += len(value)
        elif isinstance(value, float) and not math.isfinite(value):
            raise ToolsError(f"{param}: {value} is not a JSON number", param)
        elif not (value is None or isinstance(value, (bool, int, float))):
            raise ToolsError(f"{param}: {type(value).__name__} is not a JSON value", param)
        if text > MAX_TEXT:
            raise ToolsError(f"{param}: the schema is longer than {MAX_TEXT} characters", param)


def _key(name: str) -> str:
    return f".{name}" if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_]*", name) else f"[{json.dumps(name)}]"


class _Checker:
    def __init__(self, root: dict, param: str):
        self.root = root
        self.param = param
        self.defs: dict[str, dict] = {}  # "#/$defs/NAME" -> its schema
        self.heads: dict[str, set[str]] = {}  # a def -> the defs it may begin with, writing nothing first

    def fail(self, path: str, message: str):
        raise ToolsError(f"{self.param}{path}: {message}", self.param + path)

    def run(self) -> None:
        for container in ("$defs", "definitions"):
            defs = self.root.get(container, {})
            if not isinstance(defs, dict):
                self.fail(f".{container}", "must be an object of named schemas")
            if len(self.defs) + len(defs) > MAX_DEFS:
                self.fail(f".{container}", f"at most {MAX_DEFS} definitions are supported")
            for name, schema in defs.items():
                if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
                    self.fail(f".{container}{_key(name)}", "a definition's name is letters, digits, '_', '.' or '-'")
                self.defs[f"#/{container}/{name}"] = schema
        for ref, schema in self.defs.items():
            self.heads[ref] = self.check(schema, "." + ref[2:].replace("/", "."), root=False)
        self.check(self.root, "", root=True)
        self._refuse_left_recursion()
        if self.heads and not _Finite(self.defs).holds(self.root):
            self.fail("", "its $ref recursion never ends: every value it allows would contain itself")

    def check(self, node: object, path: str, root: bool = False) -> set[str]:
        """Check one subschema; return the definitions it may begin with (for left recursion)."""
        if not isinstance(node, dict):
            self.fail(path, "a schema must be an object (true/false schemas are not supported)")
        kind, allowed = shape(node)
        extra = set(node) - allowed - ANNOTATIONS - (ROOT_ONLY if root else set())
        for key in sorted(extra):
            self.refuse(node, path, key, kind)
        if "type" in node and not isinstance(node["type"], list) and node["type"] not in TYPES:
            self.fail(path, f'"type": {json.dumps(node["type"])} is not a JSON schema type')
        if kind in ("anyOf", "oneOf"):
            return self._alternatives(node, path, kind)
        check = getattr(self, "_" + kind.replace(" ", "_").lstrip("$"), None)
        return check(node, path) if check else set()  # format, type, any: nothing more to check

    def refuse(self, node: dict, path: str, key: str, kind: str):
        if key == "format":
            self.fail(path, f'"format": {json.dumps(node[key])} is not supported')
        if key in ROOT_ONLY:
            self.fail(path, f'"{key}" is supported only at the top of the schema')
        if key in _NEEDS and kind in ("any", "type"):
            self.fail(path, f'"{key}" is not supported without {_NEEDS[key]}')
        if kind in ("any", "type") or not _known(key):
            self.fail(path, f'"{key}" is not supported')
        self.fail(path, f'"{key}" is not supported together with "{kind}"')

    # --- one method per shape the converter reads (shape) ----------------------------------

    def _ref(self, node: dict, path: str) -> set[str]:
        ref = node["$ref"]
        if not isinstance(ref, str) or not _REF.fullmatch(ref):
            self.fail(path + ".$ref", "only local references to #/$defs/NAME or #/definitions/NAME are supported")
        if ref not in self.defs:
            self.fail(path + ".$ref", f"{ref} is not defined")
        return {ref}

    def _alternatives(self, node: dict, path: str, key: str) -> set[str]:
        alternatives = node[key]
        if not isinstance(alternatives, list) or not alternatives or len(alternatives) > MAX_CHOICES:
            self.fail(f"{path}.{key}", f"must list 1 to {MAX_CHOICES} schemas")
        heads: set[str] = set()
        for index, alternative in enumerate(alternatives):
            heads |= self.check(alternative, f"{path}.{key}[{index}]")
        return heads

    def _type_list(self, node: dict, path: str) -> set[str]:
        types = node["type"]
        if not types or len(set(map(str, types))) != len(types) or any(t not in TYPES for t in types):
            self.fail(f"{path}.type", f"a list of types names distinct types among {', '.join(TYPES)}")
        return set()

    def _const(self, node: dict, path: str) -> set[str]:
        self.literal(node["const"], node.get("type"), f"{path}.const")
        return set()

    def _enum(self, node: dict, path: str) -> set[str]:
        values = node["enum"]
        if not isinstance(values, list) or not values or len(values) > MAX_CHOICES:
            self.fail(f"{path}.enum", f"must list 1 to {MAX_CHOICES} values")
        for index, value in enumerate(values):
            self.literal(value, node.get("type"), f"{path}.enum[{index}]")
        return set()

    def literal(self, value: object, declared: object, path: str) -> None:
        """A const or enum value: the converter writes it as json.dumps spells it, inside a
        GBNF literal that does not escape a backslash, so a string may hold no character
        json.dumps escapes (quote, backslash, control characters, beyond the BMP)."""
        if declared is not None and not _is_type(value, declared):
            self.fail(path, f"{_show(value)} is not of type {declared}")
        for text in _texts(value):
            bad = _unwritable(text)
            if bad:
                self.fail(path, f"{_show(text)} holds {bad}, which the grammar cannot write here")

    def _object(self, node: dict, path: str) -> set[str]:
        properties = node.get("properties", {})
        if not isinstance(properties, dict) or len(properties) > MAX_PROPERTIES:
            self.fail(f"{path}.properties", f"must be an object of at most {MAX_PROPERTIES} schemas")
        for name, schema in properties.items():
            bad = _unwritable(name)
            if bad:
                self.fail(f"{path}.properties{_key(name)}", f"a property name holding {bad} is not supported")
            self.check(schema, f"{path}.properties{_key(name)}")
        required = node.get("required", [])
        if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
            self.fail(f"{path}.required", "must be a list of property names")
        for name in required:
            if name not in properties:
                self.fail(f"{path}.required", f"{json.dumps(name)} is required but not among the properties")
        additional = node.get("additionalProperties", False)
        if not isinstance(additional, bool):
            self.check(additional, f"{path}.additionalProperties")
        return set()

    def _array(self, node: dict, path: str) -> set[str]:
        key = "prefixItems" if "prefixItems" in node else "items"
        items = node[key]
        if isinstance(items, list):
            if not items or len(items) > MAX_PROPERTIES:
                self.fail(f"{path}.{key}", f"must list 1 to {MAX_PROPERTIES} schemas")
            for index, item in enumerate(items):
                self.check(item, f"{path}.{key}[{index}]")
            return set()
        self.check(items, f"{path}.{key}")
        self.bounds(node, path, "minItems", "maxItems", MAX_ITEMS)
        return set()

    def _pattern(self, node: dict, path: str) -> set[str]:
        try:
            converter_pattern(node["pattern"])
        except PatternError as exc:
            self.fail(f"{path}.pattern", f"{_show(node['pattern'])}: {exc}")
        return set()

    def _length(self, node: dict, path: str) -> set[str]:
        self.bounds(node, path, "minLength", "maxLength", MAX_LENGTH)
        return set()

    def bounds(self, node: dict, path: str, low_key: str, high_key: str, limit: int) -> None:
        low, high = node.get(low_key, 0), node.get(high_key, limit)
        for key, value in ((low_key, low), (high_key, high)):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
                self.fail(f"{path}.{key}", f"must be a whole number from 0 to {limit}")
        if low > high:
            self.fail(path, f'"{low_key}" is more than "{high_key}"')

    def _refuse_left_recursion(self) -> None:
        """A definition that may begin with itself, writing nothing first, is left recursion:
        llama.cpp refuses the grammar. Depth-first over at most MAX_DEFS definitions."""
        done: set[str] = set()

        def visit(ref: str, trail: list[str]) -> None:
            if ref in trail:
                cycle = " -> ".join(trail[trail.index(ref):] + [ref])
                self.fail("", f"$ref cycle {cycle} writes nothing before it recurses (left recursion)")
            if ref in done:
                return
            for head in sorted(self.heads.get(ref, ())):
                visit(head, trail + [ref])
            done.add(ref)

        for ref in sorted(self.heads):
            visit(ref, [])


def shape(node: dict) -> tuple[str, frozenset[str]]:
    """Which branch of SchemaConverter.visit reads the node, and the keywords it honours
    there (every other keyword it ignores). The order is the converter's."""
    declared = node.get("type")
    if "$ref" in node:
        return "$ref", frozenset({"$ref"})
    if "oneOf" in node:
        return "oneOf", frozenset({"oneOf"})
    if "anyOf" in node:
        return "anyOf", frozenset({"anyOf"})
    if isinstance(declared, list):
        return "type list", frozenset({"type"})
    if "const" in node:
        return "const", frozenset({"const", "type"})
    if "enum" in node:
        return "enum", frozenset({"enum", "type"})
    if declared in (None, "object") and ("properties" in node or "additionalProperties" in node):
        return "object", frozenset({"type", "properties", "required", "additionalProperties"})
    if declared in (None, "array") and ("items" in node or "prefixItems" in node):
        if "prefixItems" in node or isinstance(node.get("items"), list):
            return "array", frozenset({"type", "prefixItems" if "prefixItems" in node else "items"})
        return "array", frozenset({"type", "items", "minItems", "maxItems"})
    if declared in (None, "string") and "pattern" in node:
        return "pattern", frozenset({"type", "pattern"})
    if declared in (None, "string") and node.get("format") in FORMATS:
        return "format", frozenset({"type", "format"})
    if declared == "string" and ("minLength" in node or "maxLength" in node):
        return "length", frozenset({"type", "minLength", "maxLength"})
    if declared is not None:
        return "type", frozenset({"type"})
    return "any", frozenset()


def _known(key: str) -> bool:
    return key in {"$ref", "oneOf", "anyOf", "type", "const", "enum", "properties", "required",
                   "additionalProperties", "items", "prefixItems", "minItems", "maxItems", "pattern",
                   "format", "minLength", "maxLength"}


def _texts(value: object):
    """Every string in a JSON value, keys included (depth already bounded by _measure)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _unwritable(text: str) -> str | None:
    for char in text:
        if char in '"\\' or ord(char) < 0x20 or ord(char) > 0xFFFF:
            return f"the character {char!r}"
    return None


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_type(value: object, name: object) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    return False


class _Finite:
    """Whether a checked schema allows a finite value, its definitions' answers found by
    fixpoint (at most MAX_DEFS rounds over a schema of at most MAX_NODES values)."""

    def __init__(self, defs: dict[str, dict]):
        self.defs = defs
        self.finite: set[str] = set()
        changed = True
        while changed:
            changed = False
            for ref, schema in defs.items():
                if ref not in self.finite and self.holds(schema):
                    self.finite.add(ref)
                    changed = True

    def holds(self, node: dict) -> bool:
        if "$ref" in node:
            return node["$ref"] in self.finite
        for key in ("oneOf", "anyOf"):
            if key in node:
                return any(self.holds(alternative) for alternative in node[key])
        kind = shape(node)[0]
        if kind == "object":
            properties = node.get("properties", {})
            return all(self.holds(properties[name]) for name in node.get("required", []))
        if kind == "array":
            items = node.get("prefixItems", node.get("items"))
            if isinstance(items, list):
                return all(self.holds(item) for item in items)
            return node.get("minItems", 0) == 0 or self.holds(items)
        return True


# --- validation -------------------------------------------------------------------------------

_FORMAT_RES = {
    "date": r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
    "time": r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{3})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
}
_FORMAT_RES["date-time"] = _FORMAT_RES["date"] + "T" + _FORMAT_RES["time"]


def problem(value: object, schema: dict) -> str | None:
    """The first way `value` (parsed JSON) fails `schema` (one check_schema accepted), in
    words with where it is ("$.when: ..."), or None if it satisfies it. Formats are held to
    exactly what the grammar writes for them (a date's day runs to 31 in every month)."""
    return _problem(value, schema, schema, "$", 0)


def _problem(value: object, node: dict, root: dict, path: str, depth: int) -> str | None:
    if depth > MAX_VALUE_DEPTH:
        return f"{path}: nested more than {MAX_VALUE_DEPTH} levels deep"
    if "$ref" in node:
        _, container, name = node["$ref"].split("/")
        return _problem(value, root[container][name], root, path, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in node:
            matches = sum(_problem(value, alt, root, path, depth + 1) is None for alt in node[key])
            if matches == 0:
                return f"{path}: {_show(value)} matches none of the {len(node[key])} alternatives of {key}"
            if key == "oneOf" and matches > 1:
                return f"{path}: {_show(value)} matches {matches} alternatives of oneOf, not exactly one"
    if "type" in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        if not any(_is_type(value, name) for name in types):
            return f"{path}: {_show(value)} is not of type {' or '.join(types)}"
    if "const" in node and not _same(value, node["const"]):
        return f"{path}: {_show(value)} is not {_show(node['const'])}"
    if "enum" in node and not any(_same(value, option) for option in node["enum"]):
        return f"{path}: {_show(value)} is not one of {_show(node['enum'])}"
    if isinstance(value, dict):
        return _object_problem(value, node, root, path, depth)
    if isinstance(value, list):
        return _array_problem(value, node, root, path, depth)
    if isinstance(value, str):
        return _string_problem(value, node, path)
    return None


def _object_problem(value: dict, node: dict, root: dict, path: str, depth: int) -> str | None:
    properties = node.get("properties", {})
    for name in node.get("required", []):
        if name not in value:
            return f"{path}: the required property {json.dumps(name)} is missing"
    additional = node.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            found = _problem(item, properties[name], root, path + _key(name), depth + 1)
        elif additional is False:
            found = f"{path}: {json.dumps(name)} is not one of its properties"
        elif isinstance(additional, dict):
            found = _problem(item, additional, root, path + _key(name), depth + 1)
        else:
            found = None
        if found:
            return found
    return None


def _array_problem(value: list, node: dict, root: dict, path: str, depth: int) -> str | None:
    items = node.get("prefixItems", node.get("items"))
    if isinstance(items, list):
        pairs = zip(value, items)
    elif isinstance(items, dict):
        if not node.get("minItems", 0) <= len(value) <= node.get("maxItems", len(value)):
            return f"{path}: {len(value)} items, not between {node.get('minItems', 0)} and {node.get('maxItems', 'any')}"
        pairs = ((item, items) for item in value)
    else:
        return None
    for index, (item, schema) in enumerate(pairs):
        found = _problem(item, schema, root, f"{path}[{index}]", depth + 1)
        if found:
            return found
    return None


def _string_problem(value: str, node: dict, path: str) -> str | None:
    if "pattern" in node and not re.fullmatch(node["pattern"][1:-1], value, re.ASCII):
        return f"{path}: {_show(value)} does not match {node['pattern']}"
    form = node.get("format")
    if form in FORMATS and not re.fullmatch(_FORMAT_RES["uuid" if form.startswith("uuid") else form], value):
        return f"{path}: {_show(value)} is not a {form}"
    if "minLength" in node and len(value) < node["minLength"]:
        return f"{path}: {_show(value)} is shorter than {node['minLength']} characters"
    if "maxLength" in node and len(value) > node["maxLength"]:
        return f"{path}: {_show(value)} is longer than {node['maxLength']} characters"
    return None


def _same(a: object, b: object) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1 (as Python would have it)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b
