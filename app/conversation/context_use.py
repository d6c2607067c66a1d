"""How much of the model's context window a conversation fills, for the status bar's meter.

The engine counts a reply's tokens exactly, but only tells when the reply ends (ReplyStats).
While a reply is written the meter still has to move, so it is estimated from what is known:
the last reply the engine measured in this conversation (its prompt and its reply), plus the
text added since, at CHARS_PER_TOKEN characters a token. The estimate is marked as such and
replaced by the engine's count when the reply ends. Qt-free: ChatSession computes it, the
window shows it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..engine.types import ReplyStats

# Characters per token in English prose for the tokenizers of today's small models (Gemma,
# Llama, Qwen): about four. Only ever used for an estimate that the engine's count replaces.
CHARS_PER_TOKEN = 4
# Tokens an attached image takes, estimated: Gemma 3's projector makes 256 of every image, and
# others make from 64 (SmolVLM's smallest) to over a thousand (tiled large images).
IMAGE_TOKENS = 256


@dataclass(frozen=True)
class ContextUse:
    """Tokens of the context window a conversation fills; `estimated` while a reply is being
    written (or nothing was measured yet), exact when the engine counted them."""

    tokens: int
    estimated: bool


def measured(stats: ReplyStats | None) -> int | None:
    """Tokens in the context after a finished reply (its prompt and its own), or None when the
    engine did not count them (a reply that never started, an imported one)."""
    if stats is None or not stats.prompt_tokens:
        return None
    return stats.prompt_tokens + (stats.completion_tokens or 0)


def estimate_tokens(characters: int) -> int:
    """Tokens in a text of this many characters, estimated."""
    return math.ceil(characters / CHARS_PER_TOKEN)


def estimate_prompt(history: list[dict], last_measured: int | None) -> int:
    """The prompt a reply to `history` reads: the tokens measured after the last reply, plus the
    messages after it; everything, estimated, when no reply was measured."""
    if last_measured is None:
        return sum(map(_estimate_message, history))
    roles = [message["role"] for message in history]
    after = len(roles) - roles[::-1].index("assistant") if "assistant" in roles else 0
    return last_measured + sum(map(_estimate_message, history[after:]))


def _estimate_message(message: dict) -> int:
    return estimate_tokens(len(message["content"])) + IMAGE_TOKENS * len(message.get("images") or ())

