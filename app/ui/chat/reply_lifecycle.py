"""A streaming reply's life in the chat pane, from begin_reply to finish_reply.

At most one reply streams at a time, at the end of the transcript. While it does, the
"Generating" line moves under it (generating_indicator); the reply itself writes its chunks
(streaming_reply), and is started afresh with the text so far whenever the transcript is
written again. When it ends, how it ended is announced to assistive technology, and it becomes
a finished message, which the transcript writes in its place.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor

from ...engine.types import ReplyStats, ReplyStatus
from ..widgets.announce import announce
from .browser import ChatBrowser
from .document import DocumentWriter
from .generating_indicator import GeneratingIndicator
from .message_view import STATUS_REASONS, MessageView, stats_text
from .streaming_reply import StreamingReply

# What is announced when a reply ends, by how it ended.
_ENDINGS = {ReplyStatus.COMPLETE: "Reply finished", ReplyStatus.CANCELLED: "Reply stopped",
            ReplyStatus.ERROR: "Reply ended with an error"}


def ending_words(stats: ReplyStats | None, status: ReplyStatus) -> str:
    """What is announced when a reply ends, e.g. "Reply finished. 12 tokens · end of turn."
    A reply that did not complete says how it ended once, not again as its stop reason."""
    details = stats_text(stats, status)
    reason = (stats.stop_reason if stats is not None else None) or STATUS_REASONS.get(status)
    if status is not ReplyStatus.COMPLETE and reason is not None:
        details = details.removesuffix(reason.words).rstrip(" ·")
    return f"{_ENDINGS[status]}. {details}." if details else f"{_ENDINGS[status]}."


@dataclass(frozen=True)
class EndedReply:
    """A reply that finished streaming: what it wrote in the document, the message it became,
    and whether its text was rendered where it stood (else it is written again from the
    message's content)."""

    streamed: StreamingReply
    message: MessageView
    rendered_in_place: bool


class ReplyLifecycle(QObject):
    """The reply streaming at the end of `browser`'s document, if any, and the line under it."""

    def __init__(self, browser: ChatBrowser, parent: QObject) -> None:
        super().__init__(parent)
        self._browser = browser
        self._indicator = GeneratingIndicator(browser)
        self._reply: StreamingReply | None = None
        self._version = (1, 1)  # the streaming reply's version, of how many

    def set_colours(self, text: QColor, background: QColor) -> None:
        """The transcript's muted text colour and its background, for the "Generating" line."""
        self._indicator.set_colours(text, background)

    def is_streaming(self) -> bool:
        return self._reply is not None

    def begin(
        self, writer: DocumentWriter, message_id: int | None, model: str | None, version: int, versions: int,
    ) -> None:
        """Start writing a reply at the end of the document: `version` of `versions`."""
        self._version = (version, versions)
        self._reply = StreamingReply(writer, self._browser.document(), message_id, model, self)
        self._indicator.start()

    def show_progress(self, done: int, total: int) -> None:
        if self._reply is not None:
            self._reply.show_note(f"Reading the conversation… {done:,} of {total:,} tokens")

    def append(self, text: str) -> None:
        if self._reply is not None:
            self._reply.append(text)

    def drop(self) -> None:
        """Forget the reply without finishing it: the conversation is shown afresh."""
        if self._reply is not None:
            self._reply.stop()
            self._reply = None
            self._indicator.stop()

    def write_again(self, writer: DocumentWriter) -> None:
        """The document was written afresh: write the reply again at its end, as far as it got."""
        if self._reply is None:
            return
        old = self._reply
        streamed = old.text_so_far()
        old.stop()
        self._reply = StreamingReply(writer, self._browser.document(), old.message_id, old.model, self)
        self._reply.append(streamed)
        self._reply.flush()

    def end(self, content: str, stats: ReplyStats | None, status: ReplyStatus) -> EndedReply | None:
        """End the reply with `content` (the authoritative text): the line under it goes, how
        it ended is announced, and what was streamed is rendered where it stands if it is
        exactly `content`. None when no reply is streaming."""
        reply = self._reply
        if reply is None:
            return None
        self._reply = None
        self._indicator.stop()
        announce(self._browser, ending_words(stats, status))
        message = MessageView(reply.message_id, "assistant", content, stats, status, reply.model, *self._version)
        rendered_in_place = reply.finish_in_place(content)
        reply.stop()
        return EndedReply(reply, message, rendered_in_place)

    def body_start(self) -> int | None:
        """Where the streaming reply's text starts in the document, or None."""
        return self._reply.body_start if self._reply is not None else None

    def moved(self, at: int, delta: int) -> None:
        """The document gained (or lost) `delta` characters at `at`."""
        if self._reply is not None and self._reply.start >= at:
            self._reply.shift(delta)

    def flush_count(self) -> int:
        return self._reply.flush_count if self._reply is not None else 0

    def text_waiting(self) -> bool:
        return self._reply is not None and self._reply.waiting

    def flush_now(self) -> None:
        if self._reply is not None:
            self._reply.flush()
