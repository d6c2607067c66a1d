"""The Jinja sandbox chat templates run in, with limits on time and size.

Jinja's `ImmutableSandboxedEnvironment` stops attribute escapes (`__class__`, `__globals__`)
and mutation of the values passed in, but not a template that simply takes everything: loops
that run for hours, or `'x' * 10**9`, `'x'|center(10**9)` and `'%999999999s'|format(x)`,
which allocate gigabytes in one step. A GGUF's template comes from a stranger, so each of
those ends here in a TemplateError instead of a frozen or killed app:

- time: a deadline checked at every block body (loop iteration, branch, macro call) as well
  as at every piece of output, so loops that write nothing are caught too;
- size: every call and filter is refused an integer argument larger than a prompt may be,
  or a number that large inside a format string, and its result is refused when it is
  larger than a prompt may be; `*` and `**` are refused when their result would be.
"""

from __future__ import annotations

import functools
import re
import threading
import time

from jinja2.compiler import CodeGenerator
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_PROMPT_CHARS = 4_000_000
MAX_RENDER_SECONDS = 2.0
_MAX_EXPONENT = 1000
_NUMBER = re.compile(r"\d+")
# The width and precision of a printf-style field, and the spec after ':' of a str.format field.
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\d*)(?:\.(\d*))?")
_BRACE_SPEC = re.compile(r"\{[^{}:]*:([^{}]*)\}")


class TemplateError(Exception):
    """A chat template that cannot be rendered; the message is written for the user."""


def _too_large(what: str) -> TemplateError:
    return TemplateError(f"The chat template tried to build an absurdly large {what}; it looks broken.")


class _BudgetCheckingCodeGenerator(CodeGenerator):
    """Compiles `environment.check_render_budget()` into the start of every block body."""

    def blockvisit(self, nodes, frame) -> None:
        self.writeline("environment.check_render_budget()")
        super().blockvisit(nodes, frame)


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with the limits above; call start_deadline() before each render."""

    code_generator_class = _BudgetCheckingCodeGenerator
    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self, **options):
        super().__init__(**options)
        self._render = threading.local()  # the GUI thread and the engine's render at once

    def start_deadline(self) -> None:
        """Start this thread's render clock; check_render_budget() measures from here."""
        self._render.deadline = time.monotonic() + MAX_RENDER_SECONDS

    def check_render_budget(self) -> None:
        deadline = getattr(self._render, "deadline", None)
        if deadline is not None and time.monotonic() > deadline:
            raise TemplateError(f"The chat template took more than {MAX_RENDER_SECONDS:g} s to render.")

    def bound_filters(self) -> None:
        """Put every filter (built-in or added) behind the argument and result checks."""
        self.filters = {name: _bounded(function) for name, function in self.filters.items()}

    # Jinja calls these for the operations a template performs.

    def call(self, __context, __obj, *args, **kwargs):
        _check_arguments(args, kwargs)
        return _checked_result(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value):
        """`'…'.format` as the sandbox hands it out, with the format string checked first."""
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            _check_numbers(_BRACE_SPEC.findall(value.__self__))
        return wrapped

    def call_binop(self, context, operator, left, right):
        if operator == "*" and _repeat_size(left, right) > MAX_PROMPT_CHARS:
            raise _too_large("value")
        if operator == "**" and _is_number(left) and abs(left) > 1 and _is_number(right) and right > _MAX_EXPONENT:
            raise _too_large("number")
        if operator == "%" and isinstance(left, str):
            _check_percent_format(left)
        return _checked_result(super().call_binop(context, operator, left, right))


def _bounded(function):
    @functools.wraps(function)  # keeps jinja's pass_context/pass_environment marks
    def bounded(*args, **kwargs):
        _check_arguments(args, kwargs)
        if function.__name__ == "do_format" and args and isinstance(args[0], str):
            _check_percent_format(args[0])  # `'%9999s'|format(x)`: the filtered value is the format
        return _checked_result(function(*args, **kwargs))

    return bounded


def _check_arguments(args, kwargs) -> None:
    for value in (*args, *kwargs.values()):
        if _is_number(value) and value > MAX_PROMPT_CHARS:
            raise _too_large("value")


def _check_percent_format(text: str) -> None:
    """A field's width or precision allocates as much as an argument would."""
    _check_numbers(number for field in _PERCENT_FIELD.findall(text) for number in field)


def _check_numbers(texts) -> None:
    for text in texts:
        if any(len(digits) > 7 or int(digits) > MAX_PROMPT_CHARS for digits in _NUMBER.findall(text)):
            raise _too_large("value")


def _checked_result(value):
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_PROMPT_CHARS:
        raise _too_large("value")
    return value


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _repeat_size(left, right) -> int:
    """How long `left * right` would be when it repeats a sequence, else 0."""
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, list, tuple)) and isinstance(count, int):
            return len(sequence) * count
    return 0
