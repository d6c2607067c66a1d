"""Turn a GGUF header's located values into typed Python values: the one place that decodes them.

A model file is untrusted input, so every value Hearth or llama.cpp reads goes through one
typed, range-checked accessor (`Metadata`): a count is an integer, never a float, a bool or
a list; text has a size limit; a list has the type and length its reader assumes. A value
that is not what its use needs raises `Invalid`, whose message names the key and shows the
value. What each use needs is its caller's to say (checks.py for llama.cpp's limits).
"""

from __future__ import annotations

import math
import mmap
from array import array
from collections.abc import Mapping

from ...common.text import printable
from .values import (
    ARRAY_CODES,
    BOOL,
    FLOAT_TYPES,
    INTEGER_TYPES,
    STRING,
    U32,
    U32_MAX,
    VOCABULARY,
    Array,
    Scalar,
    String,
    StringArray,
    Value,
    quote,
)

MAX_TEXT_BYTES = 1024  # a name, a size label, an architecture or tokenizer name


class Invalid(Exception):
    """A value that is the wrong type or out of range; the message names the key."""


def shown_key(key: str) -> str:
    """A metadata key as messages name it (keys come from the file too)."""
    return printable(key, limit=60)


class Metadata:
    """The header's key-value pairs, read only as the type and range each use needs.

    The one place where a value from the file becomes a Python value: every method checks the
    GGUF type (a count is an integer, never a float, a bool or a list), the range, and for
    text its size, and raises Invalid naming the key and the value otherwise.
    """

    def __init__(self, entries: Mapping[str, Value], buf: bytes | mmap.mmap, vocabulary: StringArray | None):
        self._entries = entries
        self._buf = buf
        self.vocabulary = vocabulary

    def keys(self):
        return self._entries.keys()

    def integer(self, key: str, low: int = 0, high: int = U32_MAX, what: str | None = None,
                types: frozenset[int] = INTEGER_TYPES) -> int | None:
        """A whole number from `low` to `high`, stored as one of `types` (a bool is not one)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not (isinstance(entry, Scalar) and entry.vtype in types and low <= entry.value <= high):
            raise self.invalid(key, f"expected {what or f'a whole number from {low:,} to {high:,}'}")
        return entry.value

    def number(self, key: str, minimum: float = 0.0, *, above: bool = False) -> float | None:
        """A finite float at least (or, with `above`, more than) `minimum`."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expected = f"expected a finite number {'above' if above else 'of at least'} {minimum:g}"
        if not (isinstance(entry, Scalar) and entry.vtype in FLOAT_TYPES):
            raise self.invalid(key, expected)
        value = entry.value
        if not math.isfinite(value) or value < minimum or (above and value == minimum):
            raise self.invalid(key, expected)
        return value

    def flag(self, key: str) -> bool | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not (isinstance(entry, Scalar) and entry.vtype == BOOL):
            raise self.invalid(key, "expected true or false")
        return entry.value

    def text(self, key: str, limit: int = MAX_TEXT_BYTES) -> str | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not isinstance(entry, String):
            raise self.invalid(key, "expected text")
        if entry.length > limit:
            raise Invalid(f"its {shown_key(key)} is {entry.length:,} bytes of text (expected at most {limit:,})")
        return bytes(self._buf[entry.start:entry.start + entry.length]).decode("utf-8", errors="replace")

    def vocabulary_size(self) -> int | None:
        """How many tokens the vocabulary lists; it must be a list of texts."""
        entry = self._entries.get(VOCABULARY)
        if entry is None:
            return None
        if not (isinstance(entry, Array) and entry.elem_type == STRING):
            raise self.invalid(VOCABULARY, "expected a list of texts")
        return entry.count

    def strings(self, key: str) -> None:
        """Check that `key`, if present, is a list of texts (llama.cpp reads it as one)."""
        entry = self._entries.get(key)
        if entry is not None and not (isinstance(entry, Array) and entry.elem_type == STRING):
            raise self.invalid(key, "expected a list of texts")

    def numbers(self, key: str, elem_type: int, count: int | None, what: str) -> array | None:
        """A list of exactly `elem_type` items, as many as `count` (None: any number).

        llama.cpp reads these lists as raw C arrays of that type and length, so a list of
        another type or length is refused rather than converted.
        """
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not (isinstance(entry, Array) and entry.elem_type == elem_type):
            raise self.invalid(key, f"expected a list of {what}")
        if count is not None and entry.count != count:
            raise Invalid(f"its {shown_key(key)} lists {entry.count:,} values for {count:,} tokens")
        values = array(ARRAY_CODES[elem_type])
        values.frombytes(self._buf[entry.start:entry.start + entry.count * values.itemsize])
        return values

    def per_layer(self, key: str, n_layer: int, high: int) -> tuple[int, ...] | None:
        """A value llama.cpp takes either once for every layer or as a list of one per layer."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if isinstance(entry, Scalar):
            return (self.integer(key, 0, high),) * n_layer
        if not (isinstance(entry, Array) and entry.elem_type in INTEGER_TYPES):
            raise self.invalid(key, "expected a whole number, or a list of one per layer")
        if entry.count != n_layer:
            raise Invalid(f"its {shown_key(key)} lists {entry.count:,} values for {n_layer:,} layers")
        values = self.numbers(key, entry.elem_type, n_layer, "whole numbers")
        if not all(0 <= value <= high for value in values):
            raise Invalid(f"its {shown_key(key)} holds a value outside 0 to {high:,}")
        return tuple(values)

    def invalid(self, key: str, expected: str) -> Invalid:
        return Invalid(f"its {shown_key(key)} is {self.describe(key)} ({expected})")

    def describe(self, key: str) -> str:
        """The value of `key` as a message shows it: short, whatever the file holds."""
        entry = self._entries.get(key)
        if entry is None:
            return "missing"
        if isinstance(entry, String):
            head = bytes(self._buf[entry.start:entry.start + min(entry.length, 240)]).decode("utf-8", errors="replace")
            return quote(head if entry.length <= 240 else head + "…")
        if isinstance(entry, Array):
            return f"a list of {entry.count:,} item{'' if entry.count == 1 else 's'}"
        if entry.vtype == BOOL:
            return "true" if entry.value else "false"
        if entry.vtype in FLOAT_TYPES:
            if math.isnan(entry.value):
                return "NaN"
            shown = f"{entry.value:.7g}"  # a float that looks whole still reads as a float: "2.0"
            return shown + ".0" if shown.lstrip("-").isdigit() else shown
        return f"{entry.value:,}"


def data_alignment(meta: Metadata) -> int:
    """The data section's alignment: llama.cpp reads it as a uint32 power of two."""
    key = "general.alignment"
    value = meta.integer(key, 1, U32_MAX, what="a power of two stored as a uint32", types=frozenset({U32}))
    if value is None:
        return 32
    if value & (value - 1):
        raise meta.invalid(key, "expected a power of two")
    return value
