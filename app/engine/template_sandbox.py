"""The Jinja sandbox chat templates run in, with limits on time, size and nesting.

Jinja's `ImmutableSandboxedEnvironment` stops attribute escapes (`__class__`, `__globals__`)
and mutation of the values passed in, but not a template that simply takes everything: loops
that run for hours, values that grow to gigabytes (`'x' * 10**9`, `s ~ s` in a few `set`s, a
list joined with a megabyte separator), or source nested so deeply that Python's own compiler
gives up. A GGUF's template comes from a stranger, so each of those ends here in a one-line
TemplateError instead of a frozen, killed or crashed app:

- source: at most MAX_TEMPLATE_CHARS long and MAX_NESTING deep (blocks and brackets), and
  anything compiling it raises (RecursionError, IndentationError…) becomes a TemplateError;
- time: a deadline checked at every block body (loop iteration, branch, macro call), at every
  operator, filter, call, concatenation and output, and at every item a filter yields;
- size: a render may build values of at most its *allowance* (MAX_PROMPT_CHARS plus the size
  of what it was given, so a long conversation never counts against the template). Every
  operand of an operator, filter, call or concatenation, and every value written out, is
  measured before the operation (value_size: characters, plus a little for each container
  slot and number), so nothing is turned into text or joined that would exceed it; operations
  whose result can outgrow their operands (repetition, powers, format widths, separators,
  replacements, indents) are estimated first; every result is measured after; and everything a
  render builds counts towards a running total of BUILT_PER_ALLOWANCE allowances, so a
  template cannot keep many large values alive at once.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re
import threading
import time
from collections.abc import Iterator

import jinja2
from jinja2.compiler import CodeGenerator, optimizeconst
from jinja2.filters import make_attrgetter
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from .text import shorten

MAX_PROMPT_CHARS = 4_000_000
MAX_GIVEN_CHARS = 16 * MAX_PROMPT_CHARS
MAX_TEMPLATE_CHARS = 100_000  # published templates are under 20,000 characters
MAX_NESTING = 32  # published templates nest blocks, or brackets, fewer than 10 deep
MAX_VALUE_DEPTH = 100  # and their values (lists in dicts in lists…) fewer than 10 deep
MAX_RENDER_SECONDS = 2.0
BUILT_PER_ALLOWANCE = 8
_MAX_INT_BITS = 16_384  # Python refuses to print integers over 4,300 digits anyway
_MAX_PADDING = 64  # a JSON indent or separator longer than this is not formatting
MESSAGE_DETAIL_CHARS = 160
# Container slots and numbers count towards a value's size too: a list of a million small
# values costs tens of megabytes although its text is short.
_SLOT_SIZE = 4
_OBJECT_SIZE = 16
_NUMBER_SIZE = 8

_NUMBER = re.compile(r"\d+")
# The width and precision of a printf-style field, and the spec after ':' of a str.format field.
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d*)(?:\.(\*|\d*))?")
_BRACE_SPEC = re.compile(r"\{[^{}:]*:([^{}]*)\}")
_NESTED_BRACE_SPEC = re.compile(r"\{[^{}]*:[^{}]*\{")
_BLOCK_TAGS = frozenset({"for", "if", "macro", "call", "filter", "with", "block", "autoescape", "generation"})
_BRACKETS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
# Methods a template may call on strings, lists and dicts: everything that reads, and the few
# that build text (each of those bounded below). Not encode, expandtabs, translate, fromkeys…
_STR_METHODS = frozenset({
    "capitalize", "casefold", "center", "count", "endswith", "find", "format", "format_map", "index",
    "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric",
    "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "partition",
    "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit",
    "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title", "upper", "zfill",
    "striptags", "unescape",  # Markup's, after |safe
})
# Filters that pick, count or reorder values without turning them into text: their operands
# need no measuring (a template may ask `messages|length` once per message), only their result.
_SCALARS = frozenset({int, float, bool, type(None)})
_GROWING_BINOPS = frozenset({"*", "**", "%"})
_STRUCTURAL_FILTERS = frozenset({
    "abs", "attr", "batch", "count", "d", "default", "dictsort", "first", "float", "groupby", "int", "items",
    "last", "length", "list", "map", "max", "min", "random", "reject", "rejectattr", "reverse", "round",
    "select", "selectattr", "slice", "sort", "sum", "unique",
})
_SEQUENCE_METHODS = frozenset({"count", "index", "copy"})
_MAPPING_METHODS = frozenset({"get", "items", "keys", "values", "copy"})


class TemplateError(Exception):
    """A chat template that cannot be rendered; the message is written for the user."""


def _too_large(what: str = "value") -> TemplateError:
    return TemplateError(f"The chat template tried to build an absurdly large {what}; it looks broken.")


def _too_complex(exc: BaseException) -> TemplateError:
    return TemplateError(
        f"The chat template is nested too deeply or too complex to compile ({type(exc).__name__}); it looks broken."
    )


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
    if kind in _SCALARS:
        return _NUMBER_SIZE
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, _CONTAINERS):
        return None
    return _OBJECT_SIZE


class _RenderBudget:
    """What one render may still spend: time, and the characters it may build. Its checks run
    at every operation a template performs, so they are kept to a comparison each."""

    __slots__ = ("deadline", "allowance", "built", "built_limit")

    def __init__(self, deadline: float, allowance: int):
        self.deadline = deadline
        self.allowance = allowance
        self.built = 0
        self.built_limit = BUILT_PER_ALLOWANCE * allowance

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateError(f"The chat template took more than {MAX_RENDER_SECONDS:g} s to render.")

    def check_size(self, size: int) -> None:
        if size > self.allowance:
            raise _too_large()

    def add_built(self, size: int) -> None:
        self.built += size
        if self.built > self.built_limit:
            raise TemplateError(
                f"The chat template built more than {self.built_limit:,} characters of values while rendering; "
                "it looks broken."
            )


class _BudgetCheckingCodeGenerator(CodeGenerator):
    """Compiles the budget checks into the template: at the start of every block body, and
    around every `~` concatenation (which Jinja otherwise compiles to a plain join)."""

    def blockvisit(self, nodes, frame) -> None:
        self.writeline("environment.check_render_budget()")
        super().blockvisit(nodes, frame)

    @optimizeconst
    def visit_Concat(self, node, frame) -> None:
        if frame.eval_ctx.volatile:
            join = "(markup_join if context.eval_ctx.volatile else str_join)"
        else:
            join = "markup_join" if frame.eval_ctx.autoescape else "str_join"
        self.write(f"environment.checked_concat({join}, (")
        for operand in node.nodes:
            self.visit(operand, frame)
            self.write(", ")
        self.write("))")


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with the limits above: compile with compile_bounded() and render
    with render_bounded()."""

    code_generator_class = _BudgetCheckingCodeGenerator
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def __init__(self, **options):
        super().__init__(**options)
        self._render = threading.local()  # the GUI thread and the engine's render at once
        self.finalize = self._checked_output
        self.concat = self._checked_join
        del self.globals["lipsum"]  # lipsum(n=10**6) writes for minutes inside one call

    # --- compiling -----------------------------------------------------------------------------

    def compile_bounded(self, source: str) -> jinja2.Template:
        """The compiled template, or a TemplateError saying in one line why it cannot be."""
        if len(source) > MAX_TEMPLATE_CHARS:
            raise TemplateError(
                f"The chat template is too long ({len(source):,} characters; at most {MAX_TEMPLATE_CHARS:,}); "
                "it looks broken."
            )
        try:
            self._check_nesting(source)
            return self.from_string(source)
        except TemplateError:
            raise
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(
                f"The chat template has a syntax error on line {exc.lineno}: {shorten(exc.message or '', MESSAGE_DETAIL_CHARS)}"
            ) from None
        except (RecursionError, MemoryError, IndentationError) as exc:
            raise _too_complex(exc) from None
        except SyntaxError as exc:  # Python's compiler on the code Jinja generated
            if "too many" in str(exc) or "nested" in str(exc):  # "too many statically nested blocks"
                raise _too_complex(exc) from None
            raise TemplateError(f"The chat template could not be compiled: {shorten(str(exc), MESSAGE_DETAIL_CHARS)}") from None
        except Exception as exc:  # a compiler can fail in ways nobody listed: never a traceback
            raise TemplateError(
                f"The chat template could not be compiled: {type(exc).__name__}: {shorten(str(exc), MESSAGE_DETAIL_CHARS)}"
            ) from None

    def _check_nesting(self, source: str) -> None:
        """Refuse deep nesting before the parser meets it: Jinja's parser and Python's compiler
        recurse once or more per level and fail in different ways (RecursionError, "too many
        levels of indentation", "too many statically nested blocks")."""
        blocks = brackets = 0
        tag: list[str] | None = None  # the names and operators of the block tag being read
        for _, kind, value in self.lex(source):
            if kind == "operator" and value in _BRACKETS:
                brackets += _BRACKETS[value]
            if kind == "block_begin":
                tag = []
            elif kind == "block_end" and tag:
                blocks += _block_depth_change(tag)
                tag = None
            elif kind in ("name", "operator") and tag is not None:
                tag.append(value)
            if blocks > MAX_NESTING or brackets > MAX_NESTING:
                raise TemplateError(
                    f"The chat template is nested more than {MAX_NESTING} levels deep; it looks broken."
                )

    # --- rendering -----------------------------------------------------------------------------

    def render_bounded(self, template: jinja2.Template, context: dict) -> str:
        """Render within the limits: the allowance is MAX_PROMPT_CHARS beyond the context's size
        (counted up to MAX_GIVEN_CHARS: what a conversation can be, not what a file can claim)."""
        given = min(value_size(context, MAX_GIVEN_CHARS), MAX_GIVEN_CHARS)
        budget = _RenderBudget(time.monotonic() + MAX_RENDER_SECONDS, MAX_PROMPT_CHARS + given)
        self._render.budget = budget
        try:
            pieces: list[str] = []
            size = 0
            for piece in template.generate(**context):
                size += len(piece)
                if size > budget.allowance:
                    raise TemplateError("The chat template produced an absurdly long prompt; it looks broken.")
                budget.check_time()
                pieces.append(piece)
            return "".join(pieces)
        finally:
            self._render.budget = None

    def _budget(self) -> _RenderBudget:
        """This thread's render budget; outside a render (Jinja folding constants while it
        compiles) a fresh one that limits sizes only."""
        return getattr(self._render, "budget", None) or _RenderBudget(float("inf"), MAX_PROMPT_CHARS)

    def check_render_budget(self) -> None:
        self._budget().check_time()

    @staticmethod
    def _check_operands(budget: _RenderBudget, operands) -> None:
        """The operands together fit the allowance, so text made from them is bounded too."""
        total = 0
        allowance = budget.allowance
        for operand in operands:
            kind = type(operand)
            if kind is str:
                total += len(operand)
            elif kind in _SCALARS:
                total += _NUMBER_SIZE
            else:
                total += value_size(operand, allowance - total)
            if total > allowance:
                raise _too_large()

    def _checked_result(self, budget: _RenderBudget, result, operands=()):
        """Measure what an operation built; a lazy result is measured as it is consumed.
        Numbers are not counted (only their bits are bounded), nor a value handed back."""
        kind = type(result)
        if kind is str:
            size = len(result)
        elif kind in _SCALARS:
            if kind is int and result.bit_length() > _MAX_INT_BITS:
                raise _too_large("number")
            return result
        elif isinstance(result, Iterator) and not isinstance(result, (str, bytes)):
            return self._bounded_iteration(result)
        else:
            size = value_size(result, budget.allowance)
        if size > budget.allowance:
            raise _too_large()
        for operand in operands:
            if result is operand:
                return result
        budget.add_built(size)
        return result

    def _bounded_iteration(self, items):
        budget = self._budget()
        total = 0
        for count, item in enumerate(items):
            if not count % 64:
                budget.check_time()
            total += value_size(item, budget.allowance)
            budget.check_size(total)
            yield item

    def _checked_output(self, value):
        """Jinja's finalize: every `{{ … }}` value, before it becomes text. A string is written
        as it is (the output and joins measure it); anything else is made into new text."""
        budget = self._budget()
        budget.check_time()
        kind = type(value)
        if kind is not str and kind not in _SCALARS:
            size = value_size(value, budget.allowance)
            budget.check_size(size)
            budget.add_built(size)
        return value

    def _checked_join(self, pieces) -> str:
        """Jinja's concat, which joins the output of macros, `{% set %}` blocks and filter blocks."""
        pieces = list(pieces)
        budget = self._budget()
        budget.check_time()
        budget.check_size(sum(map(len, pieces)))
        return self._checked_result(budget, "".join(pieces))

    def checked_concat(self, join, operands):
        """`a ~ b ~ c`: measured before the text is made."""
        budget = self._budget()
        budget.check_time()
        self._check_operands(budget, operands)
        return self._checked_result(budget, join(operands), operands)

    # Jinja calls these for the operations a template performs.

    def call(self, __context, __obj, *args, **kwargs):
        budget = self._budget()
        budget.check_time()
        operands = args
        if args or kwargs:
            args = _materialized(args)
            operands = (*args, *kwargs.values())
            _check_numbers_in(operands)
            self._check_operands(budget, operands)
        owner = getattr(__obj, "__self__", None)
        if type(owner) is str:
            _estimate_str_method(budget, owner, __obj.__name__, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        if result is owner:
            return result
        return self._checked_result(budget, result, operands)

    def call_binop(self, context, operator, left, right):
        budget = self._budget()
        budget.check_time()
        self._check_operands(budget, (left, right))
        if operator in _GROWING_BINOPS:
            _estimate_binop(budget, operator, left, right)
        return self._checked_result(budget, self.binop_table[operator](left, right), (left, right))

    def wrap_str_format(self, value):
        """`'…'.format` as the sandbox hands it out, with its widths checked first."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text = value.__self__
        _check_width_total(_BRACE_SPEC.findall(text))
        if not _NESTED_BRACE_SPEC.search(text):
            return wrapped

        @functools.wraps(wrapped)
        def with_nested_widths_checked(*args, **kwargs):  # '{:{}}'.format(x, width)
            _check_number_total(_numbers(args) + _numbers(kwargs.values()) + _numbers(_mapping_values(args)))
            return wrapped(*args, **kwargs)

        return with_nested_widths_checked

    def is_safe_attribute(self, obj, attr, value) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        if not callable(value):
            return True
        if isinstance(obj, str):
            return attr in _STR_METHODS
        if isinstance(obj, (list, tuple)):
            return attr in _SEQUENCE_METHODS
        if isinstance(obj, dict):
            return attr in _MAPPING_METHODS
        return not isinstance(obj, (bytes, bytearray, set, frozenset))

    def bound_filters(self) -> None:
        """Put every filter (built-in or added) behind the operand, estimate and result checks."""
        self.filters = {name: self._bounded_filter(name, function) for name, function in self.filters.items()}
        self.filters["sum"] = self._bounded_filter("sum", _sum)

    def _bounded_filter(self, name: str, function):
        estimate = _FILTER_ESTIMATES.get(name)
        signature = _signature(function)

        measure_operands = name not in _STRUCTURAL_FILTERS

        @functools.wraps(function)  # keeps jinja's pass_context/pass_environment marks
        def bounded(*args, **kwargs):
            budget = self._budget()
            budget.check_time()
            args = _materialized(args)
            operands = (*args, *kwargs.values()) if kwargs else args
            _check_numbers_in(operands)
            if measure_operands:
                self._check_operands(budget, operands)
            if estimate is not None and signature is not None:
                try:
                    arguments = signature.bind(*args, **kwargs)
                except TypeError:
                    pass  # the filter itself says what is wrong with its arguments
                else:
                    arguments.apply_defaults()
                    budget.check_size(estimate(arguments.arguments))
            return self._checked_result(budget, function(*args, **kwargs), operands)

        return bounded


@jinja2.pass_environment
def _sum(environment, iterable, attribute=None, start=0):
    """Jinja's `sum`, adding with the checked `+`: Python's sum() of lists copies the growing
    list at every step, quadratic and out of reach of the deadline."""
    if attribute is not None:
        iterable = map(make_attrgetter(environment, attribute), iterable)
    if _is_number(start):
        return sum(iterable, start)
    total = start
    for item in iterable:
        total = environment.call_binop(None, "+", total, item)
    return total


def _block_depth_change(tag: list[str]) -> int:
    """+1 for a tag that opens a block, -1 for one that closes one (`{% set x %}` opens one,
    `{% set x = … %}` does not)."""
    name = tag[0]
    if name.startswith("end"):
        return -1
    if name in _BLOCK_TAGS or (name == "set" and "=" not in tag):
        return 1
    return 0


def _signature(function) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):  # some builtins have none
        return None


def _materialized(values: tuple) -> tuple:
    """Lazy sequences (a filter's generators) among the arguments as lists, so they can be
    measured before use; their items are bounded as they come (_bounded_iteration)."""
    if not any(isinstance(value, Iterator) for value in values):
        return values
    return tuple(list(value) if isinstance(value, Iterator) and not isinstance(value, (str, bytes)) else value
                 for value in values)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers(values) -> list:
    return [value for value in values if _is_number(value)]


def _mapping_values(values) -> list:
    return [item for value in values if isinstance(value, dict) for item in value.values()]


def _check_numbers_in(values) -> None:
    """A number argument is a width or a count to some call: none may exceed a prompt."""
    for value in values:
        if type(value) in (int, float) and value > MAX_PROMPT_CHARS:
            raise _too_large()


def _check_number_total(numbers) -> None:
    if sum(abs(number) for number in numbers) > MAX_PROMPT_CHARS:
        raise _too_large()


def _check_width_total(texts) -> None:
    """Field widths in a format string: each allocates as much as an argument would."""
    total = 0
    for text in texts:
        for digits in _NUMBER.findall(text):
            if len(digits) > 7:
                raise _too_large()
            total += int(digits)
    if total > MAX_PROMPT_CHARS:
        raise _too_large()


def _check_percent_format(text: str, values) -> None:
    """`'%9999s' % x`, and `'%*s' % (width, x)` whose widths come from the values."""
    fields = _PERCENT_FIELD.findall(text)
    _check_width_total(number for field in fields for number in field if number != "*")
    if any("*" in field for field in fields):
        values = values if isinstance(values, tuple) else (values,)
        _check_number_total(_numbers(values))


def _percent_format_size(text, values) -> int:
    if isinstance(text, str):
        _check_percent_format(text, values)
    return 0


def _estimate_binop(budget: _RenderBudget, operator: str, left, right) -> None:
    if operator == "*":
        budget.check_size(_repeat_size(left, right))
        if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > _MAX_INT_BITS:
            raise _too_large("number")
    elif operator == "**" and isinstance(left, int) and abs(left) > 1 and _is_number(right):
        if right > 0 and left.bit_length() * right > _MAX_INT_BITS:
            raise _too_large("number")
    elif operator == "%" and isinstance(left, str):
        _check_percent_format(left, right)


def _repeat_size(left, right) -> int:
    """How large `left * right` would be when it repeats a sequence, else 0."""
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, int):
            return value_size(sequence, MAX_PROMPT_CHARS) * count
    return 0


def _estimate_str_method(budget: _RenderBudget, text: str, name: str, args, kwargs) -> None:
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
        raise _too_large()
    return 0


_FILTER_ESTIMATES = {
    "join": lambda arguments: _join_size(arguments["value"], arguments["d"]),
    "replace": lambda arguments: _replace_size(arguments["s"], arguments["old"], arguments["new"], arguments["count"]),
    "indent": _indent_size,
    "wordwrap": _wordwrap_size,
    "urlize": _urlize_size,
    "tojson": _json_size,
    "format": lambda arguments: _percent_format_size(arguments["value"], arguments["kwargs"] or arguments["args"]),
}
