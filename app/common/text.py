"""Foreign text made safe to show: on one line, printable, and short.

File names, GGUF metadata, template errors, import files and server answers can all hold a
megabyte of text, newlines, control characters or lone surrogates (a name that is not valid
UTF-8), and all of them end up in messages, labels and list rows. Every room shows such text
through these two functions (the engine's, the store's and the library's messages; the
widgets' rows), so the rules live in one place.
"""

from __future__ import annotations

_REPLACEMENT = "\ufffd"


def printable(text: str, limit: int | None = 80) -> str:
    """`text` with each character a line or a UTF-8 stream cannot carry (control characters,
    lone surrogates) shown as "�", cut with an ellipsis past `limit` characters (None: never).
    Spacing is kept, so a file name shows as it is."""
    cut = text if limit is None or len(text) <= limit else text[: limit - 1]
    shown = "".join(char if char.isprintable() else _REPLACEMENT for char in cut)
    return shown if cut is text else shown + "…"


def shorten(text: str, limit: int = 80) -> str:
    """`text` on one line of at most `limit` characters: runs of spacing and newlines become one
    space, then as printable() (a title or an error message, not a name to match)."""
    head = text[: limit * 8]  # collapsing a megabyte's whitespace to show 80 characters is waste
    line = printable(" ".join(head.split()), limit=None)
    if len(line) <= limit and len(head) == len(text):
        return line
    return line[: limit - 1].rstrip() + "…"
