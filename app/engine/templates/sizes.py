"""How large a chat template's values are, and how large an operation's result would be.

Kept apart from the sandbox (sandbox.py), which decides *when* to measure, because this
is the arithmetic of *how much*: value_size walks a value without building anything, and the
estimates say, before an operation runs, what repetition, powers, printf and format widths,
join separators, replacements, indents, wrapping and JSON padding would grow to, so the
sandbox can refuse what would outgrow a render's allowance before it is allocated.
"""

from __future__ import annotations

import itertools
import re

from jinja2.utils import Namespace

from .limits import MAX_INT_BITS, MAX_PROMPT_CHARS, RenderBudget, too_large

MAX_VALUE_DEPTH = 100  # published templates' values (lists in dicts in lists…) nest fewer than 10 deep
_MAX_PADDING = 64  # a JSON indent or separator longer than this is not formatting
# Container slots and numbers count towards a value's size too: a list of a million small
# values costs tens of megabytes although its text is short.
_SLOT_SIZE = 4
_OBJECT_SIZE = 16
NUMBER_SIZE = 8
SCALARS = frozenset({int, float, bool, type(None)})

_NUMBER = re.compile(r"\d+")
# The width and precision of a printf-style field.
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d*)(?:\.(\*|\d*))?")


def value_size(value, limit: int) -> int:
    """About how large a value is, in characters: its text, plus a little per container slot
    and number. Stops counting once past `limit` (so a cycle or a huge list costs little) and
    counts a value shared by several containers each time, as text conversion would. A value
    nested deeper than MAX_VALUE_DEPTH counts as over any limit: printing, comparing or
    serialising it recurses in C once per level, which a thread's small stack may not survive.
    Walks the containers with a stack of iterators, so measuring allocates nothing per item."""
    total = _leaf_size(value)
    if total is not None:
        return total
    total = 0
    stack = [iter((value,))]
    while stack and total <= limit:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        leaf = _leaf_size(item)
        if leaf is not None:
            total += leaf
            continue
        if len(stack) > MAX_VALUE_DEPTH:
            return limit + 1
        if isinstance(item, Namespace):
            item = item._Namespace__attrs
        if isinstance(item, dict):
            total += _OBJECT_SIZE + 2 * _SLOT_SIZE * len(item)
            stack.append(itertools.chain(item.keys(), item.values()))
        else:
            total += _OBJECT_SIZE + _SLOT_SIZE * len(item)
            stack.append(iter(item))
    return total


_END = object()
_CONTAINERS = (dict, list, tuple, set, frozenset, Namespace)


def _leaf_size(value) -> int | None:
    """The size of a value that holds no others, or None for a container."""
    kind = type(value)
    if kind is str:
        return len(value)
    if kind in SCALARS:
        return NUMBER_SIZE
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, _CONTAINERS):
        return None
    return _OBJECT_SIZE


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numbers_among(values) -> list:
    return [value for value in values if is_number(value)]


def mapping_values(values) -> list:
    return [item for value in values if isinstance(value, dict) for item in value.values()]


def check_numbers_in(values) -> None:
    """A number argument is a width or a count to some call: none may exceed a prompt."""
    for value in values:
        if type(value) in (int, float) and value > MAX_PROMPT_CHARS:
            raise too_large()


def check_number_total(numbers) -> None:
    if sum(abs(number) for number in numbers) > MAX_PROMPT_CHARS:
        raise too_large()


def check_width_total(texts) -> None:
    """Field widths in a format string: each allocates as much as an argument would."""
    total = 0
    for text in texts:
        for digits in _NUMBER.findall(text):
            if len(digits) > 7:
                raise too_large()
            total += int(digits)
    if total > MAX_PROMPT_CHARS:
        raise too_large()


def _check_percent_format(text: str, values) -> None:
    """`'%9999s' % x`, and `'%*s' % (width, x)` whose widths come from the values."""
    fields = _PERCENT_FIELD.findall(text)
    check_width_total(number for field in fields for number in field if number != "*")
    if any("*" in field for field in fields):
        values = values if isinstance(values, tuple) else (values,)
        check_number_total(numbers_among(values))


def _percent_format_size(text, values) -> int:
    if isinstance(text, str):
        _check_percent_format(text, values)
    return 0


def estimate_binop(budget: RenderBudget, operator: str, left, right) -> None:
    if operator == "*":
        budget.check_size(_repeat_size(left, right))
        if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise too_large("number")
    elif operator == "**" and isinstance(left, int) and abs(left) > 1 and is_number(right):
        if right > 0 and left.bit_length() * right > MAX_INT_BITS:
            raise too_large("number")
    elif operator == "%" and isinstance(left, str):
        _check_percent_format(left, right)


def _repeat_size(left, right) -> int:
    """How large `left * right` would be when it repeats a sequence, else 0."""
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, int):
            return value_size(sequence, MAX_PROMPT_CHARS) * count
    return 0


def estimate_str_method(budget: RenderBudget, text: str, name: str, args, kwargs) -> None:
    """The methods whose result can outgrow their string and arguments."""
    if name == "join" and args:
        budget.check_size(_join_size(args[0], text))
    elif name == "replace" and len(args) >= 2:
        budget.check_size(_replace_size(text, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count")))


def _join_size(items, separator) -> int:
    if not hasattr(items, "__len__"):
        return 0
    text = separator if isinstance(separator, str) else ""
    return value_size(items, MAX_PROMPT_CHARS << 4) + max(len(items) - 1, 0) * len(text)


def _replace_size(text, old, new, count) -> int:
    if not all(isinstance(value, str) for value in (text, old, new)):
        return 0
    occurrences = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        occurrences = min(occurrences, count)
    return len(text) + occurrences * max(len(new) - len(old), 0)


def _lines(text) -> int:
    return text.count("\n") + 1 if isinstance(text, str) else 1


def _text_length(value) -> int:
    return len(value) if isinstance(value, str) else value if isinstance(value, int) else 0


def _indent_size(arguments: dict) -> int:
    return len(str(arguments["s"])) + _lines(arguments["s"]) * _text_length(arguments["width"])


def _wordwrap_size(arguments: dict) -> int:
    text = str(arguments["s"])
    breaks = len(text) // max(_text_length(arguments["width"]), 1) + _lines(text)
    return len(text) + breaks * _text_length(arguments["wrapstring"] or "\n")


def _urlize_size(arguments: dict) -> int:
    text = str(arguments["value"])
    extras = sum(_text_length(arguments[key] or "") for key in ("target", "rel"))
    return 4 * len(text) + (len(text.split()) + 1) * extras


def _json_size(arguments: dict) -> int:
    """An indent or separator is written for every item; one longer than any layout needs is
    refused outright rather than estimated against the nesting depth."""
    padding = [arguments.get("indent"), *(arguments.get("separators") or ())]
    if any(_text_length(value) > _MAX_PADDING for value in padding if value is not None):
        raise too_large()
    return 0


# The size a filter's result would reach, from its bound arguments (or a TemplateError).
FILTER_ESTIMATES = {
    "join": lambda arguments: _join_size(arguments["value"], arguments["d"]),
    "replace": lambda arguments: _replace_size(arguments["s"], arguments["old"], arguments["new"], arguments["count"]),
    "indent": _indent_size,
    "wordwrap": _wordwrap_size,
    "urlize": _urlize_size,
    "tojson": _json_size,
    "format": lambda arguments: _percent_format_size(arguments["value"], arguments["kwargs"] or arguments["args"]),
}
