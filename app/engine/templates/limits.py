"""The limits shared by the chat-template sandbox's modules, and the error they all raise.

A module of its own so that the sandbox (sandbox.py), the size measuring and growth
estimates (sizes.py) and the source checks (source.py) can each raise the same
TemplateError against the same limits without importing one another in a circle.
"""

from __future__ import annotations

import time

MAX_PROMPT_CHARS = 4_000_000
MAX_INT_BITS = 16_384  # Python refuses to print integers over 4,300 digits anyway
MESSAGE_DETAIL_CHARS = 160
MAX_RENDER_SECONDS = 2.0
BUILT_PER_ALLOWANCE = 8  # what a render may build in all, in allowances of its size


class TemplateError(Exception):
    """A chat template that cannot be rendered; the message is written for the user."""


def too_large(what: str = "value") -> TemplateError:
    return TemplateError(f"The chat template tried to build an absurdly large {what}; it looks broken.")


class RenderBudget:
    """What one render may still spend: time, and the characters it may build. Its checks run
    at every operation a template performs, so they are kept to a comparison each."""

    __slots__ = ("seconds", "deadline", "allowance", "built", "built_limit")

    def __init__(self, seconds: float, allowance: int):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.allowance = allowance
        self.built = 0
        self.built_limit = BUILT_PER_ALLOWANCE * allowance

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateError(f"The chat template took more than {self.seconds:g} s to render.")

    def check_size(self, size: int) -> None:
        if size > self.allowance:
            raise too_large()

    def add_built(self, size: int) -> None:
        self.built += size
        if self.built > self.built_limit:
            raise TemplateError(
                f"The chat template built more than {self.built_limit:,} characters of values while rendering; "
                "it looks broken."
            )
