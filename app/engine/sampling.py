"""Sampling parameters: validated once, at the edge, with messages a user can act on."""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field, replace


class SamplingError(ValueError):
    """A sampling parameter out of range; the message names the parameter and its range."""


@dataclass(frozen=True)
class SamplingParams:
    """How to pick each next token. Temperature 0 means greedy (always the likeliest token)."""

    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    repeat_last_n: int = 64
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None  # None: a fresh random seed for every reply
    stop: tuple[str, ...] = ()
    # token id -> added logit; also how tests force a model to emit a given token.
    logit_bias: dict[int, float] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "stop", tuple(self.stop))
        _check_range("temperature", self.temperature, 0.0, 5.0)
        _check_int("top_k", self.top_k, 0, 100_000, "0 turns it off")
        _check_range("top_p", self.top_p, 0.0, 1.0, low_open=True)
        _check_range("min_p", self.min_p, 0.0, 1.0)
        _check_range("repeat_penalty", self.repeat_penalty, 0.0, 5.0, low_open=True)
        _check_int("repeat_last_n", self.repeat_last_n, 0, 1_000_000, "0 turns it off")
        _check_range("presence_penalty", self.presence_penalty, -2.0, 2.0)
        _check_range("frequency_penalty", self.frequency_penalty, -2.0, 2.0)
        _check_int("max_tokens", self.max_tokens, 1, 10_000_000)
        if self.seed is not None:
            _check_int("seed", self.seed, 0, 2**32 - 1)
        for text in self.stop:
            if not isinstance(text, str) or not text:
                raise SamplingError("stop strings must be non-empty text")

    def resolved_seed(self) -> int:
        """The seed this reply uses: the user's, or a fresh one (llama.cpp's default repeats)."""
        return self.seed if self.seed is not None else secrets.randbits(31)

    def with_changes(self, **changes) -> "SamplingParams":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["stop"] = list(self.stop)
        data["logit_bias"] = {str(k): v for k, v in self.logit_bias.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "SamplingParams":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "logit_bias" in known:
            known["logit_bias"] = {int(k): float(v) for k, v in known["logit_bias"].items()}
        return cls(**known)


def _check_range(name, value, low, high, low_open=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SamplingError(f"{name} must be a number, not {value!r}")
    if value != value or value > high or value < low or (low_open and value == low):
        bound = f"above {low:g}" if low_open else f"at least {low:g}"
        raise SamplingError(f"{name} must be {bound} and at most {high:g} (got {value:g})")


def _check_int(name, value, low, high, note=""):
    if isinstance(value, bool) or not isinstance(value, int):
        raise SamplingError(f"{name} must be a whole number, not {value!r}")
    if not low <= value <= high:
        hint = f"; {note}" if note else ""
        raise SamplingError(f"{name} must be between {low:,} and {high:,} (got {value:,}){hint}")


PRESETS: dict[str, SamplingParams] = {
    # Deterministic: the likeliest token every time. For facts, code, extraction.
    "Precise": SamplingParams(temperature=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0),
    "Balanced": SamplingParams(),
    # Looser: more varied wording, for brainstorming and fiction.
    "Creative": SamplingParams(temperature=1.0, top_k=100, top_p=0.98, min_p=0.02, repeat_penalty=1.05),
}
