"""Each model family's tool-call syntax, as one table: what starts a call, how its name, id
and arguments are written, and what ends it.

Models were trained on their own call syntax, so a call is read and constrained in the syntax
the template itself writes (detection.py finds the row by rendering a probe conversation);
a template that knows no tools gets the generic row, explained to the model in a system note
(tool_prompt.py). The rows are data: the parser (parsing.py), the grammar and the trigger
patterns (call_grammar.py) and the text of a call in the history all read the same row, so a
family is added by adding a row.

A row's `spelling` is one call exactly as the family writes it, with `{name}` (the bare
name), `{name_json}` (the name as a JSON string), `{id}` and `{arguments}` in place; the
grammar and the history text use that spelling, while the parser also reads the looser
variants models write (any whitespace, keys in any order, a missing end marker).
"""

from __future__ import annotations

import json
import secrets
import string
from dataclasses import dataclass

from ..options import Word
from .types import new_call_id


class Shape(Word):
    """How a call is laid out, which decides the reader that follows it."""

    OBJECT = "object"  # a JSON object naming the tool, its arguments under a key (Hermes, Llama 3, Mistral Nemo…)
    NAMED = "named"  # the bare name, then the arguments (Devstral, DeepSeek, gpt-oss, Gemma 4)
    XML = "xml"  # <function=NAME><parameter=K>V</parameter></function> (Qwen3-Coder)


class ArgumentNotation(Word):
    JSON = "json"
    GEMMA = "gemma"  # Gemma 4: {key:<|"|>text<|"|>,n:1}, bare keys and <|"|>-quoted strings


@dataclass(frozen=True)
class Opener:
    """Text that starts a call. `inclusive`: the text is the call's own first characters (Llama
    3's `{"name"`), read again by the call's reader; otherwise the call starts after it.
    `at_start`: it starts a call only where a reply (or the text after a call) begins, as
    llama.cpp reads Llama 3's bare JSON: `{"name"` in the middle of prose is the user's JSON,
    not a call, and must neither vanish from the text nor be forced into one."""

    text: str
    inclusive: bool = False
    at_start: bool = False


@dataclass(frozen=True)
class ToolFormat:
    name: str
    shape: Shape
    openers: tuple[Opener, ...]
    spelling: str  # one call, with {name}/{name_json}/{id}/{arguments}
    block_open: str = ""  # written once before the calls of a reply (spelling and grammar)
    separator: str = ""  # written between two calls of one reply
    block_close: str = ""  # written once after them
    # OBJECT: where the call objects sit in the JSON that follows an opener (1: it is the call,
    # 2: the items of a list, 3: the items of the list under the generic row's "tool_calls")
    call_depth: int = 1
    name_keys: tuple[str, ...] = ("name",)
    argument_keys: tuple[str, ...] = ("arguments", "parameters")
    id_keys: tuple[str, ...] = ("id",)
    # NAMED: texts that end the name; the one in `id_marker` is followed by the model's id,
    # which ends at `arguments_marker`; `header_before_arguments` lets a header follow the name
    # (gpt-oss's `<|channel|>commentary json`) until `arguments_marker`
    name_ends: tuple[str, ...] = ()
    id_marker: str = ""
    arguments_marker: str = ""
    header_before_arguments: bool = False
    name_end_opens_arguments: bool = False  # Gemma 4: the `{` ending the name begins the arguments
    notation: ArgumentNotation = ArgumentNotation.JSON
    call_end: str = ""  # read (optionally) after each call's arguments
    ignored_markers: tuple[str, ...] = ()  # block markers the parser drops from the text
    # ids: the alphabet and length a family requires of them (Mistral: 9 alphanumerics; its
    # template refuses any other), or none (OpenAI's form)
    id_alphabet: str = ""
    id_length: int = 0
    parallel_capable: bool = True  # the family writes several calls in one reply
    grammar_preamble: str = 'tool-call-ws'  # GBNF allowed before the first call at the reply's start
    # detection
    signature: str = ""  # a regex matching this family's rendering of the probe call
    source_hint: str = ""  # text of a template that means this family when it renders no call
    # what detection found about the template at hand
    native: bool = True  # the template puts the tool list in the prompt itself
    renders_calls: bool = True  # the template writes the history's calls
    renders_results: bool = True  # the template writes the history's tool results
    tools_in_system_field: bool = False  # Phi-4-mini reads tools from the system message's "tools"

    def new_id(self) -> str:
        """An id for a call the model wrote without one, in the form the family's template accepts."""
        if not self.id_length:
            return new_call_id()
        return "".join(secrets.choice(self.id_alphabet) for _ in range(self.id_length))

    def call_text(self, name: str, arguments: str, call_id: str = "") -> str:
        """One call as this family writes it: for the history of templates that cannot render
        calls, and for the system note's example. `arguments` is JSON text."""
        return _fill(self, name, call_id or self.new_id(), arguments)

    def calls_text(self, calls: list[tuple[str, str, str]]) -> str:
        """Several calls (name, arguments, id) as one reply writes them."""
        return self.block_open + self.separator.join(self.call_text(*call) for call in calls) + self.block_close


def _fill(fmt: ToolFormat, name: str, call_id: str, arguments: str) -> str:
    if fmt.notation is ArgumentNotation.GEMMA and _is_json(arguments):
        arguments = gemma_notation(json.loads(arguments))
    elif fmt.shape is Shape.XML and _is_json(arguments) and isinstance(json.loads(arguments), dict):
        arguments = xml_parameters(json.loads(arguments))
    spelling = fmt.spelling
    pieces = {"{name}": name, "{name_json}": json.dumps(name, ensure_ascii=False), "{id}": call_id,
              "{arguments}": arguments}
    out, rest = [], spelling
    while rest:
        cut = min(((rest.find(key), key) for key in pieces if key in rest), default=None)
        if cut is None:
            out.append(rest)
            break
        out.append(rest[:cut[0]] + pieces[cut[1]])
        rest = rest[cut[0] + len(cut[1]):]
    return "".join(out)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def xml_parameters(arguments: dict) -> str:
    """Arguments as Qwen3-Coder's template writes them: strings raw, other values as JSON."""
    return "".join(f"<parameter={key}>\n{value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
                   "\n</parameter>\n" for key, value in arguments.items())


GEMMA_QUOTE = '<|"|>'  # Gemma 4 quotes a string argument with this token, on both sides


def gemma_notation(value: object) -> str:
    """A JSON value in Gemma 4's argument notation, as its template writes it."""
    if isinstance(value, str):
        return GEMMA_QUOTE + value + GEMMA_QUOTE
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{gemma_notation(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma_notation(item) for item in value) + "]"
    return json.dumps(value)


_ALNUM = string.ascii_letters + string.digits
_DEEPSEEK_BLOCK = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")
_THINKING_FIRST = '( [^<]* "</think>" )? tool-call-ws'

# Rows are tried in order, so a row whose signature is a special case of a later one comes first.
FORMATS: tuple[ToolFormat, ...] = (
    ToolFormat(
        "qwen3-coder", Shape.XML, (Opener("<tool_call>"), Opener("<function=", inclusive=True)),
        "<tool_call>\n<function={name}>\n{arguments}</function>\n</tool_call>", separator="\n",
        call_end="</tool_call>", signature=r"<function=hearth_probe>\s*<parameter=hearth_arg>"),
    ToolFormat(
        "hermes", Shape.OBJECT, (Opener("<tool_call>"),),
        '<tool_call>\n{"name": {name_json}, "arguments": {arguments}}\n</tool_call>', separator="\n",
        call_end="</tool_call>", signature=r'<tool_call>\s*\{"name": "hearth_probe", "arguments"'),
    ToolFormat(
        "llama3", Shape.OBJECT, (Opener("<|python_tag|>"), Opener('{"name"', inclusive=True, at_start=True)),
        '{"name": {name_json}, "parameters": {arguments}}', parallel_capable=False,
        # The JSON comes bare or after `<|python_tag|>`: a grammar from the reply's first
        # token (required, named) must not refuse the tag a model writes first.
        grammar_preamble='"<|python_tag|>"? tool-call-ws',
        call_end="<|eom_id|>", signature=r'\{"name": "hearth_probe", "parameters"'),
    ToolFormat(
        "mistral-nemo", Shape.OBJECT, (Opener("[TOOL_CALLS]"),),
        '{"name": {name_json}, "arguments": {arguments}, "id": "{id}"}',
        block_open="[TOOL_CALLS][", separator=", ", block_close="]", call_depth=2,
        id_alphabet=_ALNUM, id_length=9, signature=r'\[TOOL_CALLS\]\s*\[\{"name": "hearth_probe"'),
    ToolFormat(
        "mistral-small", Shape.NAMED, (Opener("[TOOL_CALLS]"),), "[TOOL_CALLS]{name}[CALL_ID]{id}[ARGS]{arguments}",
        name_ends=("[CALL_ID]", "[ARGS]"), id_marker="[CALL_ID]", arguments_marker="[ARGS]",
        id_alphabet=_ALNUM, id_length=9, signature=r"\[TOOL_CALLS\]hearth_probe\[CALL_ID\]"),
    ToolFormat(
        "devstral", Shape.NAMED, (Opener("[TOOL_CALLS]"),), "[TOOL_CALLS]{name}[ARGS]{arguments}",
        name_ends=("[CALL_ID]", "[ARGS]"), id_marker="[CALL_ID]", arguments_marker="[ARGS]",
        id_alphabet=_ALNUM, id_length=9, signature=r"\[TOOL_CALLS\]hearth_probe\[ARGS\]"),
    ToolFormat(
        "phi4-mini", Shape.OBJECT, (Opener("<|tool_call|>"),), '{"name": {name_json}, "arguments": {arguments}}',
        block_open="<|tool_call|>[", separator=", ", block_close="]<|/tool_call|>", call_depth=2,
        call_end="<|/tool_call|>", source_hint="'<|tool|>' + message['tools']", tools_in_system_field=True),
    ToolFormat(
        "granite", Shape.OBJECT, (Opener("<|tool_call|>"),), '{"name": {name_json}, "arguments": {arguments}}',
        block_open="<|tool_call|>[", separator=", ", block_close="]", call_depth=2,
        signature=r'<\|tool_call\|>\s*\[\{"name": "hearth_probe"', source_hint="<|tool_call|>"),
    ToolFormat(
        "command-r7b", Shape.OBJECT, (Opener("<|START_ACTION|>"),),
        '{"tool_call_id": "{id}", "tool_name": {name_json}, "parameters": {arguments}}',
        block_open="<|START_ACTION|>[\n    ", separator=",\n    ", block_close="\n]<|END_ACTION|>", call_depth=2,
        name_keys=("tool_name",), argument_keys=("parameters",), id_keys=("tool_call_id",),
        call_end="<|END_ACTION|>", id_alphabet=string.digits, id_length=1,
        grammar_preamble='("<|START_THINKING|>" [^<]* "<|END_THINKING|>")? tool-call-ws',
        signature=r'<\|START_ACTION\|>\s*\[\s*\{"tool_call_id": "[^"]*", "tool_name": "hearth_probe"'),
    ToolFormat(
        "deepseek-r1", Shape.NAMED, (Opener("<｜tool▁call▁begin｜>function<｜tool▁sep｜>"),),
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{arguments}\n```<｜tool▁call▁end｜>",
        block_open=_DEEPSEEK_BLOCK[0], block_close=_DEEPSEEK_BLOCK[1], name_ends=("\n```json\n",),
        call_end="```<｜tool▁call▁end｜>", ignored_markers=_DEEPSEEK_BLOCK, grammar_preamble=_THINKING_FIRST,
        signature=r"<｜tool▁call▁begin｜>function<｜tool▁sep｜>hearth_probe"),
    ToolFormat(
        "deepseek-v3.1", Shape.NAMED, (Opener("<｜tool▁call▁begin｜>"),),
        "<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{arguments}<｜tool▁call▁end｜>",
        block_open=_DEEPSEEK_BLOCK[0], block_close=_DEEPSEEK_BLOCK[1], name_ends=("<｜tool▁sep｜>",),
        call_end="<｜tool▁call▁end｜>", ignored_markers=_DEEPSEEK_BLOCK, grammar_preamble=_THINKING_FIRST,
        signature=r"<｜tool▁call▁begin｜>hearth_probe<｜tool▁sep｜>"),
    ToolFormat(
        "gpt-oss", Shape.NAMED, (Opener("to=functions."),),
        "to=functions.{name}<|channel|>commentary json<|message|>{arguments}",
        name_ends=("<|message|>",), arguments_marker="<|message|>", header_before_arguments=True,
        call_end="<|call|>", parallel_capable=False,
        grammar_preamble='("<|channel|>analysis<|message|>" [^<]* "<|end|><|start|>assistant")? " "?',
        signature=r"to=functions\.hearth_probe"),
    ToolFormat(
        "gemma4", Shape.NAMED, (Opener("<|tool_call>call:"),), "<|tool_call>call:{name}{arguments}<tool_call|>",
        name_ends=("{",), name_end_opens_arguments=True, notation=ArgumentNotation.GEMMA,
        call_end="<tool_call|>", signature=r"<\|tool_call>call:hearth_probe\{"),
)

GENERIC = ToolFormat(
    "generic", Shape.OBJECT, (Opener('{"tool_calls"', inclusive=True),),
    '{"name": {name_json}, "arguments": {arguments}}',
    block_open='{"tool_calls": [', separator=", ", block_close="]}", call_depth=3,
    native=False, renders_calls=False, renders_results=False)

BY_NAME = {fmt.name: fmt for fmt in FORMATS + (GENERIC,)}
