"""GBNF grammars for a reply: a structured reply's JSON (response_format) and a model's tool
calls in its family's syntax, built with llama-cpp-python's JSON-schema converter.

The schemas arrive checked (tools/schema.check_schema): only what the converter honours.
Three of its habits are corrected here rather than refused, since clients send them often:
- a schema with no constraint (`{}`, `{"description": ...}`, `additionalProperties: true`)
  means any value, but the converter writes an object for it, or fails: it becomes the list
  of every JSON type;
- its string character rule and its `.` let a raw newline, quote or backslash into a JSON
  string: both are replaced with llama.cpp's current rules, which escape them;
- it names a `$ref`'s rule after the last part of the reference alone, so two tools with a
  `#/$defs/Item` each, or a property called like a definition, silently share one rule: each
  reference gets a rule name of its own here.

A grammar text is cached per request shape (the format, the tools, the choice), so a second
request with the same twenty tools builds nothing; compiling it for the model is the reply
sampler's (reply_sampler.py).
"""

from __future__ import annotations

import copy
import json
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from llama_cpp.llama_grammar import SchemaConverter

from ..tools.call_grammar import call_rules, trigger_patterns
from ..tools.formats import ToolFormat
from ..tools.pattern import converter_pattern
from ..tools.schema import ANNOTATIONS, TYPES, shape
from ..tools.types import ResponseFormat, ResponseKind, Tool, ToolChoiceMode, ToolUse

# llama.cpp's json-schema-to-grammar rules (common/json-schema-to-grammar.cpp), which keep a
# JSON string JSON: no raw control character, quote or backslash.
_CHAR_RULE = r'[^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
_DOT_RULE = r'[^"\\\x00-\x1F]'
_ANY_VALUE = {"type": list(TYPES)}
_CACHE_SIZE = 32


@dataclass(frozen=True)
class Grammar:
    """A GBNF grammar and how the sampler applies it: from the reply's first token, or
    (`lazy`) only once the text so far matches one of `trigger_patterns` (llama.cpp's
    convention: a pattern wrapped in ^...$ must match the whole text, any other is searched
    for; the constrained text starts at the first non-empty capture group, or the match)."""

    gbnf: str
    root: str = "root"
    lazy: bool = False
    trigger_patterns: tuple[str, ...] = ()


def reply_grammar(call_format: ToolFormat | None, use: ToolUse) -> Grammar | None:
    """The grammar a reply runs under, or None for a plain one.

    Calls under `required` or a named function: the calls grammar from the first token.
    Calls under `auto`: the calls grammar, lazy, switched on by the call's opening text, or,
    with a JSON response format too, either the calls or the JSON from the first token.
    No calls: the response format's JSON, if any."""
    wants_json = use.response_format.kind is not ResponseKind.TEXT
    if not use.calls_possible or call_format is None:
        return response_grammar(use.response_format) if wants_json else None
    if use.choice.mode is not ToolChoiceMode.AUTO or not wants_json:
        return calls_grammar(call_format, use)
    key = ("either", call_format, _use_key(use), _schema_key(use.response_format))
    return _cached(key, lambda: _either(call_format, use))


def response_grammar(fmt: ResponseFormat) -> Grammar:
    """Any JSON object (json_object), or JSON satisfying the schema (json_schema)."""
    if fmt.kind is ResponseKind.TEXT:
        raise ValueError("a text response format has no grammar")
    return _cached(("response", _schema_key(fmt)), lambda: _response(_response_schema(fmt)))


def calls_grammar(call_format: ToolFormat, use: ToolUse) -> Grammar:
    """The calls of the offered tools in the family's syntax, each tool's arguments held to
    its schema: lazy under `auto`, from the first token under `required` or a name."""
    return _cached(("calls", call_format, _use_key(use)), lambda: _calls(call_format, use))


# --- building ----------------------------------------------------------------------------------


def _response_schema(fmt: ResponseFormat) -> dict:
    return fmt.schema if fmt.kind is ResponseKind.JSON_SCHEMA and fmt.schema is not None else {"type": "object"}


def _response(schema: dict) -> Grammar:
    converter = _Converter()
    name = converter.add_schema(schema, "response")
    return Grammar(f"root ::= {name}\n{converter.grammar_text()}")


def _calls(call_format: ToolFormat, use: ToolUse) -> Grammar:
    converter = _Converter()
    rules = _call_rules(call_format, use, converter)
    lazy = use.choice.mode is ToolChoiceMode.AUTO
    triggers = trigger_patterns(call_format, use) if lazy else ()
    return Grammar(f"{rules.rstrip()}\n{converter.grammar_text()}", lazy=lazy, trigger_patterns=triggers)


def _call_rules(call_format: ToolFormat, use: ToolUse, converter: _Converter) -> str:
    """The format's rules around the calls, each tool's arguments a rule of the converter."""
    names: dict[str, str] = {}

    def argument_rule(tool: Tool) -> str:
        if tool.name not in names:
            names[tool.name] = converter.add_schema(tool.parameters, f"tool{len(names)}-args")
        return names[tool.name]

    return call_rules(call_format, use, argument_rule)


def _either(call_format: ToolFormat, use: ToolUse) -> Grammar:
    """Calls or a JSON reply, from the first token: one converter for both (so their rule
    names never meet), the calls' root renamed beside the reply's."""
    converter = _Converter()
    calls = _call_rules(call_format, use, converter)
    reply = converter.add_schema(_response_schema(use.response_format), "json-reply")
    calls = re.sub(r"(?m)^root ::=", "tool-calls ::=", calls)
    return Grammar(f"root ::= tool-calls | {reply}\n{calls.rstrip()}\n{converter.grammar_text()}")


class _Converter(SchemaConverter):
    """The converter, with each `$ref` under a rule name of its own and llama.cpp's string
    rules; schemas go in normalised (module docstring) under a name prefix per schema."""

    def __init__(self):
        super().__init__(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        self._ref_rules: dict[str, str] = {}
        self._schemas = 0

    def add_schema(self, schema: dict, name: str) -> str:
        """The rule name for a checked schema (its `$ref`s resolved within it alone)."""
        self._schemas += 1
        normal = _normalise(copy.deepcopy(schema))
        normal = self.resolve_refs(normal, f"schema{self._schemas}")
        return self._named(self.visit(normal, name), name)

    def _resolve_ref(self, ref: str) -> str:
        rule = self._ref_rules.get(ref)
        if rule is None:
            label = re.sub(r"[^a-zA-Z0-9-]+", "-", ref.split("/")[-1])
            rule = self._ref_rules[ref] = f"ref{len(self._ref_rules)}-{label}"
            # A recursive reference inside finds the name above and refers to it.
            self._named(self.visit(self._refs[ref], rule), rule)
        return rule

    def _named(self, rule: str, name: str) -> str:
        """`name` for the rule visit() wrote: a primitive comes back under its own name
        ("string", "uuid"), which then gets `name` as an alias."""
        if rule != name:
            assert name not in self._rules, f"rule {name} is taken"
            self._rules[name] = rule
        return name

    def grammar_text(self) -> str:
        if "char" in self._rules:
            self._rules["char"] = _CHAR_RULE
        if "dot" in self._rules:
            self._rules["dot"] = _DOT_RULE
        return self.format_grammar()


def _normalise(node: dict) -> dict:
    """A checked schema as the converter must read it to mean what it says (module docstring):
    annotations dropped, any-value schemas spelled as every type, patterns rewritten."""
    kind = shape(node)[0]
    node = {key: value for key, value in node.items() if key not in ANNOTATIONS and key not in ("$schema", "$id")}
    if kind == "any":
        return {**copy.deepcopy(_ANY_VALUE), **{k: v for k, v in node.items() if k in ("$defs", "definitions")}}
    for container in ("$defs", "definitions", "properties"):
        if container in node:
            node[container] = {name: _normalise(schema) for name, schema in node[container].items()}
    for key in ("anyOf", "oneOf", "prefixItems"):
        if key in node:
            node[key] = [_normalise(schema) for schema in node[key]]
    if "items" in node:
        items = node["items"]
        node["items"] = [_normalise(s) for s in items] if isinstance(items, list) else _normalise(items)
    additional = node.get("additionalProperties")
    if additional is True:
        node["additionalProperties"] = copy.deepcopy(_ANY_VALUE)
    elif isinstance(additional, dict):
        node["additionalProperties"] = _normalise(additional)
    if "pattern" in node:
        node["pattern"] = converter_pattern(node["pattern"])
    return node


# --- the cache ---------------------------------------------------------------------------------

_grammars: OrderedDict[tuple, Grammar] = OrderedDict()


def _cached(key: tuple, build: Callable[[], Grammar]) -> Grammar:
    grammar = _grammars.get(key)
    if grammar is None:
        grammar = _grammars[key] = build()
        while len(_grammars) > _CACHE_SIZE:
            _grammars.popitem(last=False)
    _grammars.move_to_end(key)
    return grammar


def _schema_key(fmt: ResponseFormat) -> str:
    return json.dumps([fmt.kind.value, fmt.schema], sort_keys=True)


def _use_key(use: ToolUse) -> str:
    return json.dumps([[tool.to_openai() for tool in use.tools], use.choice.mode.value, use.choice.name,
                       use.parallel], sort_keys=True)
