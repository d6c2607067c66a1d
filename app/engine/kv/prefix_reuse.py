"""Prefix reuse: the engine remembers the token sequence it last evaluated as text segments
(the prompt, then the reply exactly as generated). The next prompt reuses those tokens for as
long as its text starts with the same segments, and the KV cache keeps everything up to the
first differing token, so turn N+1 evaluates only what is new.

No llama_cpp here: the engine hands in its tokenizer and what counts as a special token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .segments import Segment


class Tokenize(Protocol):
    """The engine's tokenizer (generator.Engine.tokenize)."""

    def __call__(self, text: str, at_start: bool = True, after_text: bool = False) -> list[int]: ...


class PrefixReuse:
    """The segments of the token sequence the KV cache holds, and the prompt tokens that reuse
    them. The engine sets `segments` once the tokens they stand for are evaluated (a prompt
    and its reply, a restored state)."""

    def __init__(self, tokenize: Tokenize, is_special: Callable[[int], bool]):
        self._tokenize = tokenize
        self._is_special = is_special
        self.segments: list[Segment] = []

    @property
    def tokens(self) -> list[int]:
        """The token sequence the segments stand for (what the next prompt should extend)."""
        return [token for segment in self.segments for token in segment.tokens]

    def tokens_for(self, text: str) -> tuple[list[int], list[Segment]]:
        """The tokens of `text`, reusing the remembered segments for as long as it starts with
        them, and the segments those tokens make (to remember once they are evaluated)."""
        data = text.encode("utf-8")
        tokens: list[int] = []
        segments: list[Segment] = []
        position = 0
        for segment in self.segments:
            taken = segment.match(data, position)
            if taken.tokens:
                tokens += taken.tokens
                segments.append(taken)
                position += len(taken.data)
            if taken is not segment:
                break
        if position < len(data):
            rest = data[position:]
            # An image's positions (negative ids, engine/llama/vision.py) are not text, nor tokens to ask about.
            after_text = bool(tokens) and tokens[-1] >= 0 and not self._is_special(tokens[-1])
            rest_tokens = self._tokenize(rest.decode("utf-8"), at_start=position == 0, after_text=after_text)
            tokens += rest_tokens
            segments.append(Segment(rest, rest_tokens))
        return tokens, segments


def common_prefix(cached: Sequence[int], prompt: list[int]) -> int:
    """How many tokens the KV cache's sequence and the prompt share from the start."""
    common = 0
    for a, b in zip(cached, prompt):
        if a != b:
            break
        common += 1
    return common
