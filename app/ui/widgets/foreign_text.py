"""Foreign text of many lines (a tool's result, a model's arguments) made inert to show.

common/text.py's printable() keeps a name or a message on one line. A tool's result and a call's
arguments are read line by line, so their line breaks must stay, while everything else a line
cannot carry goes as printable() takes it away: control characters, lone surrogates, and the
bidi overrides (U+202E and the like) that would make "exe.txt" of "txt.exe" on screen. Only a
plain text box, a label in Qt.PlainText or text inserted through a QTextCursor ever shows the
result: HTML in it stays text.

Qt lays out a run without a break opportunity in time quadratic in its length (a 200,000
character word took two seconds in a QPlainTextEdit), so a box showing such text wraps it
anywhere instead (wrap_mode_for).
"""

from __future__ import annotations

import json
import re

from PySide6.QtGui import QTextOption

from ...common.text import printable

_TAB = " " * 4
_LONG_RUN = re.compile(r"\S{200}")


def inert_lines(text: str, limit: int | None = None) -> str:
    """`text` with its line breaks kept and every other character printable() refuses shown as
    "�" (tabs become spaces), cut past `limit` characters with a line saying how much more there
    was (None: never cut)."""
    more = 0
    if limit is not None and len(text) > limit:
        text, more = text[:limit], len(text) - limit
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    shown = "\n".join(printable(line.replace("\t", _TAB), limit=None) for line in lines)
    return f"{shown}\n… {more:,} more characters not shown" if more else shown


def head_lines(text: str, lines: int, chars: int) -> tuple[str, bool]:
    """The first `lines` lines of `text`, at most `chars` characters of them, made inert, and
    whether anything was left out."""
    head = text[: chars + 1]
    kept = head.split("\n")[:lines]
    shown = "\n".join(kept)
    cut = len(shown) > chars or len(shown) < len(text.rstrip("\n"))
    return inert_lines(shown[:chars]), cut


def formatted_json(text: str) -> str:
    """JSON text indented for reading (two spaces, non-ASCII kept), or the text as written
    when it is not JSON (a model's broken arguments are shown as it wrote them)."""
    try:
        return json.dumps(json.loads(text or "{}"), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def wrap_mode_for(text: str) -> QTextOption.WrapMode:
    """How a plain text box showing `text` wraps: at word boundaries, or anywhere when the text
    holds a run long enough to make the word-boundary layout slow."""
    if _LONG_RUN.search(text):
        return QTextOption.WrapMode.WrapAnywhere
    return QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere
