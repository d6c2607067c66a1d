"""The chat pane: a conversation as one rich-text document, with a reply streaming in at the end.

One QTextBrowser holds every message, so text can be selected across messages and the pane
scrolls as a whole. Qt never follows a link here: actions under messages and code blocks use
the private `hearth:` scheme and are handled by the view; web links are handed to the window
(linkActivated), which asks before opening anything.

A long conversation opens on its newest messages, about HISTORY_SHOWN_CHARS of them, with a
link above that renders the page before them on demand: Markdown and syntax highlighting cost
about 8 ms a message, so rendering hundreds of them up front froze the window for seconds.

A streaming reply is the last thing in the document. Its chunks are buffered and written on a
short timer as plain text; each Markdown block is rendered once, when it completes. The cost of
an update therefore depends on the size of the chunk and of the block, not on the reply so far.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from PySide6.QtCore import QEvent, QObject, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
    QTextFrameFormat,
)
from PySide6.QtWidgets import QFrame, QScrollBar, QTextBrowser, QVBoxLayout, QWidget

from .markdown_render import THINK_OPEN, THINKING_CAPTION, BlockSplitter, MarkdownRenderer, RenderTheme

# Long enough to coalesce a fast model's tokens into one document update, short enough that
# text still appears to flow.
FLUSH_INTERVAL_MS = 40

ACTION_SCHEME = "hearth"

# Characters of message text rendered when a conversation opens (about 3,000 tokens, several
# screens); older messages wait behind "Show earlier messages", a page of this size per click.
# A page holds at least two messages, however long.
HISTORY_SHOWN_CHARS = 12_000

STOP_REASONS = {
    "end_of_turn": "end of turn",
    "stop_string": "stop string",
    "length": "length limit",
    "cancelled": "stopped",
    "error": "error",
    "interrupted": "interrupted",
}
# A link definition can serve a reference in any block, so a reply that has one is rendered
# as a whole when it finishes.
_REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)


@dataclass(frozen=True)
class MessageView:
    """What the pane shows of one message; the window builds these from stored messages."""

    id: int | None
    role: str  # 'user' | 'assistant' | 'system'
    content: str
    stats: dict = field(default_factory=dict)
    status: str = "complete"  # 'complete' | 'streaming' | 'cancelled' | 'error'
    model: str | None = None


def stats_text(stats: dict, status: str) -> str:
    """One short line about a reply, e.g. "128 tokens · 34.5 tok/s · end of turn"."""
    parts = []
    if (tokens := stats.get("completion_tokens")) is not None:
        parts.append(f"{tokens} token" + ("" if tokens == 1 else "s"))
    if tokens_per_s := stats.get("tokens_per_s"):
        parts.append(f"{tokens_per_s:.1f} tok/s")
    if ttft_s := stats.get("ttft_s"):
        parts.append(f"first token {ttft_s:.2f} s")
    reason = stats.get("stop_reason")
    if words := STOP_REASONS.get(reason) or STOP_REASONS.get(status) or reason:
        parts.append(words)
    return " · ".join(parts)


def _mix(a: QColor, b: QColor, amount: float) -> QColor:
    """a moved `amount` of the way towards b."""
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * amount,
        a.greenF() + (b.greenF() - a.greenF()) * amount,
        a.blueF() + (b.blueF() - a.blueF()) * amount,
    )


def _contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio, from 1 (none) to 21 (black on white)."""

    def luminance(c: QColor) -> float:
        def linear(v: float) -> float:
            return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF())

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@dataclass(frozen=True)
class _Theme:
    """Colours derived from the widget palette, so the pane follows the system appearance."""

    muted: QColor
    link: QColor
    bubble: QColor
    render: RenderTheme

    @classmethod
    def from_palette(cls, palette: QPalette) -> "_Theme":
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        link = palette.color(QPalette.ColorRole.Link)
        # A palette may keep Qt's default blue link on a dark base: move it towards the text
        # colour until it reads (WCAG's 4.5:1 for body text).
        for _ in range(4):
            if _contrast(link, base) >= 4.5:
                break
            link = _mix(link, text, 0.3)
        muted = _mix(text, base, 0.45)
        return cls(
            muted=muted,
            link=link,
            bubble=_mix(base, palette.color(QPalette.ColorRole.Highlight), 0.12),
            render=RenderTheme(
                dark=base.lightness() < 128,
                text=text.name(),
                muted=muted.name(),
                link=link.name(),
                inline_code_background=_mix(base, text, 0.08).name(),
                rule=_mix(base, text, 0.3).name(),
                mono_family=QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family(),
            ),
        )


class _Browser(QTextBrowser):
    """A QTextBrowser that never navigates and never loads a resource named by the text."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.document().setUndoRedoEnabled(False)  # an undo stack of every streamed chunk
        self.document().setDocumentMargin(14)

    def loadResource(self, type: int, name: QUrl) -> None:  # noqa: A002 (Qt's name)
        """Model text can name any file or URL as an image; none is ever read."""
        return None


class _BottomFollower(QObject):
    """Keeps a scroll bar at the bottom while the content grows, unless the user scrolls up.

    Following stops when the bar leaves the bottom and resumes when it is brought back; both
    are seen through valueChanged, and rangeChanged (the content grew) re-pins the bar.
    """

    SLACK_PX = 8

    def __init__(self, bar: QScrollBar) -> None:
        super().__init__(bar)
        self._bar = bar
        self.following = True
        # The range grows many times while Qt lays out one update; scrolling (and so laying
        # out and painting the bottom of the document) once per event-loop pass is enough.
        self._pin = QTimer(self, singleShot=True, interval=0)
        self._pin.timeout.connect(self._to_bottom)
        bar.rangeChanged.connect(self._range_changed)
        bar.valueChanged.connect(self._value_changed)

    def follow(self) -> None:
        self.following = True
        self._to_bottom()

    def _to_bottom(self) -> None:
        if self.following:
            self._bar.setValue(self._bar.maximum())

    def _range_changed(self, _minimum: int, _maximum: int) -> None:
        if self.following and not self._pin.isActive():
            self._pin.start()

    def _value_changed(self, value: int) -> None:
        self.following = value >= self._bar.maximum() - self.SLACK_PX


class _DocumentWriter:
    """Writes the parts of a message (label, Markdown body, footer) into the document.

    Every part starts in an empty block: the one at the cursor if it is empty (the document's
    first block, the block Qt leaves after a table or a frame), otherwise a new one.
    """

    BUBBLE_INDENT = 48  # user messages sit to the right, as in most chat apps

    def __init__(self, theme: _Theme, renderer: MarkdownRenderer) -> None:
        self.theme = theme
        self._renderer = renderer
        self._style_sheet = renderer.style_sheet()
        self._muted = _small(QTextCharFormat())
        self._muted.setForeground(theme.muted)
        self._label = QTextCharFormat(self._muted)
        self._label.setFontWeight(QFont.Weight.Bold)
        self._mono = QTextCharFormat()
        self._mono.setFontFamilies([theme.render.mono_family, "monospace"])
        self._reasoning = QTextCharFormat()
        self._reasoning.setForeground(theme.muted)

    def bubble(self, cursor: QTextCursor) -> None:
        """Open the frame a user message sits in; the cursor ends inside it."""
        frame = QTextFrameFormat()
        frame.setBackground(self.theme.bubble)
        frame.setPadding(10)
        frame.setTopMargin(14)
        frame.setLeftMargin(self.BUBBLE_INDENT)
        frame.setBorder(0)
        cursor.insertFrame(frame)

    def label(self, cursor: QTextCursor, text: str, top_margin: int) -> None:
        block = QTextBlockFormat()
        block.setTopMargin(top_margin)
        block.setBottomMargin(2)
        self.new_block(cursor, block, self._label)
        cursor.insertText(text, self._label)

    def markdown(self, cursor: QTextCursor, text: str) -> int:
        """Render text in a new block at the cursor; return where it starts."""
        self.new_block(cursor, QTextBlockFormat(), QTextCharFormat())
        fragment = QTextDocument()
        fragment.setDefaultStyleSheet(self._style_sheet)
        fragment.setHtml(self._renderer.render(text))
        _tidy_after_tables(fragment)
        first = fragment.begin()
        start = cursor.position()
        cursor.insertFragment(QTextDocumentFragment(fragment))
        # Qt merges the fragment's first block into the block at the cursor and drops its
        # format; put it back, or for a first list drop the empty block Qt leaves before it.
        fix = QTextCursor(cursor.document())
        fix.setPosition(start)
        if first.textList() is not None:
            fix.deleteChar()
        elif first.length() == 1 and _in_table(first.next()):
            fix.setBlockFormat(_spacer())  # a table must follow some block: keep that one thin
        else:
            fix.setBlockFormat(first.blockFormat())
            if _is_rule(first) and _in_table(fix.block().previous()):
                _stand_rule_on_spacer(fix)
        return start

    def plain_block(self, cursor: QTextCursor) -> None:
        self.new_block(cursor, QTextBlockFormat(), QTextCharFormat())

    def note_format(self) -> QTextCharFormat:
        """A note about the reply rather than its text, such as how far the prompt was read."""
        return QTextCharFormat(self._muted)

    def plain_format(self, code: bool, thinking: bool) -> QTextCharFormat:
        """The format of streamed text not yet rendered: monospace inside a code fence, muted
        in a reasoning section (as it will be rendered)."""
        if thinking:
            return self._reasoning
        return self._mono if code else QTextCharFormat()

    def footer(self, cursor: QTextCursor, links: list[tuple[str, str]], note: str, indent: bool) -> None:
        """A small line of action links (text, href), then a grey note such as reply stats;
        indented to line up with a user's bubble."""
        block = QTextBlockFormat()
        block.setLeftMargin(self.BUBBLE_INDENT if indent else 0)
        block.setTopMargin(2)
        block.setBottomMargin(4)
        self.new_block(cursor, block, self._muted)
        for i, (text, href) in enumerate(links):
            link = QTextCharFormat(self._muted)
            link.setForeground(self.theme.link)
            link.setAnchor(True)
            link.setAnchorHref(href)
            cursor.insertText(text, link)
            if i < len(links) - 1:
                cursor.insertText("  ·  ", self._muted)
        if note:
            cursor.insertText("\u2003\u2003" + note, self._muted)

    @staticmethod
    def new_block(cursor: QTextCursor, block: QTextBlockFormat, chars: QTextCharFormat) -> None:
        if cursor.block().length() == 1:
            cursor.setBlockFormat(block)
            cursor.setBlockCharFormat(chars)
        else:
            cursor.insertBlock(block, chars)


def _tidy_after_tables(document: QTextDocument) -> None:
    """Qt's HTML import leaves an empty line after every table (code blocks are tables): drop
    it where a block follows, as streaming does by writing the tail into it. Before a rule it
    stays, thin: Qt draws a rule that directly follows a table beside it, at the right edge."""
    empty = []
    block = document.begin()
    while block.isValid():
        after = block.next()
        if (
            block.length() == 1
            and not _is_rule(block)
            and _in_table(block.previous())
            and not _in_table(block)
            and after.isValid()
            and not _in_table(after)
        ):
            empty.append((block.position(), _is_rule(after)))
        block = after
    cursor = QTextCursor(document)
    for position, before_rule in reversed(empty):
        cursor.setPosition(position)
        if before_rule:
            cursor.setBlockFormat(_spacer())
        else:
            cursor.deleteChar()  # the next block moves up, keeping its own format


def _stand_rule_on_spacer(cursor: QTextCursor) -> None:
    """Split the rule's block at the cursor: a thin block, then the rule."""
    rule = cursor.blockFormat()
    cursor.setBlockFormat(_spacer())
    cursor.insertBlock(rule)


def _spacer() -> QTextBlockFormat:
    spacer = QTextBlockFormat()
    spacer.setLineHeight(4, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
    return spacer


def _is_rule(block) -> bool:
    return block.blockFormat().hasProperty(QTextFormat.Property.BlockTrailingHorizontalRulerWidth)


def _in_table(block) -> bool:
    return block.isValid() and QTextCursor(block).currentTable() is not None


def _first_to_show(messages: list[MessageView]) -> int:
    """Index of the oldest message of the last page: HISTORY_SHOWN_CHARS, at least two messages."""
    shown_chars = 0
    for index in range(len(messages) - 1, -1, -1):
        shown_chars += len(messages[index].content)
        if shown_chars > HISTORY_SHOWN_CHARS and index < len(messages) - 2:
            return index + 1
    return 0


def _end_of(document: QTextDocument) -> QTextCursor:
    cursor = QTextCursor(document)
    cursor.movePosition(QTextCursor.MoveOperation.End)
    return cursor


def _small(fmt: QTextCharFormat) -> QTextCharFormat:
    fmt.setProperty(QTextFormat.Property.FontSizeAdjustment, -1)
    return fmt


class _StreamingReply(QObject):
    """A reply arriving in chunks, written to the end of the document on a short timer.

    A flush appends the buffered text as plain text (monospace inside a code fence). When that
    completes Markdown blocks, the plain tail is replaced by their HTML followed by the rest of
    the tail, so each block is rendered once. `flush_count` counts document updates (the tests
    and benchmarks read it).
    """

    def __init__(
        self, writer: _DocumentWriter, document: QTextDocument, message_id: int | None, model: str | None,
        parent: QObject,
    ) -> None:
        super().__init__(parent)
        self.message_id = message_id
        self.model = model
        self.flush_count = 0
        self._writer = writer
        self._document = document
        self._chunks: list[str] = []
        self._raw: list[str] = []
        self._note = False  # a note (prompt progress) stands where the text will go
        self._splitter = BlockSplitter()
        self._timer = QTimer(self, singleShot=True, interval=FLUSH_INTERVAL_MS)
        self._timer.timeout.connect(self.flush)
        cursor = _end_of(document)
        writer.label(cursor, model or "Assistant", top_margin=16)
        self.start = cursor.block().position()
        writer.plain_block(cursor)
        self.body_start = self._tail_start = cursor.position()

    def append(self, text: str) -> None:
        self._chunks.append(text)
        if not self._timer.isActive():
            self._timer.start()

    def text_so_far(self) -> str:
        return "".join(self._raw) + "".join(self._chunks).replace("\r", "")

    def stop(self) -> None:
        self._timer.stop()
        self._chunks.clear()

    def flush(self) -> None:
        self._write(final=False)

    def show_note(self, text: str) -> None:
        """Show a muted note in place of the reply until its first text arrives."""
        if self._raw:
            return
        cursor = self._tail_cursor()
        cursor.insertText(text, self._writer.note_format())
        self._note = True
        self.flush_count += 1

    def finish_in_place(self, content: str) -> bool:
        """Render the rest of the reply where it stands, if `content` is exactly the streamed
        text: the blocks rendered so far are then final, and a long reply does not freeze the
        window while all of it is rendered again. False (and nothing done) when the reply must
        be rendered from `content` instead, e.g. when a reference-style link may point across
        blocks."""
        if content.replace("\r", "") != self.text_so_far() or _REFERENCE_DEFINITION.search(content):
            return False
        self._write(final=True)
        return True

    def _tail_cursor(self) -> QTextCursor:
        """A cursor at the start of the unrendered tail, with the tail removed."""
        cursor = _end_of(self._document)
        cursor.setPosition(self._tail_start, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        return cursor

    def _write(self, final: bool) -> None:
        self._timer.stop()
        text = "".join(self._chunks).replace("\r", "")
        self._chunks.clear()
        if not text and not final:
            return
        self._raw.append(text)
        was_thinking = self._splitter.in_thinking
        done = self._splitter.feed(text)
        tail = self._splitter.tail
        if final:
            done, tail = done + tail, ""
        writer = self._writer
        opened_thinking = self._splitter.in_thinking and not was_thinking and not final
        cursor = self._tail_cursor() if self._note or opened_thinking else _end_of(self._document)
        self._note = False
        cursor.beginEditBlock()
        if done:
            cursor.setPosition(self._tail_start)
            cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
            if done.strip():
                writer.markdown(cursor, done)
            if not final:
                writer.plain_block(cursor)
                self._tail_start = cursor.position()
        if done or opened_thinking:
            text = tail
        if opened_thinking:
            # A reasoning section just opened: the tail is written again, under the caption
            # the rendered section will have instead of the raw <think> tag.
            _, _, text = text.partition(THINK_OPEN)
            cursor.insertText(THINKING_CAPTION + "\n", writer.note_format())
            text = text.lstrip("\n")
        cursor.insertText(text, writer.plain_format(self._splitter.in_fence, self._splitter.in_thinking))
        cursor.endEditBlock()
        self.flush_count += 1


class ChatView(QWidget):
    """The conversation pane: finished messages rendered as Markdown, a reply streaming below.

    Signals:
        linkActivated(QUrl): an http(s) link in a message was clicked. Nothing is opened
            here: model text is untrusted, so the window asks the user first.
        editRequested(int): Edit was clicked under the user message with this id.
        regenerateRequested(): Regenerate was clicked under the last assistant reply.
        copied(str): something was put on the clipboard; the text says what, for a status bar.

    A reply's lifecycle: begin_reply(), append_text() per chunk (cheap: buffered), then
    finish_reply() with the authoritative text.
    """

    linkActivated = Signal(QUrl)
    editRequested = Signal(int)
    regenerateRequested = Signal()
    copied = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._browser = _Browser(self)
        self._document = self._browser.document()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._browser)
        self._browser.anchorClicked.connect(self._anchor_clicked)
        self._follower = _BottomFollower(self._browser.verticalScrollBar())
        self._messages: list[MessageView] = []
        self._first_shown = 0  # index of the oldest message rendered; older ones wait
        self._snippets: dict[str, str] = {}  # href of a code block's Copy link -> its code
        self._reply: _StreamingReply | None = None
        self._regenerate_footer: int | None = None  # position of the footer offering Regenerate
        self._last_body: tuple[int, int] | None = None  # the last finished reply's body span
        self._writer = self._new_writer()

    # -- the window's API --------------------------------------------------------------------

    def set_messages(self, messages: list[MessageView]) -> None:
        """Show a whole conversation, replacing what was shown (a streaming reply included)."""
        if self._reply is not None:
            self._reply.stop()
            self._reply = None
        self._messages = list(messages)
        self._first_shown = _first_to_show(self._messages)
        self._rebuild()
        self._follower.follow()

    def add_message(self, message: MessageView) -> None:
        """Append one finished message, e.g. the one the user just sent; scroll to it."""
        if self._reply is not None:
            raise RuntimeError("a reply is streaming: finish it before adding a message")
        self._drop_regenerate()
        self._messages.append(message)
        self._write_message(len(self._messages) - 1, regenerate=message.role == "assistant")
        self._follower.follow()

    def begin_reply(self, message_id: int | None, model: str | None = None) -> None:
        """Start a streaming assistant reply at the bottom."""
        if self._reply is not None:
            raise RuntimeError("a reply is already streaming")
        self._drop_regenerate()
        self._reply = self._start_reply(message_id, model)
        self._follower.follow()

    def show_prompt_progress(self, done: int, total: int) -> None:
        """Say how far the model has read a long prompt, where its reply will appear, until
        the reply's first text replaces it."""
        if self._reply is not None:
            self._reply.show_note(f"Reading the conversation… {done:,} of {total:,} tokens")

    def append_text(self, text: str) -> None:
        """Add a chunk of the streaming reply (ignored when none is streaming, e.g. a late
        chunk after set_messages switched conversations)."""
        if self._reply is not None:
            self._reply.append(text)

    def finish_reply(self, content: str, stats: dict, status: str) -> None:
        """End the streaming reply: show `content` (the authoritative text) and its stats.

        When content is what was streamed, only the unrendered tail is rendered now; otherwise
        (an edited or trimmed text) the reply is rendered again from content.
        """
        reply = self._reply
        if reply is None:
            return
        self._reply = None
        self._messages.append(MessageView(reply.message_id, "assistant", content, stats, status, reply.model))
        finished_in_place = reply.finish_in_place(content)
        reply.stop()
        if finished_in_place:
            footer = self._write_footer(_end_of(self._document), len(self._messages) - 1, regenerate=True)
            self._last_body = (reply.body_start, footer - 1)
            return
        cursor = _end_of(self._document)
        cursor.setPosition(reply.start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._write_message(len(self._messages) - 1, regenerate=True)

    def is_streaming(self) -> bool:
        """Whether a reply has begun and not yet finished."""
        return self._reply is not None

    def is_following(self) -> bool:
        """Whether the view stays scrolled to the bottom as content arrives."""
        return self._follower.following

    def text_of_reply(self) -> str:
        """The shown text of the streaming reply, or of the last one finished."""
        if self._reply is not None:
            span = (self._reply.body_start, _end_of(self._document).position())
        elif self._last_body is not None:
            span = self._last_body
        else:
            return ""
        lines = []
        block = self._document.findBlock(span[0])
        while block.isValid() and block.position() <= span[1]:
            lines.append(block.text())
            block = block.next()
        return "\n".join(lines).replace("\u2028", "\n").replace("\xa0", " ")

    def hidden_count(self) -> int:
        """How many older messages wait behind "Show earlier messages"."""
        return self._first_shown

    def show_earlier(self) -> None:
        """Render one more page of older messages, keeping in view the oldest one shown before."""
        if not self._first_shown:
            return
        anchor = self._first_shown
        self._first_shown = _first_to_show(self._messages[:anchor])
        starts = self._rebuild()
        block = self._document.findBlock(starts[anchor])
        top = self._document.documentLayout().blockBoundingRect(block).top()
        self._browser.verticalScrollBar().setValue(int(top))

    @property
    def flush_count(self) -> int:
        """Document updates made by the streaming reply so far (for tests and benchmarks)."""
        return self._reply.flush_count if self._reply is not None else 0

    def flush_now(self) -> None:
        """Write buffered chunks without waiting for the timer (benchmarks time one update)."""
        if self._reply is not None:
            self._reply.flush()

    # -- rendering -----------------------------------------------------------------------------

    def _new_writer(self) -> _DocumentWriter:
        theme = _Theme.from_palette(self.palette())
        return _DocumentWriter(theme, MarkdownRenderer(theme.render, self._snippet_href))

    def _start_reply(self, message_id: int | None, model: str | None) -> _StreamingReply:
        return _StreamingReply(self._writer, self._document, message_id, model, self)

    def _snippet_href(self, code: str) -> str:
        href = f"{ACTION_SCHEME}:copy-code/{len(self._snippets)}"
        self._snippets[href] = code
        return href

    def _rebuild(self) -> dict[int, int]:
        """Render the shown messages again (a new conversation, a new palette, or all of it).

        Returns where each message starts in the document, by index.
        """
        streamed = self._reply.text_so_far() if self._reply is not None else None
        self._document.clear()
        self._snippets.clear()
        self._regenerate_footer = self._last_body = None
        if self._first_shown:
            count = self._first_shown
            link = f"Show {count} earlier message{'s' if count != 1 else ''}"
            self._writer.footer(_end_of(self._document), [(link, f"{ACTION_SCHEME}:show-earlier")], "", indent=False)
        starts = {}
        for index in range(self._first_shown, len(self._messages)):
            is_last = index == len(self._messages) - 1
            starts[index] = _end_of(self._document).position()
            message = self._messages[index]
            self._write_message(index, regenerate=is_last and message.role == "assistant" and streamed is None)
        if streamed is not None:
            old = self._reply
            old.stop()
            self._reply = self._start_reply(old.message_id, old.model)
            self._reply.append(streamed)
            self._reply.flush()
        return starts

    def _write_message(self, index: int, regenerate: bool) -> None:
        message = self._messages[index]
        cursor = _end_of(self._document)
        writer = self._writer
        if message.role == "user":
            writer.bubble(cursor)
            writer.label(cursor, "You", top_margin=0)
        else:
            label = {"system": "System prompt"}.get(message.role) or message.model or "Assistant"
            writer.label(cursor, label, top_margin=16)
        body_start = writer.markdown(cursor, message.content)
        cursor.movePosition(QTextCursor.MoveOperation.End)  # out of the user's bubble
        footer = self._write_footer(cursor, index, regenerate)
        if message.role == "assistant":
            self._last_body = (body_start, footer - 1)

    def _write_footer(self, cursor: QTextCursor, index: int, regenerate: bool) -> int:
        """Write the footer of message `index` at the cursor; return where its block starts."""
        message = self._messages[index]
        links = [("Copy", f"{ACTION_SCHEME}:copy-message/{index}")]
        if message.role == "user" and message.id is not None:
            links.append(("Edit", f"{ACTION_SCHEME}:edit/{message.id}"))
        if regenerate:
            links.append(("Regenerate", f"{ACTION_SCHEME}:regenerate"))
        note = stats_text(message.stats, message.status) if message.role == "assistant" else ""
        self._writer.footer(cursor, links, note, indent=message.role == "user")
        position = cursor.block().position()
        self._regenerate_footer = position if regenerate else None
        return position

    def _drop_regenerate(self) -> None:
        """Only the last reply offers Regenerate: rewrite its footer before anything follows."""
        if self._regenerate_footer is None:
            return
        cursor = _end_of(self._document)
        cursor.setPosition(self._regenerate_footer)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._write_footer(cursor, len(self._messages) - 1, regenerate=False)

    # -- events --------------------------------------------------------------------------------

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            bar = self._browser.verticalScrollBar()
            value, following = bar.value(), self._follower.following
            self._writer = self._new_writer()
            self._rebuild()
            if following:
                self._follower.follow()
            else:
                bar.setValue(value)
        super().changeEvent(event)

    def _anchor_clicked(self, url: QUrl) -> None:
        if url.scheme() == ACTION_SCHEME:
            self._run_action(url)
        elif url.scheme() in ("http", "https"):
            self.linkActivated.emit(url)
        # Any other scheme is ignored: the renderer never makes such links.

    def _run_action(self, url: QUrl) -> None:
        action, _, argument = url.path().partition("/")
        if action == "copy-code" and (code := self._snippets.get(url.toString())) is not None:
            self._copy(code, "Code copied")
        elif action == "copy-message" and argument.isdigit() and int(argument) < len(self._messages):
            self._copy(self._messages[int(argument)].content, "Message copied")
        elif action == "edit" and argument.isdigit():
            self.editRequested.emit(int(argument))
        elif action == "regenerate":
            self.regenerateRequested.emit()
        elif action == "show-earlier":
            self.show_earlier()

    def _copy(self, text: str, what: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(what)
