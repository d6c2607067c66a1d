"""Sampling parameters: validated once, at the edge, with messages a user can act on."""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field, replace
from enum import Enum


class SamplingError(ValueError):
    """A sampling parameter out of range; the message names the parameter and its range."""


class Drafting(str, Enum):
    """How a local model decodes: one token at a time, or checking guesses copied from the
    conversation several at a time (engine/lookup.py). The sampler still picks every token;
    a server's model ignores it."""

    LOOKUP = "lookup"  # copy what followed the reply's last tokens earlier in the conversation
    NONE = "none"  # one token per decode

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class SamplingParams:
    """How to pick each next token. Temperature 0 means greedy (always the likeliest token)."""

    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    # No repeat penalty by default (#31): llama.cpp's own default turned it off (1.0), current
    # model cards recommend none or a presence penalty (Gemma 3, Llama 3, Qwen 3), and it steers a
    # reply away from the very copies prompt lookup drafts (a code snippet repeated, a quote):
    # under 1.1 over 64 tokens lookup gained nothing (bench/reference_speed.py). Where a model
    # loops, Parameters and --repeat-penalty still set one.
    repeat_penalty: float = 1.0
    repeat_last_n: int = 64
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None  # None: a fresh random seed for every reply
    stop: tuple[str, ...] = ()
    # token id -> added logit; also how tests force a model to emit a given token.
    logit_bias: dict[int, float] = field(default_factory=dict)
    draft: Drafting = Drafting.LOOKUP

    def __post_init__(self):
        object.__setattr__(self, "stop", tuple(self.stop))
        try:
            object.__setattr__(self, "draft", Drafting(self.draft))
        except ValueError:
            choices = " or ".join(repr(d.value) for d in Drafting)
            raise SamplingError(f"draft must be {choices}, not {self.draft!r}") from None
        for name, bounds in BOUNDS.items():
            value = getattr(self, name)
            if value is not None or name != "seed":
                bounds.check(name, value)
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
        data["draft"] = self.draft.value
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "SamplingParams":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "logit_bias" in known:
            known["logit_bias"] = {int(k): float(v) for k, v in known["logit_bias"].items()}
        return cls(**known)


@dataclass(frozen=True)
class Bounds:
    """The values one parameter accepts. The parameters panel builds its controls from these,
    so it can never offer a value the engine would refuse."""

    low: float
    high: float
    step: float  # a sensible increment for a control
    whole: bool = False  # a count, not a fraction
    low_open: bool = False  # `low` itself is not allowed (0 would keep no tokens at all)
    off_at_zero: bool = False  # 0 turns the setting off

    def check(self, name: str, value) -> None:
        if self.whole:
            if isinstance(value, bool) or not isinstance(value, int):
                raise SamplingError(f"{name} must be a whole number, not {value!r}")
            if not self.low <= value <= self.high:
                hint = "; 0 turns it off" if self.off_at_zero else ""
                raise SamplingError(f"{name} must be between {self.low:,} and {self.high:,} (got {value:,}){hint}")
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SamplingError(f"{name} must be a number, not {value!r}")
        if value != value or value > self.high or value < self.low or (self.low_open and value == self.low):
            bound = f"above {self.low:g}" if self.low_open else f"at least {self.low:g}"
            raise SamplingError(f"{name} must be {bound} and at most {self.high:g} (got {value:g})")


BOUNDS: dict[str, Bounds] = {
    "temperature": Bounds(0.0, 5.0, 0.05),
    "top_k": Bounds(0, 100_000, 5, whole=True, off_at_zero=True),
    "top_p": Bounds(0.0, 1.0, 0.01, low_open=True),
    "min_p": Bounds(0.0, 1.0, 0.01, off_at_zero=True),
    "repeat_penalty": Bounds(0.0, 5.0, 0.05, low_open=True),
    "repeat_last_n": Bounds(0, 1_000_000, 16, whole=True, off_at_zero=True),
    "presence_penalty": Bounds(-2.0, 2.0, 0.1),
    "frequency_penalty": Bounds(-2.0, 2.0, 0.1),
    "max_tokens": Bounds(1, 10_000_000, 256, whole=True),
    "seed": Bounds(0, 2**32 - 1, 1, whole=True),
}


PRESETS: dict[str, SamplingParams] = {
    # Deterministic: the likeliest token every time. For facts, code, extraction.
    "Precise": SamplingParams(temperature=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0),
    # Hearth's defaults: temperature 0.7 within top-k 40, top-p 0.95 and min-p 0.05, and no repeat
    # penalty (why: SamplingParams.repeat_penalty), so prompt lookup speeds up what it can.
    "Balanced": SamplingParams(),
    # Looser: more varied wording, for brainstorming and fiction.
    "Creative": SamplingParams(temperature=1.0, top_k=100, top_p=0.98, min_p=0.02, repeat_penalty=1.05),
}


@dataclass(frozen=True)
class ModelDefaults:
    """The sampling values a model's author recommends, where the model says (None: it does not).

    llama.cpp's converter writes them into a GGUF's `general.sampling.*` keys from the model's
    generation_config.json (engine/gguf/sampling_defaults.py reads them). Only the values Hearth's
    `SamplingParams` can represent are here, each within its `BOUNDS`.
    """

    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    repeat_penalty: float | None = None
    repeat_last_n: int | None = None

    def __post_init__(self):
        for name, value in self.values().items():
            BOUNDS[name].check(name, value)

    def values(self) -> dict[str, float | int]:
        """The values the model gives, by SamplingParams field, in the order of the fields."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__ if getattr(self, name) is not None}

    def __bool__(self) -> bool:
        """Whether the model gives any value at all (a model without any has no "Model's defaults")."""
        return bool(self.values())


def model_params(defaults: ModelDefaults) -> SamplingParams:
    """What a model starts with: Hearth's defaults (the Balanced preset) with the model's own
    values over them. A model that gives none starts with Hearth's defaults."""
    return PRESETS["Balanced"].with_changes(**defaults.values())
