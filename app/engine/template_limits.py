"""The limits shared by the chat-template sandbox's modules, and the error they all raise.

A module of its own so that the sandbox (template_sandbox), the size measuring and growth
estimates (template_sizes) and the source checks (template_source) can each raise the same
TemplateError against the same limits without importing one another in a circle.
"""

from __future__ import annotations

MAX_PROMPT_CHARS = 4_000_000
MAX_INT_BITS = 16_384  # Python refuses to print integers over 4,300 digits anyway
MESSAGE_DETAIL_CHARS = 160


class TemplateError(Exception):
    """A chat template that cannot be rendered; the message is written for the user."""


def too_large(what: str = "value") -> TemplateError:
    return TemplateError(f"The chat template tried to build an absurdly large {what}; it looks broken.")
