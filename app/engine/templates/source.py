"""Checks on a chat template's source before and while Jinja compiles it.

Kept apart from the sandbox's render-time checks (sandbox.py) because they concern only
the text of the template: its length and nesting depth are refused before the parser meets
them, and every way compiling can fail (Jinja's syntax errors, Python's compiler giving up on
deep code, anything unforeseen) is translated into a one-line TemplateError.
"""

from __future__ import annotations

import jinja2

from ...common.text import shorten
from .limits import MESSAGE_DETAIL_CHARS, TemplateError

MAX_TEMPLATE_CHARS = 100_000  # published templates are under 20,000 characters
MAX_NESTING = 32  # published templates nest blocks, or brackets, fewer than 10 deep

_BLOCK_TAGS = frozenset({"for", "if", "macro", "call", "filter", "with", "block", "autoescape", "generation"})
_BRACKETS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _too_complex(exc: BaseException) -> TemplateError:
    return TemplateError(
        f"The chat template is nested too deeply or too complex to compile ({type(exc).__name__}); it looks broken."
    )


def compile_checked(environment: jinja2.Environment, source: str) -> jinja2.Template:
    """The template compiled by `environment`, or a TemplateError saying in one line why it cannot be."""
    if len(source) > MAX_TEMPLATE_CHARS:
        raise TemplateError(
            f"The chat template is too long ({len(source):,} characters; at most {MAX_TEMPLATE_CHARS:,}); "
            "it looks broken."
        )
    try:
        _check_nesting(environment, source)
        return environment.from_string(source)
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


def _check_nesting(environment: jinja2.Environment, source: str) -> None:
    """Refuse deep nesting before the parser meets it: Jinja's parser and Python's compiler
    recurse once or more per level and fail in different ways (RecursionError, "too many
    levels of indentation", "too many statically nested blocks")."""
    blocks = brackets = 0
    tag: list[str] | None = None  # the names and operators of the block tag being read
    for _, kind, value in environment.lex(source):
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


def _block_depth_change(tag: list[str]) -> int:
    """+1 for a tag that opens a block, -1 for one that closes one (`{% set x %}` opens one,
    `{% set x = … %}` does not)."""
    name = tag[0]
    if name.startswith("end"):
        return -1
    if name in _BLOCK_TAGS or (name == "set" and "=" not in tag):
        return 1
    return 0
