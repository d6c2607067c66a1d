"""Markdown: paragraphs as passages, each under the heading nearest above it (ATX `# Title` and
setext underlines alike). Lines inside a fenced code block are never read as headings, and a
block stays one passage with its blank lines, so code is not cut where it merely breathes."""

from __future__ import annotations

import re

from app.documents.readers.encoding import decode_text
from app.documents.readers.text import normalise_newlines
from app.documents.types import Passage

_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def read_markdown(data: bytes) -> list[Passage]:
    """The passages of a Markdown file; none for an empty or blank one."""
    return _MarkdownPassages().read(normalise_newlines(decode_text(data)))


class _MarkdownPassages:
    """One walk over the lines: the heading in force, the paragraph being gathered, the fence
    (its marker) while inside a code block."""

    def __init__(self) -> None:
        self.passages: list[Passage] = []
        self.heading = ""
        self.lines: list[str] = []
        self.fence = ""

    def read(self, text: str) -> list[Passage]:
        for line in text.split("\n"):
            self._line(line)
        self._end_paragraph()
        return self.passages

    def _line(self, line: str) -> None:
        if self.fence:
            self.lines.append(line)
            if line.strip().startswith(self.fence):
                self.fence = ""
                self._end_paragraph()
            return
        if fence := _FENCE.match(line):
            self._end_paragraph()
            self.fence = fence.group(1)[0] * 3
            self.lines.append(line)
        elif atx := _ATX.match(line):
            self._end_paragraph()
            self.heading = _atx_title(line[atx.end() :])
        elif len(self.lines) == 1 and _SETEXT.fullmatch(line) and self.lines[0].strip():
            # `Title` over `=====` or `-----`; a lone `---` after a blank is a rule, not this.
            self.heading = self.lines.pop().strip()
        elif not line.strip():
            self._end_paragraph()
        else:
            self.lines.append(line)

    def _end_paragraph(self) -> None:
        text = "\n".join(self.lines).strip("\n")
        self.lines = []
        if text.strip():
            self.passages.append(Passage(text, heading=self.heading))


def _atx_title(rest: str) -> str:
    """The title after `#`s, without a closing run of `#` (`## Title ##`). String operations
    rather than one regex, whose backtracking over a long line of spaces would be quadratic."""
    title = rest.strip()
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):
        title = bare.strip()
    return title
