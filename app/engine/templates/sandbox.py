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

This module is the environment and its render-time checks; the source checks and compile-error
translation are in source.py, the measuring and growth estimates in sizes.py, and
the error, the shared limits and the render budget in limits.py.
"""

from __future__ import annotations

import functools
import inspect
import re
import threading
from collections.abc import Iterator

import jinja2
from jinja2.compiler import CodeGenerator, optimizeconst
from jinja2.filters import make_attrgetter
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .limits import MAX_INT_BITS, MAX_PROMPT_CHARS, MAX_RENDER_SECONDS, RenderBudget, TemplateError, too_large
from .sizes import (
    FILTER_ESTIMATES,
    NUMBER_SIZE,
    SCALARS,
    check_number_total,
    check_numbers_in,
    check_width_total,
    estimate_binop,
    estimate_str_method,
    is_number,
    mapping_values,
    numbers_among,
    value_size,
)
from .source import compile_checked

MAX_GIVEN_CHARS = 16 * MAX_PROMPT_CHARS
# The spec after ':' of a str.format field.
_BRACE_SPEC = re.compile(r"\{[^{}:]*:([^{}]*)\}")
_NESTED_BRACE_SPEC = re.compile(r"\{[^{}]*:[^{}]*\{")
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
_GROWING_BINOPS = frozenset({"*", "**", "%"})
# Filters that pick, count or reorder values without turning them into text: their operands
# need no measuring (a template may ask `messages|length` once per message), only their result.
_STRUCTURAL_FILTERS = frozenset({
    "abs", "attr", "batch", "count", "d", "default", "dictsort", "first", "float", "groupby", "int", "items",
    "last", "length", "list", "map", "max", "min", "random", "reject", "rejectattr", "reverse", "round",
    "select", "selectattr", "slice", "sort", "sum", "unique",
})
_SEQUENCE_METHODS = frozenset({"count", "index", "copy"})
_MAPPING_METHODS = frozenset({"get", "items", "keys", "values", "copy"})


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
        return compile_checked(self, source)

    # --- rendering -----------------------------------------------------------------------------

    def render_bounded(self, template: jinja2.Template, context: dict) -> str:
        """Render within the limits: the allowance is MAX_PROMPT_CHARS beyond the context's size
        (counted up to MAX_GIVEN_CHARS: what a conversation can be, not what a file can claim)."""
        given = min(value_size(context, MAX_GIVEN_CHARS), MAX_GIVEN_CHARS)
        budget = RenderBudget(MAX_RENDER_SECONDS, MAX_PROMPT_CHARS + given)
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

    def _budget(self) -> RenderBudget:
        """This thread's render budget; outside a render (Jinja folding constants while it
        compiles) a fresh one that limits sizes only."""
        return getattr(self._render, "budget", None) or RenderBudget(float("inf"), MAX_PROMPT_CHARS)

    def check_render_budget(self) -> None:
        self._budget().check_time()

    @staticmethod
    def _check_operands(budget: RenderBudget, operands) -> None:
        """The operands together fit the allowance, so text made from them is bounded too."""
        total = 0
        allowance = budget.allowance
        for operand in operands:
            kind = type(operand)
            if kind is str:
                total += len(operand)
            elif kind in SCALARS:
                total += NUMBER_SIZE
            else:
                total += value_size(operand, allowance - total)
            if total > allowance:
                raise too_large()

    def _checked_result(self, budget: RenderBudget, result, operands=()):
        """Measure what an operation built; a lazy result is measured as it is consumed.
        Numbers are not counted (only their bits are bounded), nor a value handed back."""
        kind = type(result)
        if kind is str:
            size = len(result)
        elif kind in SCALARS:
            if kind is int and result.bit_length() > MAX_INT_BITS:
                raise too_large("number")
            return result
        elif isinstance(result, Iterator) and not isinstance(result, (str, bytes)):
            return self._bounded_iteration(result)
        else:
            size = value_size(result, budget.allowance)
        if size > budget.allowance:
            raise too_large()
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
        if kind is not str and kind not in SCALARS:
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
            check_numbers_in(operands)
            self._check_operands(budget, operands)
        owner = getattr(__obj, "__self__", None)
        if type(owner) is str:
            estimate_str_method(budget, owner, __obj.__name__, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        if result is owner:
            return result
        return self._checked_result(budget, result, operands)

    def call_binop(self, context, operator, left, right):
        budget = self._budget()
        budget.check_time()
        self._check_operands(budget, (left, right))
        if operator in _GROWING_BINOPS:
            estimate_binop(budget, operator, left, right)
        return self._checked_result(budget, self.binop_table[operator](left, right), (left, right))

    def wrap_str_format(self, value):
        """`'…'.format` as the sandbox hands it out, with its widths checked first."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text = value.__self__
        check_width_total(_BRACE_SPEC.findall(text))
        if not _NESTED_BRACE_SPEC.search(text):
            return wrapped

        @functools.wraps(wrapped)
        def with_nested_widths_checked(*args, **kwargs):  # '{:{}}'.format(x, width)
            widths = numbers_among(args) + numbers_among(kwargs.values()) + numbers_among(mapping_values(args))
            check_number_total(widths)
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
        estimate = FILTER_ESTIMATES.get(name)
        signature = _signature(function)

        measure_operands = name not in _STRUCTURAL_FILTERS

        @functools.wraps(function)  # keeps jinja's pass_context/pass_environment marks
        def bounded(*args, **kwargs):
            budget = self._budget()
            budget.check_time()
            args = _materialized(args)
            operands = (*args, *kwargs.values()) if kwargs else args
            check_numbers_in(operands)
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
    if is_number(start):
        return sum(iterable, start)
    total = start
    for item in iterable:
        total = environment.call_binop(None, "+", total, item)
    return total


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
