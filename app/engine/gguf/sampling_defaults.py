"""The model author's sampling defaults, from a GGUF's `general.sampling.*` keys.

llama.cpp's converter (gguf-py's metadata.py) copies them from the model's
generation_config.json: `temp`, `top_k`, `top_p`, `min_p`, `penalty_repeat` and
`penalty_last_n`, which Hearth's SamplingParams can represent, and `sequence`, `xtc_*` and
`mirostat*`, which it cannot (they are listed, not used). The converter writes the counts as
int32 and the rest as float32; llama.cpp's own tools read any number. The file is untrusted:
a value of the wrong type or outside `sampling.BOUNDS` is dropped with a log line, never a
reason to refuse the model.
"""

from __future__ import annotations

import logging
import struct

from ..sampling import BOUNDS, ModelDefaults, SamplingError
from .metadata import Invalid, Metadata, shown_key
from .values import U64_MAX

log = logging.getLogger(__name__)

PREFIX = "general.sampling."
# GGUF key (after the prefix) -> SamplingParams field.
FIELDS = {
    "temp": "temperature",
    "top_k": "top_k",
    "top_p": "top_p",
    "min_p": "min_p",
    "penalty_repeat": "repeat_penalty",
    "penalty_last_n": "repeat_last_n",
}
UNSUPPORTED = "Hearth has no such setting"
MAX_IGNORED = 32  # keys listed as ignored; a hostile header may hold thousands


def read_sampling_defaults(meta: Metadata, file_name: str) -> tuple[ModelDefaults, dict[str, str]]:
    """The defaults Hearth uses, and the `general.sampling.*` keys it does not use, each with
    why (for `hearth inspect`). `file_name` names the file in the log."""
    values: dict[str, float | int] = {}
    ignored: dict[str, str] = {}
    for key in meta.keys():
        if not key.startswith(PREFIX):
            continue
        field = FIELDS.get(key.removeprefix(PREFIX))
        reason = UNSUPPORTED if field is None else _value(meta, key, field, values)
        if reason is not None and len(ignored) < MAX_IGNORED:
            ignored[shown_key(key)] = reason
        if reason is not None and field is not None:
            log.warning("%s: ignoring %s (%s)", file_name, shown_key(key), reason)
    return ModelDefaults(**values), ignored


def _value(meta: Metadata, key: str, field: str, values: dict[str, float | int]) -> str | None:
    """Read `key` into values[field]; None when it was used, else why not."""
    bounds = BOUNDS[field]
    try:
        value: float | int = meta.integer(key, -(1 << 63), U64_MAX)
    except Invalid:
        if bounds.whole:
            return "not a whole number"
        try:
            value = _shortest(meta.number(key, float("-inf")))
        except Invalid:
            return "not a finite number"
    if not bounds.whole:
        value = float(value)
    try:
        bounds.check(field, value)
    except SamplingError as exc:
        return str(exc)
    values[field] = value
    return None


def _shortest(value: float) -> float:
    """The shortest decimal that a float32 value is stored as: the 0.95 the converter wrote,
    not 0.949999988079071 (the float32 nearest it), so it matches and shows as written."""
    try:
        stored = struct.pack("<f", value)
    except OverflowError:  # a float64 beyond float32's range: out of bounds anyway
        return value
    for digits in range(1, 10):
        candidate = float(f"{value:.{digits}g}")
        if struct.pack("<f", candidate) == stored:
            return candidate
    return value
