"""The grammar that holds a model to a well-formed call in its family's syntax, and the
patterns that switch it on.

llama.cpp's lazy grammar sampler (`llama_sampler_init_grammar_lazy_patterns`) lets the model
write freely until a trigger pattern matches the text so far, then constrains the rest from
the pattern's first capture group on; under `required` or a named function the grammar runs
from the reply's first token instead. So the root rule starts with what may come before a
call at the reply's start (whitespace, a thinking block), all optional, and then the call
exactly as the row spells it. The arguments' rules come from the caller (`argument_rule`,
built from the tool's JSON schema in engine/llama/); this module writes only the text around
them. All rule names here start with `tool-call`, so they never clash with the caller's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from .formats import ArgumentNotation, Opener, Shape, ToolFormat
from .types import Tool, ToolChoiceMode, ToolsError, ToolUse

_PLACEHOLDER = re.compile(r"\{(name|name_json|id|arguments)\}")
_REGEX_SPECIAL = set("\\^$.|?*+()[]{}")

# XML and Gemma values are held to their notation, not to the schema: a string parameter is raw
# text in Qwen3-Coder's XML, and Gemma's notation is not JSON. The parser turns them into JSON
# and the engine's check says whether they satisfy the schema.
_SHARED_RULES = r'''tool-call-ws ::= [ \t\n]{0,16}
tool-call-xml-text ::= ( [^<] | "<" [^/] | "</" [^p] )*
tool-call-gemma-value ::= tool-call-gemma-string | tool-call-gemma-object | tool-call-gemma-list | [-+.eE0-9]+ | "true" | "false" | "null"
tool-call-gemma-string ::= "<|\"|>" ( [^<] | "<" [^|] | "<|" [^"] )* "<|\"|>"
tool-call-gemma-object ::= "{" ( tool-call-gemma-pair ( "," tool-call-gemma-pair )* )? "}"
tool-call-gemma-pair ::= [a-zA-Z_] [a-zA-Z0-9_]* ":" tool-call-gemma-value
tool-call-gemma-list ::= "[" ( tool-call-gemma-value ( "," tool-call-gemma-value )* )? "]"
'''


def trigger_patterns(fmt: ToolFormat, use: ToolUse) -> tuple[str, ...]:
    """The regexes that start the lazy grammar, in llama.cpp's convention: the text a call of
    this family begins with as the first capture group, searched for in the reply so far; an
    opener that counts only at the reply's start (Llama 3's bare JSON) as a whole-text pattern,
    ^...$. A searched pattern is the marker alone: any-text around it would make every token's
    search scan the text again (engine/llama/reply_sampler.py matches them)."""
    if not use.calls_possible:
        return ()
    spelled = fmt.block_open + fmt.spelling
    # An opener the call is spelled with, or one the grammar's preamble accepts before it
    # (Llama 3's `<|python_tag|>`), so that the grammar can start where the trigger does.
    starts = [opener for opener in fmt.openers if spelled.startswith(opener.text)
              or (not opener.inclusive and _literal(opener.text) in fmt.grammar_preamble)]
    if not starts:
        starts = [Opener(fmt.block_open or _PLACEHOLDER.split(fmt.spelling, maxsplit=1)[0])]
    return tuple(r"^\s*(" + _regex_literal(opener.text) + r")[\s\S]*$" if opener.at_start
                 else "(" + _regex_literal(opener.text) + ")" for opener in starts if opener.text)


def call_rules(fmt: ToolFormat, use: ToolUse, argument_rule: Callable[[Tool], str]) -> str:
    """GBNF text whose `root` matches one call of the offered tools (or, with parallel calls,
    one or more) in this family's syntax; under a named tool choice, one call of that tool."""
    tools = _callable_tools(use)
    several = use.parallel and fmt.parallel_capable and use.choice.mode is not ToolChoiceMode.FUNCTION
    repeat = f"( {_literal(fmt.separator)} tool-call )*" if several else ""
    lines = [_rule("root", fmt.grammar_preamble, _literal(fmt.block_open), "tool-call", repeat, _literal(fmt.block_close))]
    lines.append("tool-call ::= " + " | ".join(f"tool-call-{index}" for index in range(len(tools))))
    for index, tool in enumerate(tools):
        arguments, extra = _arguments_rule(fmt, tool, index, argument_rule)
        lines.append(_rule(f"tool-call-{index}", _spelled(fmt, tool, arguments)))
        lines.extend(extra)
    if fmt.id_length:
        lines.append(f"tool-call-id ::= {_char_class(fmt.id_alphabet)}{{{fmt.id_length}}}")
    return "\n".join(lines) + "\n" + _SHARED_RULES


def _rule(name: str, *parts: str) -> str:
    """`name ::= parts`, leaving out the empty ones (a row without a block marker)."""
    return f"{name} ::= " + (" ".join(part for part in parts if part) or '""')


def _callable_tools(use: ToolUse) -> list[Tool]:
    if use.choice.mode is ToolChoiceMode.FUNCTION:
        tool = use.tool(use.choice.name)
        if tool is None:
            raise ToolsError(f"tool_choice names {use.choice.name!r}, which is not among the tools", "tool_choice")
        return [tool]
    if not use.tools:
        raise ToolsError("a tool call was asked for, but no tools were given", "tools")
    return list(use.tools)


def _spelled(fmt: ToolFormat, tool: Tool, arguments_rule: str) -> str:
    parts = []
    for piece in _PLACEHOLDER.split(fmt.spelling):
        if piece == "name":
            parts.append(_literal(tool.name))
        elif piece == "name_json":
            parts.append(_literal(json.dumps(tool.name, ensure_ascii=False)))
        elif piece == "id":
            parts.append("tool-call-id")
        elif piece == "arguments":
            parts.append(arguments_rule)
        elif piece:
            parts.append(_literal(piece))
    return " ".join(part for part in parts if part)


def _arguments_rule(fmt: ToolFormat, tool: Tool, index: int,
                    argument_rule: Callable[[Tool], str]) -> tuple[str, list[str]]:
    """The rule for one tool's arguments in the row's notation, and any rules it needs."""
    if fmt.shape is Shape.XML:
        return f"tool-call-{index}-parameters", [f"tool-call-{index}-parameters ::= {_xml_parameters(tool)}"]
    if fmt.notation is ArgumentNotation.GEMMA:
        return "tool-call-gemma-object", []
    return argument_rule(tool), []


def _xml_parameters(tool: Tool) -> str:
    """Qwen3-Coder's parameters: the required ones in the schema's order, then each optional
    one, maybe; every value is text without `</p` (strings are raw text in this notation)."""
    properties = tool.parameters.get("properties") or {}
    required = [name for name in properties if name in set(tool.parameters.get("required") or ())]
    optional = [name for name in properties if name not in required]
    one = lambda name: _literal(f"<parameter={name}>\n") + ' tool-call-xml-text ' + _literal("\n</parameter>\n")
    parts = [one(name) for name in required] + [f"( {one(name)} )?" for name in optional]
    return " ".join(parts) or '""'


def _literal(text: str) -> str:
    """A GBNF string literal for `text` (nothing for no text)."""
    if not text:
        return ""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _char_class(alphabet: str) -> str:
    return "[" + "".join("\\" + char if char in "]\\^-" else char for char in alphabet) + "]"


def _regex_literal(text: str) -> str:
    """`text` as an ECMAScript regex (llama.cpp compiles the patterns with std::regex)."""
    return "".join("\\" + char if char in _REGEX_SPECIAL else char for char in text)
