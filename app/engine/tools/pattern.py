"""A JSON schema's `pattern`, checked and rewritten for llama-cpp-python's grammar converter.

The converter (llama_cpp.llama_grammar.SchemaConverter) copies a pattern into GBNF almost
character for character, and several ordinary regexes come out wrong or not at all: `\\d`,
`\\.` and `\\^` are escapes GBNF does not know (the grammar fails to compile); a quantifier
after an escaped character repeats the whole literal before it; and the characters a pattern
allows are written raw inside a JSON string, so a class or `.` that allows `"`, `\\` or a
control character lets the model write a string that is not JSON. So a pattern is accepted
only in a subset whose meaning is clear (anchored, groups, alternatives, classes, bounded
repetition) and handed to the converter rewritten: every escape and every class becomes a
class of explicit code points, minus the characters a JSON string cannot hold raw. The
grammar may so allow a little less than the regex, never more, and the value it writes is
still checked against the original pattern (schema.problem).
"""

from __future__ import annotations

import re

MAX_PATTERN = 256  # characters in a pattern
MAX_REPEAT = 100  # the bound of one {m,n}
MAX_WEIGHT = 1000  # nested repetition bounds multiplied: the converter writes out each repeat

# Code points a JSON string cannot hold unescaped: control characters, the quote, the backslash.
_UNSAFE = [(0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]
_ESCAPE_CLASSES = {
    "d": [(0x30, 0x39)],
    "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
}
_PUNCTUATION = set(".^$-/[](){}|*+?,:;!@#%&=<>'`~_ ")
_QUANTIFIERS = set("*+?")


class PatternError(ValueError):
    """Why a pattern cannot be held by the grammar, in words."""


def converter_pattern(pattern: object) -> str:
    """The pattern in the form the converter turns into the grammar it means; raises
    PatternError naming what is not supported. The original still validates values."""
    if not isinstance(pattern, str):
        raise PatternError("a pattern is a string")
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"a pattern is at most {MAX_PATTERN} characters")
    if len(pattern) < 2 or pattern[0] != "^" or pattern[-1] != "$" or _escaped_end(pattern):
        raise PatternError('a pattern must start with "^" and end with "$"')
    try:
        re.compile(pattern, re.ASCII)
    except re.error as exc:
        raise PatternError(f"not a regular expression: {exc}") from None
    return "^" + _Rewriter(pattern[1:-1]).run() + "$"


def _escaped_end(pattern: str) -> bool:
    backslashes = len(pattern[:-1]) - len(pattern[:-1].rstrip("\\"))
    return backslashes % 2 == 1


class _Rewriter:
    def __init__(self, body: str):
        self.body = body
        self.i = 0
        self.out: list[str] = []
        self.weights = [1]  # the largest repetition product inside each open group
        self.atom: int | None = None  # the weight of the atom a quantifier would repeat

    def run(self) -> str:
        while self.i < len(self.body):
            self._step()
        if len(self.weights) > 1:
            raise PatternError("unbalanced parentheses")
        return "".join(self.out)

    def _step(self) -> None:
        c = self.body[self.i]
        self.i += 1
        if c == "\\":
            self._emit_atom(_class(self._escape_ranges()))
        elif c == ".":
            self._emit_atom(".")
        elif c == "[":
            self._emit_atom(_class(self._class_ranges()))
        elif c == "(":
            if self.body[self.i:self.i + 1] == "?":
                raise PatternError('"(?" groups (lookarounds, non-capturing groups) are not supported')
            if self.body[self.i:self.i + 1] in (")", "|"):
                raise PatternError("empty groups and alternatives are not supported")
            self.weights.append(1)
            self.out.append("(")
            self.atom = None
        elif c == ")":
            if len(self.weights) == 1:
                raise PatternError("unbalanced parentheses")
            inner = self.weights.pop()
            self.weights[-1] = max(self.weights[-1], inner)
            self.out.append(")")
            self.atom = inner
        elif c == "|":
            if not self.out or self.out[-1] in ("(", "|") or self.body[self.i:self.i + 1] in ("", ")", "|"):
                raise PatternError("empty alternatives are not supported")
            self.out.append("|")
            self.atom = None
        elif c in _QUANTIFIERS:
            self._quantify(c, None)
        elif c == "{":
            self._bounded()
        elif c in "^$":
            raise PatternError(f'"{c}" is supported only at the ends of a pattern')
        elif c in "]}":
            raise PatternError(f'an unescaped "{c}" is not supported')
        else:
            if _unsafe(ord(c)):
                raise PatternError(f"{c!r} cannot appear unescaped in a JSON string")
            self._emit_atom(c)

    def _emit_atom(self, text: str) -> None:
        self.out.append(text)
        self.atom = 1

    def _quantify(self, text: str, bound: int | None) -> None:
        if self.atom is None:
            raise PatternError(f'"{text}" repeats nothing')
        if self.body[self.i:self.i + 1] in ("?", "+"):
            raise PatternError("lazy and possessive quantifiers are not supported")
        if bound is not None:
            self.weights[-1] = max(self.weights[-1], self.atom * max(bound, 1))
            if self.weights[-1] > MAX_WEIGHT:
                raise PatternError(f"nested repetitions allow more than {MAX_WEIGHT} repeats")
        self.out.append(text)
        self.atom = None

    def _bounded(self) -> None:
        end = self.body.find("}", self.i)
        match = re.fullmatch(r"(\d{1,4})(,(\d{0,4}))?", self.body[self.i:end]) if end >= 0 else None
        if match is None:
            raise PatternError('"{" must begin a repetition {m}, {m,} or {m,n}')
        self.i = end + 1
        low = int(match.group(1))
        high = low if match.group(2) is None else (int(match.group(3)) if match.group(3) else None)
        if max(low, high or 0) > MAX_REPEAT or (high is not None and high < low):
            raise PatternError(f"a repetition is bounded by 0 <= m <= n <= {MAX_REPEAT}")
        text = "{%d}" % low if high == low else "{%d,%s}" % (low, "" if high is None else high)
        self._quantify(text, high if high is not None else low)

    def _escape_ranges(self) -> list[tuple[int, int]]:
        if self.i >= len(self.body):
            raise PatternError("a pattern cannot end with a lone backslash")
        c = self.body[self.i]
        self.i += 1
        if c in _ESCAPE_CLASSES:
            return list(_ESCAPE_CLASSES[c])
        if c in _PUNCTUATION:
            return [(ord(c), ord(c))]
        raise PatternError(f'"\\{c}" is not supported (write the characters out, as in [0-9] or [ ])')

    def _class_ranges(self) -> list[tuple[int, int]]:
        if self.body[self.i:self.i + 1] == "^":
            raise PatternError('negated classes "[^...]" are not supported')
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            if self.i >= len(self.body):
                raise PatternError("unbalanced square brackets")
            c = self.body[self.i]
            if c == "]" and not first:
                self.i += 1
                return ranges
            first = False
            if c == "[":
                raise PatternError('"[" inside a class must be escaped')
            low = self._class_item()
            if self.body[self.i:self.i + 1] == "-" and self.body[self.i + 1:self.i + 2] not in ("]", ""):
                self.i += 1
                high = self._class_item()
                if len(low) != 1 or len(high) != 1 or low[0][0] != low[0][1] or high[0][0] != high[0][1]:
                    raise PatternError("a class range runs between two single characters")
                if high[0][0] < low[0][0]:
                    raise PatternError("a class range runs from the lower character to the higher")
                ranges.append((low[0][0], high[0][0]))
            else:
                ranges.extend(low)

    def _class_item(self) -> list[tuple[int, int]]:
        c = self.body[self.i]
        self.i += 1
        if c == "\\":
            return self._escape_ranges()
        return [(ord(c), ord(c))]


def _unsafe(code: int) -> bool:
    return any(low <= code <= high for low, high in _UNSAFE)


def _class(ranges: list[tuple[int, int]]) -> str:
    """A GBNF class of the code points in `ranges` that a JSON string can hold raw."""
    safe: list[tuple[int, int]] = []
    for low, high in ranges:
        for cut_low, cut_high in _UNSAFE:
            if low <= cut_high and cut_low <= high:
                if low < cut_low:
                    safe.append((low, cut_low - 1))
                low = max(low, cut_high + 1)
        if low <= high:
            safe.append((low, high))
    if not safe:
        raise PatternError("a class allows only characters a JSON string cannot hold unescaped")
    return "[" + "".join(_code(a) if a == b else f"{_code(a)}-{_code(b)}" for a, b in safe) + "]"


def _code(code: int) -> str:
    return f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"
