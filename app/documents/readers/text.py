"""Plain text and source code: the file's paragraphs (runs between blank lines) as passages.
Source code is read the same way: its blank lines already part functions and blocks."""

from __future__ import annotations

import re

from app.documents.readers.encoding import decode_text
from app.documents.types import Passage

# A blank line (spaces and tabs on it allowed) ends a paragraph.
_BLANK_LINES = re.compile(r"\n[ \t\f\v]*(?:\n[ \t\f\v]*)+")


def read_text(data: bytes) -> list[Passage]:
    """The passages of a plain-text or source file; none for an empty or blank one."""
    return [Passage(paragraph) for paragraph in paragraphs(decode_text(data))]


def paragraphs(text: str) -> list[str]:
    """`text`'s paragraphs, newlines made \\n, each stripped of the blank around it; a line with
    no break of any length is one paragraph, found in one linear scan."""
    text = normalise_newlines(text)
    return [part.strip("\n") for part in _BLANK_LINES.split(text) if part.strip()]


def normalise_newlines(text: str) -> str:
    """Windows' and old Macs' line ends as \\n, so every later rule sees one kind."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
