"""A reply streaming in at the end of the chat pane's document.

Its chunks are written as plain text about every FLUSH_INTERVAL_MS: a chunk that comes sooner
after the last write waits for the rest of the interval, joined to any that follow, and one
that comes later, or within FLUSH_SLACK_MS of the interval's end, is written at once (the
engine worker hands text over at that pace, so each chunk is written as it comes, in the same
wake of the GUI thread). Each Markdown block is rendered once, when it completes. The cost of
an update therefore depends on the size of the chunk and of the block, not on the reply so far.
"""

from __future__ import annotations

import math
import re
import time

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QTextCursor, QTextDocument

from ...store import shorten
from .document import DocumentWriter, end_of
from .markdown_render import THINK_OPEN, THINKING_CAPTION, BlockSplitter, break_long_runs

# Long enough to coalesce a fast model's tokens into one document update, short enough that
# text still appears to flow.
FLUSH_INTERVAL_MS = 40
# The engine's process times its own 40 ms between chunks, and their arrival here jitters by a
# few ms: a chunk that comes this close to the end of the interval is written at once, not
# after one more wake of the GUI thread for the rest of it.
FLUSH_SLACK_MS = 5

# A link definition can serve a reference in any block, so a reply that has one is rendered
# as a whole when it finishes.
_REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)


class StreamingReply(QObject):
    """A reply arriving in chunks, written to the end of the document about every
    FLUSH_INTERVAL_MS (never sooner than FLUSH_SLACK_MS before it).

    A flush appends the buffered text as plain text (monospace inside a code fence). When that
    completes Markdown blocks, the plain tail is replaced by their HTML followed by the rest of
    the tail, so each block is rendered once. `flush_count` counts document updates (the tests
    and benchmarks read it).
    """

    def __init__(
        self, writer: DocumentWriter, document: QTextDocument, message_id: int | None, model: str | None,
        parent: QObject,
    ) -> None:
        super().__init__(parent)
        self.message_id = message_id
        self.model = model
        self.flush_count = 0
        self._writer = writer
        self._document = document
        self._chunks: list[str] = []
        self._written_at = -math.inf  # time.monotonic() of the last write
        self._raw: list[str] = []
        self._note = False  # a note (prompt progress) stands where the text will go
        self._run = 0  # the plain tail ends with this many characters offering no line break
        self._splitter = BlockSplitter()
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self.flush)
        cursor = end_of(document)
        writer.label(cursor, shorten(model or "Assistant"), top_margin=16, message_id=message_id)
        self.start = cursor.block().position()
        writer.plain_block(cursor)
        self.body_start = self._tail_start = cursor.position()

    def append(self, text: str) -> None:
        self._chunks.append(text)
        if self._timer.isActive():
            return
        wait_ms = FLUSH_INTERVAL_MS - (time.monotonic() - self._written_at) * 1000
        if wait_ms <= FLUSH_SLACK_MS:
            self.flush()
        else:
            self._timer.start(math.ceil(wait_ms))

    @property
    def waiting(self) -> bool:
        """Whether text has come that is not written yet."""
        return bool(self._chunks)

    def text_so_far(self) -> str:
        return "".join(self._raw) + "".join(self._chunks).replace("\r", "")

    def shift(self, delta: int) -> None:
        """The document changed by `delta` characters before the reply (the context divider
        was drawn or taken away above it): its positions move with it."""
        self.start += delta
        self.body_start += delta
        self._tail_start += delta

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
        cursor = end_of(self._document)
        cursor.setPosition(self._tail_start, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        return cursor

    def _write(self, final: bool) -> None:
        self._timer.stop()
        text = "".join(self._chunks).replace("\r", "")
        self._chunks.clear()
        if not text and not final:
            return
        self._written_at = time.monotonic()
        self._raw.append(text)
        was_thinking = self._splitter.in_thinking
        done = self._splitter.feed(text)
        tail = self._splitter.tail
        if final:
            done, tail = done + tail, ""
        writer = self._writer
        opened_thinking = self._splitter.in_thinking and not was_thinking and not final
        rewritten = bool(done) or self._note or opened_thinking  # the tail is written afresh
        cursor = self._tail_cursor() if self._note or opened_thinking else end_of(self._document)
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
        # A model looping on one character would otherwise grow a run Qt lays out ever slower.
        shown, self._run = break_long_runs(text, 0 if rewritten else self._run)
        cursor.insertText(shown, writer.plain_format(self._splitter.in_fence, self._splitter.in_thinking))
        cursor.endEditBlock()
        self.flush_count += 1
