"""Markdown for the chat pane: untrusted model output to Qt-safe HTML, one block at a time.

Two pieces:
- `MarkdownRenderer` turns Markdown into the HTML subset QTextDocument understands. The text
  comes from a model (or a pasted prompt), so it is treated as hostile: raw HTML is escaped,
  not passed through; only http(s) links survive; images become links, so nothing is loaded.
- `BlockSplitter` finds where blocks complete in a reply that is still growing, so that the
  view renders each finished block once instead of re-rendering the whole reply per token.

Reasoning models (Qwen3, DeepSeek-R1 distills, Phi-4-reasoning) open their reply with their
thinking between `<think>` and `</think>`. That is one block, shown muted and indented under
a "Thinking" caption, apart from the answer; the tags themselves are not shown.
"""

from __future__ import annotations

import functools
import html
import re
import xml.etree.ElementTree as etree
from collections.abc import Callable
from dataclasses import dataclass

import markdown
from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.lexers.special import TextLexer
from pygments.styles import get_style_by_name
from pygments.token import Token
from pygments.util import ClassNotFound

# Syntax colours per appearance: each style's token colours are designed for its own background,
# which the code block uses, so code stays readable whatever the window's palette is.
LIGHT_CODE_STYLE = "default"
DARK_CODE_STYLE = "github-dark"

_SAFE_SCHEMES = ("http://", "https://")
# Both fenced and indented code come out of python-markdown in this shape. Model text cannot
# forge it: every "<" the model writes reaches this point escaped as "&lt;".
_CODE_BLOCK = re.compile(r"<pre><code(?: class=\"language-([^\"]*)\")?>(.*?)</code></pre>", re.S)
_TAB = " " * 4
# A reply's leading reasoning section; unclosed when the reply stopped while thinking.
_THINKING = re.compile(r"\A\s*<think>(.*?)(?:</think>|\Z)", re.S)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
THINKING_CAPTION = "Thinking"
# How far a code line's continuation lines hang under its start when it wraps.
CODE_HANG_PX = 24
_QUOTE_CLOSE = "</td></tr></table>"

# Qt lays out a run of text that offers no line break in time quadratic in its length: a
# 40,000-character word took half a second, a million-character one minutes, freezing the
# window. The shown text (never the stored one) gets a zero-width space, an invisible break
# opportunity, every LONG_RUN characters of such a run; copying a selection takes them out.
LONG_RUN = 80
ZERO_WIDTH_SPACE = "\u200b"
_LONG_RUN_PATTERN = re.compile(r"\S{%d,}" % (LONG_RUN + 1))
_HTML_TAG = re.compile(r"(<[^>]*>)")
# An HTML entity counts as one character and is never cut.
_HTML_LONG_RUN = re.compile(r"(?:&#?\w+;|[^\s&]){%d,}" % (LONG_RUN + 1))
_HTML_CHARACTER = re.compile(r"&#?\w+;|.", re.S)
_LEADING_RUN = re.compile(r"\S*")
_TRAILING_RUN = re.compile(r"\S*\Z")


@dataclass(frozen=True)
class RenderTheme:
    """The colours (as "#rrggbb") and monospace family that rendered HTML embeds.

    QTextDocument resolves CSS when HTML is imported, so these are baked into the document;
    the view renders again when the palette changes.
    """

    dark: bool
    text: str
    muted: str
    link: str
    inline_code_background: str
    rule: str
    mono_family: str


class MarkdownRenderer:
    """Markdown → HTML for QTextDocument, with highlighted code blocks that carry a Copy link.

    `code_href(code)` is asked for the href of each code block's Copy link; the view stores
    the code under that href, because the document keeps only the highlighted HTML.
    """

    def __init__(self, theme: RenderTheme, code_href: Callable[[str], str]) -> None:
        self.theme = theme
        self._code_href = code_href
        self._markdown = markdown.Markdown(
            extensions=["fenced_code", "tables", "sane_lists", "nl2br", _ChatMarkdown(theme)],
        )
        style = get_style_by_name(DARK_CODE_STYLE if theme.dark else LIGHT_CODE_STYLE)
        self._formatter = HtmlFormatter(style=style, noclasses=True, nowrap=True)
        self._code_background = style.background_color
        default_colour = style.style_for_token(Token)["color"]
        self._code_colour = f"#{default_colour}" if default_colour else theme.text

    def style_sheet(self) -> str:
        """CSS for QTextDocument.setDefaultStyleSheet: it applies while HTML is imported."""
        t = self.theme
        return (
            f"a {{ color: {t.link}; text-decoration: none; }}"
            f"code {{ font-family: '{t.mono_family}', monospace;"
            f" background-color: {t.inline_code_background}; }}"
            "p, li, ul, ol { margin-top: 4px; margin-bottom: 4px; }"
            # Headings stand apart from the text above them more than from the text they head.
            "h1 { font-size: x-large; margin-top: 18px; margin-bottom: 8px; }"
            "h2 { font-size: large; margin-top: 16px; margin-bottom: 6px; }"
            "h3, h4, h5, h6 { font-size: medium; margin-top: 12px; margin-bottom: 4px; }"
            f"th {{ background-color: {t.inline_code_background}; }}"
        )

    def render(self, text: str) -> str:
        """HTML for text, with break opportunities in long runs (see LONG_RUN)."""
        return breakable_html(self._render(text))

    def _render(self, text: str) -> str:
        thinking = _THINKING.match(text)
        if thinking is None:
            return self._html(text)
        reasoning = thinking.group(1)
        caption = (f'<p style="margin-top:4px; margin-bottom:2px; font-size:small; color:{self.theme.muted}">'
                   f"{THINKING_CAPTION}</p>")
        # Set apart like a quote, upright: pages of reasoning in italics tire the eye.
        quote = self._quote_open(italic=False) + self._html(reasoning) + _QUOTE_CLOSE
        shown = caption + quote if reasoning.strip() else ""
        return shown + self._html(text[thinking.end():])

    def _html(self, text: str) -> str:
        self._markdown.reset()
        converted = _CODE_BLOCK.sub(self._code_block, self._markdown.convert(text))
        # Model text cannot forge these tags: every "<" it writes reaches this point escaped.
        return converted.replace("<blockquote>", self._quote_open(italic=True)).replace("</blockquote>", _QUOTE_CLOSE)

    def _quote_open(self, italic: bool) -> str:
        """A quote as a one-cell table with a rule down its left side, in muted (and italic)
        text. Qt draws no border for a <blockquote> (only a 40 px indent, with its margins
        ignored), but it does draw a table cell's left border when borders collapse."""
        t = self.theme
        slant = " font-style:italic;" if italic else ""
        return (
            '<table width="100%" cellspacing="0" cellpadding="0"'
            ' style="margin-top:6px; margin-bottom:8px; border-collapse:collapse"><tr>'
            f'<td style="border-left:3px solid {t.rule}; padding-left:12px; color:{t.muted};{slant}">'
        )

    def _code_block(self, match: re.Match[str]) -> str:
        language, escaped = match.group(1) or "", match.group(2)
        code = html.unescape(escaped).removesuffix("\n")
        lexer = _lexer(language)
        coloured = highlight(code.replace("\t", _TAB), lexer, self._formatter).removesuffix("\n")
        # The caption paragraph comes first on purpose: a table that starts an HTML fragment
        # makes Qt leave an empty line before it.
        caption = html.escape(language or "code")
        # A long line wraps inside its block, its continuation lines hanging under it, instead
        # of widening the document: QTextDocument cannot scroll one block sideways, and a
        # table as wide as the longest line made the whole pane scroll sideways for every
        # message. The line itself is intact: Copy (and a copied selection) gives it whole.
        return (
            f'<p style="margin-top:8px; margin-bottom:2px; font-size:small; color:{self.theme.muted}">'
            f'{caption}&nbsp;&nbsp;&nbsp;<a href="{html.escape(self._code_href(code))}">Copy</a></p>'
            f'<table width="100%" cellspacing="0" cellpadding="8" bgcolor="{self._code_background}"'
            ' style="margin-bottom:8px"><tr><td>'
            f'<pre style="margin-top:0px; margin-bottom:0px; margin-right:0px; margin-left:{CODE_HANG_PX}px;'
            f' text-indent:-{CODE_HANG_PX}px; white-space:pre-wrap;'
            f' font-family:\'{self.theme.mono_family}\', monospace; color:{self._code_colour}">'
            f"{coloured}</pre></td></tr></table>"
        )


def break_long_runs(text: str, run_before: int = 0) -> tuple[str, int]:
    """text with a zero-width space every LONG_RUN characters of a run without whitespace, and
    the length of the unbroken run it ends with. run_before: the unbroken run the text
    continues (a streaming reply written a chunk at a time), so that runs across chunks break too."""
    lead = _LEADING_RUN.match(text).end()
    room = max(LONG_RUN - run_before, 0)
    head = text[:lead]
    if lead > room:
        head = text[:room] + ZERO_WIDTH_SPACE + _chunked(text[room:lead])
    rest = text[lead:]
    if len(rest) > LONG_RUN:
        rest = _LONG_RUN_PATTERN.sub(lambda match: _chunked(match.group()), rest)
    if rest:  # whitespace ended the run the text continued
        trailing = _TRAILING_RUN.search(rest).group()
        run_after = len(trailing) - (trailing.rfind(ZERO_WIDTH_SPACE) + 1)
    elif ZERO_WIDTH_SPACE in head:
        run_after = len(head) - (head.rfind(ZERO_WIDTH_SPACE) + 1)
    else:
        run_after = run_before + len(head)
    return head + rest, run_after


def breakable_html(html_text: str) -> str:
    """The same for HTML: only the text between tags changes, never a tag, an attribute or an
    entity (which counts as one character). A run goes on across inline tags (highlighted
    code is a span per token, so `a.b.c…` is one run of many short pieces) and ends at the
    others. Code blocks are broken too, now that their lines wrap."""
    if len(html_text) <= LONG_RUN:
        return html_text
    pieces = _HTML_TAG.split(html_text)
    run = 0
    for index, piece in enumerate(pieces):
        if index % 2:  # a tag
            name = piece[1:].lstrip("/").split(None, 1)[0].rstrip(">/").lower() if len(piece) > 2 else ""
            if name not in _INLINE_TAGS:
                run = 0
        elif piece:
            pieces[index], run = _break_html_piece(piece, run)
    return "".join(pieces)


# Tags that do not end a line, so a run of text goes on across them.
_INLINE_TAGS = frozenset({"a", "span", "code", "strong", "em", "b", "i", "u", "s", "del", "sub", "sup", "font"})
_HTML_LEADING_RUN = re.compile(r"(?:&#?\w+;|[^\s&])*")


def _break_html_piece(piece: str, run_before: int) -> tuple[str, int]:
    """break_long_runs for the text between two tags: the piece with its runs broken, and the
    unbroken run it ends with."""
    lead = _HTML_LEADING_RUN.match(piece).end()
    head, rest = piece[:lead], piece[lead:]
    if run_before + _html_length(head) > LONG_RUN:
        characters = _HTML_CHARACTER.findall(head)
        room = max(LONG_RUN - run_before, 0)
        head = "".join(characters[:room]) + ZERO_WIDTH_SPACE + _chunked_html("".join(characters[room:]))
    elif not rest:
        return head, run_before + _html_length(head)
    if len(rest) > LONG_RUN:
        rest = _HTML_LONG_RUN.sub(lambda match: _chunked_html(match.group()), rest)
    broken = head + rest
    # The run it ends with: after its last whitespace (str.split, linear, where a regex
    # anchored at the end backtracks over every long run) and its last break opportunity.
    trailing = "" if broken[-1].isspace() else broken.split()[-1]
    return broken, _html_length(trailing[trailing.rfind(ZERO_WIDTH_SPACE) + 1:])


def _html_length(text: str) -> int:
    """Characters shown for escaped HTML text, an entity counting as one."""
    return len(_HTML_CHARACTER.findall(text)) if "&" in text else len(text)


def _chunked(run: str) -> str:
    return ZERO_WIDTH_SPACE.join(run[i:i + LONG_RUN] for i in range(0, len(run), LONG_RUN))


def _chunked_html(run: str) -> str:
    characters = _HTML_CHARACTER.findall(run)
    return ZERO_WIDTH_SPACE.join("".join(characters[i:i + LONG_RUN]) for i in range(0, len(characters), LONG_RUN))


@functools.lru_cache(maxsize=64)
def _lexer(language: str):
    """One lexer per language, reused: looking a lexer up by name scans every plugin and
    costs milliseconds, which a streaming reply pays for each code block it completes."""
    try:
        return get_lexer_by_name(language, stripnl=False) if language else TextLexer()
    except ClassNotFound:
        return TextLexer()


class _ChatMarkdown(Extension):
    """Escape raw HTML instead of passing it through, neuter links and images, style tables,
    and nest lists the way models indent them."""

    def __init__(self, theme: RenderTheme) -> None:
        super().__init__()
        self._theme = theme

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        # After "fenced_code_block" (25), so that code is already set aside.
        md.preprocessors.register(_NestedListIndent(md), "hearth_nested_lists", 22)
        # After "inline" (20), which is what creates links and images.
        md.treeprocessors.register(_SafeLinks(md), "hearth_safe_links", 15)
        md.treeprocessors.register(_TableStyle(md, self._theme.rule), "hearth_table_style", 14)


_LIST_ITEM = re.compile(r" *([-*+]|\d{1,9}[.)]) ")


class _NestedListIndent(Preprocessor):
    """python-markdown nests a list only under 4 spaces; models indent nested items by 2 or 3
    (which it shows as "- item" text). Inside a list, re-indent each item to 4 spaces per
    level of nesting, and continuation lines indented less than 4 to their item's level.
    Lines indented the standard way come out unchanged."""

    def run(self, lines: list[str]) -> list[str]:
        out = []
        open_items: list[int] = []  # marker indentation of the enclosing items, outermost first
        after_blank = False
        for line in lines:
            text = line.lstrip(" ")
            indent = len(line) - len(text)
            if not text:
                after_blank = True
                out.append(line)
                continue
            if _LIST_ITEM.match(line) and (open_items or indent < 4):
                while open_items and open_items[-1] >= indent:
                    open_items.pop()
                line = " " * (4 * len(open_items)) + text
                open_items.append(indent)
            elif indent == 0:
                if after_blank:
                    open_items = []
            elif open_items and indent < 4:
                line = " " * (4 * sum(1 for item in open_items if item < indent)) + text
            after_blank = False
            out.append(line)
        return out


class _SafeLinks(Treeprocessor):
    """Keep only http(s) links; turn images into links (or text) so nothing is fetched or shown.

    A javascript:, data:, file: or relative link becomes plain text, so it is not clickable at
    all; the view also ignores such clicks, in case one ever got through.
    """

    def run(self, root: etree.Element) -> None:
        for element in root.iter():
            if element.tag == "img":
                src = element.get("src", "")
                label = element.get("alt") or src
                element.attrib.clear()
                element.text = f"[image: {label}]"
                element.tag = "a" if _is_safe(src) else "span"
                if _is_safe(src):
                    element.set("href", src)
            elif element.tag == "a":
                href = element.get("href", "")
                element.attrib.clear()
                if _is_safe(href):
                    element.set("href", href)
                else:
                    element.tag = "span"


class _TableStyle(Treeprocessor):
    """Give tables thin cell borders in the theme's rule colour (Qt draws none for a bare
    <table>, and 3D ones for border="1" alone), padded cells and room above and below."""

    def __init__(self, md: markdown.Markdown, rule: str) -> None:
        super().__init__(md)
        self._style = (f"border-collapse: collapse; border-style: solid; border-color: {rule};"
                       " margin-top: 6px; margin-bottom: 8px;")

    def run(self, root: etree.Element) -> None:
        for table in root.iter("table"):
            table.set("border", "1")
            table.set("cellspacing", "0")
            table.set("cellpadding", "6")
            table.set("style", self._style)


def _is_safe(url: str) -> bool:
    return url.strip().lower().startswith(_SAFE_SCHEMES)


# python-markdown's opening fence: at the margin, then an optional language or {attributes}.
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,}) *(\{.*\}|\.?[\w#.+-]* *)$")
_ATX_HEADING = re.compile(r"#{1,6}(\s|$)")


class BlockSplitter:
    """Cuts a growing Markdown text after each block that can no longer change.

    A block completes:
    - at a blank line followed by a line that starts at the margin (an indented line after a
      blank line may still continue a list item, so the cut waits for an unindented one);
    - after an ATX heading line;
    - after a closing code fence. Nothing inside a fence completes;
    - after the line that closes the reasoning a reply opens with (`<think>` … `</think>`),
      which is one block however many paragraphs it holds.
    Fences follow python-markdown's rules (at the margin, closed by the same fence string), so
    the splitter never cuts where the renderer would see one block. Each line is scanned once,
    so feeding stays cheap however long the reply grows.
    """

    def __init__(self) -> None:
        self._pending = ""  # the text after the last cut
        self._scanned = 0  # offset in _pending of the first line not yet scanned
        self._fence: str | None = None
        self._after_blank = False
        self._started = False  # a line with text was seen: a reasoning section can only open the reply
        self._thinking = False

    @property
    def tail(self) -> str:
        """The text not yet part of a completed block."""
        return self._pending

    @property
    def in_fence(self) -> bool:
        return self._fence is not None

    @property
    def in_thinking(self) -> bool:
        return self._thinking

    def feed(self, text: str) -> str:
        """Add text; return the blocks it completed (possibly "")."""
        pending = self._pending + text
        cut = 0
        pos = self._scanned
        while True:
            if self._after_blank and pos < len(pending) and pending[pos] not in " \t\n":
                cut = pos
                self._after_blank = False
            newline = pending.find("\n", pos)
            if newline < 0:
                break
            line = pending[pos:newline]
            pos = newline + 1
            if not self._started and line.strip():
                self._started = True
                self._thinking = line.lstrip().startswith(THINK_OPEN)
            if self._thinking:
                if THINK_CLOSE in line:
                    self._thinking = False
                    cut = pos
            elif self._fence is not None:
                if line.rstrip(" ") == self._fence:
                    self._fence = None
                    cut = pos
            elif opening := _FENCE_OPEN.match(line):
                self._fence = opening.group(1)
                self._after_blank = False
            elif not line.strip():
                self._after_blank = True
            else:
                self._after_blank = False
                if _ATX_HEADING.match(line):
                    cut = pos
        self._pending = pending[cut:]
        self._scanned = pos - cut
        return pending[:cut]
