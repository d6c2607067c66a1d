"""HTML: the text a reader of the page sees, by the standard library's parser (no lxml tree of
a hostile page in memory). Scripts, styles and other unseen parts are dropped; block elements
end a paragraph; h1–h6 become the heading of the passages below them, and the page's <title>
heads what comes before its first heading."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from app.documents.readers.encoding import decode_text
from app.documents.types import Passage

_UNSEEN = frozenset({"script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details", "div",
        "dl", "dt", "figcaption", "figure", "footer", "form", "header", "hr", "html", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip
_SPACES = re.compile(r"\s+")


def read_html(data: bytes) -> list[Passage]:
    """The passages of an HTML file; none for a page with no visible text."""
    parser = _TextParser()
    parser.feed(decode_text(data))
    parser.close()
    return parser.finish()


class _TextParser(HTMLParser):
    """Gathers visible text into paragraphs. `unseen` counts the open unseen elements (their
    text is dropped), `pre` the open <pre>s (whose whitespace is kept)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.passages: list[Passage] = []
        self.parts: list[str] = []
        self.heading = ""
        self.title: list[str] | None = None
        self.heading_parts: list[str] | None = None
        self.unseen = 0
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":  # </head> may be left out: the body begins what is seen
            self.unseen = 0
        if tag == "title" and self.heading_parts is None:
            self.title = []
        elif tag in _UNSEEN:
            self.unseen += 1
        elif tag in _HEADINGS:
            self._end_paragraph()
            self.heading_parts = []
        elif tag in _BLOCKS:
            self._end_paragraph()
            self.pre += tag == "pre"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._end_paragraph()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title is not None:
            if not self.heading:
                self.heading = _SPACES.sub(" ", "".join(self.title)).strip()
            self.title = None
        elif tag in _UNSEEN:
            self.unseen = max(0, self.unseen - 1)
        elif tag in _HEADINGS and self.heading_parts is not None:
            self.heading = _SPACES.sub(" ", "".join(self.heading_parts)).strip()
            self.heading_parts = None
        elif tag in _BLOCKS:
            self._end_paragraph()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if self.title is not None:
            self.title.append(data)
        elif self.unseen:
            return
        elif self.heading_parts is not None:
            self.heading_parts.append(data)
        else:
            self.parts.append(data)

    def finish(self) -> list[Passage]:
        if self.heading_parts:  # a heading never closed: its text is still text
            self.parts[:0] = self.heading_parts
            self.heading_parts = None
        self._end_paragraph()
        return self.passages

    def _end_paragraph(self) -> None:
        text = "".join(self.parts)
        self.parts = []
        text = text.strip("\n") if self.pre else _SPACES.sub(" ", text).strip()
        if text.strip():
            self.passages.append(Passage(text, heading=self.heading))
