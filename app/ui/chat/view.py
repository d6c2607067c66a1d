"""The chat pane: a conversation as one rich-text document, with a reply streaming in at the end.

One QTextBrowser holds every message, so text can be selected across messages and the pane
scrolls as a whole. Qt never follows a link here: actions under messages and code blocks use
the private `hearth:` scheme and are handled by the view; web links are handed to the window
(linkActivated), which asks before opening anything.

A long conversation opens on its newest messages, about HISTORY_SHOWN_CHARS of them and at most
HISTORY_SHOWN_MESSAGES, with a link above that renders the page before them on demand: Markdown
and syntax highlighting cost about 8 ms a message, so rendering hundreds of them up front froze
the window for seconds. The window may hand over only the newest messages of a conversation
(it can hold a hundred thousand); the link then asks it for older ones (earlierRequested).
A message longer than MESSAGE_SHOWN_CHARS shows its beginning and says so; Copy gives all of it.

An empty chat shows a welcome (set_welcome) instead. Edit under a message opens an editor in
its place (inline_editor); while a reply streams, a "Generating" line moves under the
transcript; the end of a reply, and errors the window reports, are announced to assistive
technology (announce).

A message with several versions offers ‹ n/m › under it; the window answers a step by showing
the conversation again on the other branch, and the view keeps that message where it was on
screen (and the keyboard on its arrow) instead of jumping to the bottom. A line drawn after a
message marks the context boundary: the model did not see what is above it. reveal() scrolls
to a message (a search hit), rendering the pages before it if need be, and marks it a moment.

This module decides what is shown where; chat_document writes the messages into the document,
message_footer says what the line under each offers, streaming_reply writes the reply as it
arrives, link_focus tells a screen reader which link the keyboard is on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPoint, QUrl, Signal
from PySide6.QtGui import QFont, QFontMetricsF, QGuiApplication, QPalette, QTextBlock, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ...engine.types import ReplyStats, ReplyStatus
from ...store import shorten
from ..widgets.announce import announce
from .browser import DOCUMENT_MARGIN, BottomFollower, ChatBrowser
from .document import MESSAGE_END, MESSAGE_START, DocumentWriter, FooterPart, end_of, find_block, remove_divider
from .generating_indicator import GeneratingIndicator
from .inline_editor import EditorOverlay
from .link_focus import LinkFocus
from .markdown_render import ZERO_WIDTH_SPACE, MarkdownRenderer
from .message_footer import ACTION_SCHEME, action_href, footer_parts, version_words
from .message_view import STATUS_REASONS, MessageView, stats_text
from .reveal_mark import RevealMark
from .streaming_reply import StreamingReply
from .theme import ChatTheme
from .welcome import Welcome, write_welcome

__all__ = ["ChatView", "MessageView", "stats_text"]

# Characters of message text rendered when a conversation opens (about 3,000 tokens, several
# screens); older messages wait behind "Show earlier messages", a page of this size per click.
# A page holds at least two messages, however long.
HISTORY_SHOWN_CHARS = 12_000
# ... and at most this many messages: a page of a thousand one-word messages took seconds.
HISTORY_SHOWN_MESSAGES = 40
# A message's text shown, at most (some 25,000 tokens): laying out a megabyte takes Qt a second.
MESSAGE_SHOWN_CHARS = 100_000

# What is announced when a reply ends, by how it ended.
_ENDINGS = {ReplyStatus.COMPLETE: "Reply finished", ReplyStatus.CANCELLED: "Reply stopped",
            ReplyStatus.ERROR: "Reply ended with an error"}

# Room kept above a message scrolled to the top of the pane (reveal, a version step).
_REVEAL_MARGIN_PX = 12


def _first_to_show(messages: list[MessageView]) -> int:
    """Index of the oldest message of the last page: HISTORY_SHOWN_CHARS and at most
    HISTORY_SHOWN_MESSAGES, at least two messages."""
    shown_chars = 0
    for index in range(len(messages) - 1, -1, -1):
        shown_chars += len(messages[index].content)
        if index < len(messages) - 2 and (
            shown_chars > HISTORY_SHOWN_CHARS or len(messages) - index > HISTORY_SHOWN_MESSAGES
        ):
            return index + 1
    return 0


def _shown_text(content: str) -> str:
    """content as the view renders it: the beginning of a very long message, saying so."""
    if len(content) <= MESSAGE_SHOWN_CHARS:
        return content
    return (f"{content[:MESSAGE_SHOWN_CHARS]}\n\n*[The message goes on for {len(content) - MESSAGE_SHOWN_CHARS:,} "
            "more characters, not shown here: Copy or export it to read all of it.]*")


def _ending(stats: ReplyStats | None, status: ReplyStatus) -> str:
    """What is announced when a reply ends, e.g. "Reply finished. 12 tokens · end of turn."
    A reply that did not complete says how it ended once, not again as its stop reason."""
    details = stats_text(stats, status)
    reason = (stats.stop_reason if stats is not None else None) or STATUS_REASONS.get(status)
    if status is not ReplyStatus.COMPLETE and reason is not None:
        details = details.removesuffix(reason.words).rstrip(" ·")
    return f"{_ENDINGS[status]}. {details}." if details else f"{_ENDINGS[status]}."


def _divider_text(unseen: int) -> str:
    if unseen == 1:
        return "The model did not see the message above this line"
    if unseen > 1:
        return f"The model did not see the {unseen:,} messages above this line"
    return "The model did not see the messages above this line"


@dataclass(frozen=True)
class _Step:
    """A version step under way: where its message stood, to find the message that stands
    there once the window has shown the other branch."""

    first: bool  # it was the conversation's first message
    after: int | None  # else the id of the message before it (None: that one was not handed over)
    step: int
    label_y: float | None  # its top in the viewport, None if it was not rendered
    keyboard: bool  # the keyboard was on its arrow: it stays on the arrow

    def index_in(self, messages: list[MessageView]) -> int | None:
        """Where the message that took its place is among `messages`, or None if unknown."""
        if self.first:
            return 0 if messages else None
        index = next((i for i, m in enumerate(messages) if self.after is not None and m.id == self.after), None)
        return index + 1 if index is not None and index + 1 < len(messages) else None


class ChatView(QWidget):
    """The conversation pane: finished messages rendered as Markdown, a reply streaming below.

    Signals:
        linkActivated(QUrl): an http(s) link in a message was clicked. Nothing is opened
            here: model text is untrusted, so the window asks the user first.
        editSubmitted(int, str): Edit under a user message opened an editor in its place, and
            the editor sent this (non-empty) text for the message with this id: the window
            calls ChatSession.edit. The editor stays until set_messages shows the conversation
            again, so an edit that is refused (a reply is being written) loses nothing.
        regenerateRequested(): Regenerate was clicked under the last assistant reply.
        versionStepped(int, int): ‹ (-1) or › (+1) under the message with this id: the window
            shows the version before or after it (store.sibling, then ChatSession.show_version)
            with set_messages; the view keeps that place in view, and the keyboard on the arrow.
        branchRequested(int): "Branch" under the message with this id: the window starts a new
            conversation from the messages up to it (ChatSession.branch_from).
        deleteVersionRequested(int): "Delete" under the message with this id, offered where a
            message has other versions: the window deletes this one with what follows it
            (ChatSession.delete_version) and offers Undo.
        promptChosen(str): an example prompt of the welcome was clicked: the window puts it in
            the message box.
        getModelsRequested(): the welcome's "Get models" link was clicked.
        copied(str): something was put on the clipboard; the text says what, for a status bar.
        earlierRequested(): "Show earlier messages" was clicked when every message handed over
            is shown but older ones exist (set_messages' `earlier`): the window answers with
            prepend_messages().

    A reply's lifecycle: begin_reply(), append_text() per chunk (cheap: buffered), then
    finish_reply() with the authoritative text.

    After set_messages the window may call set_context_boundary (set_messages clears it), and
    reveal() to bring a message into view (a search hit).
    """

    linkActivated = Signal(QUrl)
    editSubmitted = Signal(int, str)
    regenerateRequested = Signal()
    versionStepped = Signal(int, int)
    branchRequested = Signal(int)
    deleteVersionRequested = Signal(int)
    copied = Signal(str)
    earlierRequested = Signal()
    promptChosen = Signal(str)
    getModelsRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._browser = ChatBrowser(self)
        self._document = self._browser.document()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._browser)
        self._indicator = GeneratingIndicator(self._browser)
        self._browser.anchorClicked.connect(self._anchor_clicked)
        self._follower = BottomFollower(self._browser.verticalScrollBar())
        self._link_focus = LinkFocus(self._browser)
        self._mark = RevealMark(self._browser)
        self._messages: list[MessageView] = []
        self._first_shown = 0  # index of the oldest message rendered; older ones wait
        self._earlier = 0  # older messages the window has not handed over
        self._snippets: dict[str, str] = {}  # href of a code block's Copy link -> its code
        self._reply: StreamingReply | None = None
        self._reply_version = (1, 1)  # the streaming reply's version, of how many
        self._boundary: tuple[int, int] | None = None  # the context boundary: message id, unseen
        self._stepping: _Step | None = None  # while versionStepped is being answered
        self._regenerate_footer: int | None = None  # position of the footer offering Regenerate
        self._last_body: tuple[int, int] | None = None  # the last finished reply's body span
        self._welcome: Welcome | None = None
        self._welcome_shown = False
        self._editor: EditorOverlay | None = None
        self._writer = self._new_writer()

    # -- the window's API --------------------------------------------------------------------

    def set_messages(self, messages: list[MessageView], earlier: int = 0) -> None:
        """Show a conversation, replacing what was shown (a streaming reply included):
        messages are its newest, and `earlier` older ones exist that the view may ask for."""
        if self._reply is not None:
            self._reply.stop()
            self._reply = None
            self._indicator.stop()
        self._close_editor(rebuild=False)  # all is rendered afresh below
        self._boundary = None
        self._messages = list(messages)
        self._earlier = earlier
        self._first_shown = _first_to_show(self._messages)
        stepped = self._stepping.index_in(self._messages) if self._stepping is not None else None
        if stepped is None:
            self._rebuild()
            self._follower.follow()
            return
        self._first_shown = self._pages_back_to(stepped)
        self._rebuild()
        self._after_step(stepped, self._stepping)

    def prepend_messages(self, messages: list[MessageView], earlier: int) -> None:
        """Older messages the window handed over after earlierRequested, and how many older
        ones still remain; shows the page before the oldest one shown."""
        self._messages[:0] = messages
        self._first_shown += len(messages)
        self._earlier = earlier
        self.show_earlier()

    def add_message(self, message: MessageView) -> None:
        """Append one finished message, e.g. the one the user just sent; scroll to it."""
        if self._reply is not None:
            raise RuntimeError("a reply is streaming: finish it before adding a message")
        self._leave_welcome()
        self._drop_regenerate()
        self._messages.append(message)
        self._write_message(len(self._messages) - 1, regenerate=message.role == "assistant")
        self._follower.follow()

    def begin_reply(
        self, message_id: int | None, model: str | None = None, version: int = 1, versions: int = 1,
    ) -> None:
        """Start a streaming assistant reply at the bottom; it is `version` of `versions`
        (a regenerated reply is a new version), offered under it when it finishes."""
        if self._reply is not None:
            raise RuntimeError("a reply is already streaming")
        self._leave_welcome()
        self._drop_regenerate()
        self._reply_version = (version, versions)
        self._reply = self._start_reply(message_id, model)
        self._indicator.start()
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

    def finish_reply(self, content: str, stats: ReplyStats | None, status: ReplyStatus) -> None:
        """End the streaming reply: show `content` (the authoritative text) and its stats.

        When content is what was streamed, only the unrendered tail is rendered now; otherwise
        (an edited or trimmed text) the reply is rendered again from content.
        """
        reply = self._reply
        if reply is None:
            return
        self._reply = None
        self._indicator.stop()
        announce(self._browser, _ending(stats, status))
        self._messages.append(
            MessageView(reply.message_id, "assistant", content, stats, status, reply.model, *self._reply_version)
        )
        finished_in_place = reply.finish_in_place(content)
        reply.stop()
        if finished_in_place:
            footer = self._write_footer(end_of(self._document), len(self._messages) - 1, regenerate=True)
            self._last_body = (reply.body_start, footer - 1)
            return
        cursor = end_of(self._document)
        cursor.setPosition(reply.start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._write_message(len(self._messages) - 1, regenerate=True)

    def set_welcome(self, welcome: Welcome | None) -> None:
        """What an empty chat says of the model (None: nothing); shown whenever the
        conversation has no messages."""
        self._welcome = welcome
        if not self._messages and self._reply is None:
            self._rebuild()

    def announce_error(self, message: str) -> None:
        """Have assistive technology say an error at once, e.g. a reply that could not start."""
        announce(self._browser, message, urgent=True)

    def is_streaming(self) -> bool:
        """Whether a reply has begun and not yet finished."""
        return self._reply is not None

    def column_width(self) -> int:
        """The widest the message column grows, document margins included: the window keeps
        the model selector and the message box to it."""
        return self._browser.reading_width() + 2 * DOCUMENT_MARGIN

    def is_following(self) -> bool:
        """Whether the view stays scrolled to the bottom as content arrives."""
        return self._follower.following

    def text_of_reply(self) -> str:
        """The shown text of the streaming reply, or of the last one finished."""
        if self._reply is not None:
            span = (self._reply.body_start, end_of(self._document).position())
        elif self._last_body is not None:
            span = self._last_body
        else:
            return ""
        lines = []
        block = self._document.findBlock(span[0])
        while block.isValid() and block.position() <= span[1]:
            lines.append(block.text())
            block = block.next()
        return "\n".join(lines).replace("\u2028", "\n").replace("\xa0", " ").replace(ZERO_WIDTH_SPACE, "")

    def oldest_message_id(self) -> int | None:
        """The id of the oldest message handed over (older ones are asked for before it)."""
        return self._messages[0].id if self._messages else None

    def hidden_count(self) -> int:
        """How many older messages wait behind "Show earlier messages"."""
        return self._first_shown + self._earlier

    def show_earlier(self) -> None:
        """Render one more page of older messages, keeping in view the oldest one shown before."""
        if not self._first_shown:
            if self._earlier:
                self.earlierRequested.emit()
            return
        anchor = self._first_shown
        self._first_shown = _first_to_show(self._messages[:anchor])
        starts = self._rebuild()
        block = self._document.findBlock(starts[anchor])
        top = self._document.documentLayout().blockBoundingRect(block).top()
        self._browser.verticalScrollBar().setValue(int(top))

    def set_context_boundary(self, message_id: int | None, unseen: int = 0) -> None:
        """Draw a line after the message with this id: "The model did not see the `unseen`
        messages above this line" (None: no line). It moves when called again, stays through
        every rendering afresh, and waits while that message is not rendered (behind "Show
        earlier messages"). set_messages clears it."""
        boundary = None if message_id is None else (message_id, unseen)
        if boundary == self._boundary:
            return
        self._boundary = boundary
        if self._editor is not None:  # it lies over a gap at a position: render it all again
            self._rebuild_in_place()
            return
        with self._view_kept():
            removed = remove_divider(self._document)
            if removed is not None:
                self._moved(removed[0], -removed[1])
            footer = find_block(self._document, MESSAGE_END, message_id, backwards=True) if boundary else QTextBlock()
            if footer.isValid():
                cursor = QTextCursor(footer)
                cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
                start = cursor.position()
                self._writer.divider(cursor, _divider_text(unseen))
                self._moved(start, cursor.position() - start)

    def reveal(self, message_id: int) -> bool:
        """Scroll the message with this id into view, rendering the pages before it if it
        waits behind "Show earlier messages", and mark it a moment so the eye finds it (a
        search hit); a screen reader is told. False if it is not among those handed over."""
        index = next((i for i, m in enumerate(self._messages) if m.id == message_id), None)
        if index is None:
            return False
        if index < self._first_shown:
            self._first_shown = self._pages_back_to(index)
            self._rebuild()
        label = find_block(self._document, MESSAGE_START, message_id)
        if not label.isValid():
            return False
        self._browser.verticalScrollBar().setValue(int(self._top_of(label)) - _REVEAL_MARGIN_PX)
        footer = find_block(self._document, MESSAGE_END, message_id)
        end = footer.position() - 1 if footer.isValid() else label.position() + label.length() - 1
        self._mark.show(label.position(), end)
        message = self._messages[index]
        who = {"user": "your message", "system": "the system prompt"}.get(message.role, "a reply")
        announce(self._browser, f"Found in {who}: {shorten(message.content)}")
        return True

    @property
    def flush_count(self) -> int:
        """Document updates made by the streaming reply so far (for tests and benchmarks)."""
        return self._reply.flush_count if self._reply is not None else 0

    def flush_now(self) -> None:
        """Write buffered chunks without waiting for the timer (benchmarks time one update)."""
        if self._reply is not None:
            self._reply.flush()

    # -- rendering -----------------------------------------------------------------------------

    def _new_writer(self) -> DocumentWriter:
        theme = ChatTheme.from_palette(self.palette())
        code_font = QFont(self._browser.font())
        code_font.setFamilies([theme.render.mono_family, "monospace"])
        space_px = QFontMetricsF(code_font).horizontalAdvance(" ")
        self._indicator.set_colours(theme.muted, self.palette().color(QPalette.ColorRole.Base))
        return DocumentWriter(theme, MarkdownRenderer(theme.render, self._snippet_href), space_px)

    def _start_reply(self, message_id: int | None, model: str | None) -> StreamingReply:
        return StreamingReply(self._writer, self._document, message_id, model, self)

    def _snippet_href(self, code: str) -> str:
        href = f"{ACTION_SCHEME}:copy-code/{len(self._snippets)}"
        self._snippets[href] = code
        return href

    def _rebuild(self) -> dict[int, int]:
        """Render the shown messages again (a new conversation, a new palette, or all of it).

        Returns where each message starts in the document, by index.
        """
        streamed = self._reply.text_so_far() if self._reply is not None else None
        self._mark.clear()
        self._document.clear()
        self._browser.fit_column()
        self._snippets.clear()
        self._regenerate_footer = self._last_body = None
        self._welcome_shown = not self._messages and streamed is None and self._welcome is not None
        if self._welcome_shown:
            write_welcome(self._document, self._welcome, self._writer.theme)
        if self.hidden_count():
            count = self.hidden_count()
            link = f"Show {count} earlier message{'s' if count != 1 else ''}"
            show = [FooterPart(link, action_href("show-earlier"))]
            self._writer.footer(end_of(self._document), show, "", indent=False)
        starts = {}
        for index in range(self._first_shown, len(self._messages)):
            is_last = index == len(self._messages) - 1
            starts[index] = end_of(self._document).position()
            message = self._messages[index]
            self._write_message(index, regenerate=is_last and message.role == "assistant" and streamed is None)
        if streamed is not None:
            old = self._reply
            old.stop()
            self._reply = self._start_reply(old.message_id, old.model)
            self._reply.append(streamed)
            self._reply.flush()
        if self._editor is not None:
            self._editor.place()
        return starts

    def _write_message(self, index: int, regenerate: bool) -> None:
        message = self._messages[index]
        cursor = end_of(self._document)
        writer = self._writer
        if message.role == "user":
            writer.bubble(cursor)
            writer.label(cursor, "You", top_margin=0, message_id=message.id)
            if self._editor is not None and message.id == self._editor.message_id:
                # The editor lies over a gap where the text was, in place of the text and footer.
                writer.new_block(cursor, self._editor.gap_format(), QTextCharFormat())
                self._editor.set_gap(cursor.block().position())
                return
        else:
            label = {"system": "System prompt"}.get(message.role) or message.model or "Assistant"
            writer.label(cursor, shorten(label), top_margin=16, message_id=message.id)
        body_start = writer.markdown(cursor, _shown_text(message.content))
        cursor.movePosition(QTextCursor.MoveOperation.End)  # out of the user's bubble
        footer = self._write_footer(cursor, index, regenerate)
        if message.role == "assistant":
            self._last_body = (body_start, footer - 1)

    def _write_footer(self, cursor: QTextCursor, index: int, regenerate: bool) -> int:
        """Write the footer of message `index` at the cursor, and the context divider if it
        follows that message; return where the footer's block starts."""
        message = self._messages[index]
        note = stats_text(message.stats, message.status) if message.role == "assistant" else ""
        self._writer.footer(cursor, footer_parts(message, index, regenerate), note, indent=message.role == "user",
                            message_id=message.id)
        position = cursor.block().position()
        self._regenerate_footer = position if regenerate else None
        if self._boundary is not None and message.id == self._boundary[0]:
            self._writer.divider(cursor, _divider_text(self._boundary[1]))
        return position

    def _top_of(self, label: QTextBlock) -> float:
        """Where the message whose label this is starts in the document: the top of the
        user's bubble it is in, else its label's."""
        layout = self._document.documentLayout()
        frame = QTextCursor(label).currentFrame()
        if frame is not None and frame != self._document.rootFrame():
            return layout.frameBoundingRect(frame).top()
        return layout.blockBoundingRect(label).top()

    def _pages_back_to(self, index: int) -> int:
        """The oldest message to render for message `index` to be rendered: whole pages, as
        "Show earlier messages" renders them."""
        first = self._first_shown
        while index < first:
            first = _first_to_show(self._messages[:first])
        return first

    def _moved(self, at: int, delta: int) -> None:
        """The document gained (or lost) `delta` characters at `at`: positions kept after it move."""
        if self._regenerate_footer is not None and self._regenerate_footer >= at:
            self._regenerate_footer += delta
        if self._last_body is not None and self._last_body[0] >= at:
            self._last_body = (self._last_body[0] + delta, self._last_body[1] + delta)
        if self._reply is not None and self._reply.start >= at:
            self._reply.shift(delta)
        self._mark.clear()

    @contextmanager
    def _view_kept(self) -> Iterator[None]:
        """Keep what the user is reading where it is on screen while the document changes
        above it (or at the bottom, when the pane follows the end). A cursor at the block at
        the top of the pane moves with the edits, as cursors do."""
        bar = self._browser.verticalScrollBar()
        layout = self._document.documentLayout()
        top = QTextCursor(self._browser.cursorForPosition(QPoint(0, 0)).block())
        offset = layout.blockBoundingRect(top.block()).top() - bar.value()
        yield
        if self._follower.following:
            self._follower.follow()
        else:
            bar.setValue(int(layout.blockBoundingRect(top.block()).top() - offset))

    def _drop_regenerate(self) -> None:
        """Only the last reply offers Regenerate: rewrite its footer before anything follows."""
        if self._regenerate_footer is None:
            return
        cursor = end_of(self._document)
        cursor.setPosition(self._regenerate_footer)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._write_footer(cursor, len(self._messages) - 1, regenerate=False)

    # -- events --------------------------------------------------------------------------------

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._writer = self._new_writer()
            self._rebuild_in_place()
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
            self._open_editor(int(argument))
        elif action == "regenerate":
            self.regenerateRequested.emit()
        elif action in ("previous-version", "next-version") and argument.isdigit():
            self._step_version(int(argument), -1 if action == "previous-version" else 1)
        elif action == "branch" and argument.isdigit():
            self.branchRequested.emit(int(argument))
        elif action == "delete-version" and argument.isdigit():
            self.deleteVersionRequested.emit(int(argument))
        elif action == "show-earlier":
            self.show_earlier()
        elif action == "get-models":
            self.getModelsRequested.emit()
        elif action == "prompt" and self._welcome_shown and argument.isdigit():
            prompts = self._welcome.prompts()
            if int(argument) < len(prompts):
                self.promptChosen.emit(prompts[int(argument)])

    # -- versions ------------------------------------------------------------------------------

    def _step_version(self, message_id: int, step: int) -> None:
        """‹ or › under a message: ask the window for the other version, remembering where the
        message stood so that set_messages (called while the signal is answered) keeps it there."""
        index = next((i for i, m in enumerate(self._messages) if m.id == message_id), None)
        if index is None:
            return
        first = index == 0 and not self._earlier
        after = self._messages[index - 1].id if index else None
        label = find_block(self._document, MESSAGE_START, message_id)
        label_y = self._top_of(label) - self._browser.verticalScrollBar().value() if label.isValid() else None
        keyboard = self._link_focus.marked_href() in (action_href("previous-version", message_id),
                                                      action_href("next-version", message_id))
        self._stepping = _Step(first, after, step, label_y, keyboard and self._browser.hasFocus())
        try:
            self.versionStepped.emit(message_id, step)
        finally:
            self._stepping = None

    def _after_step(self, index: int, step: _Step) -> None:
        """The other version is shown, as message `index`: keep it where the one stepped from
        stood, the keyboard on the same arrow (or the other, at an end), and say which it is."""
        message = self._messages[index]
        label = find_block(self._document, MESSAGE_START, message.id)
        if label.isValid():
            y = step.label_y if step.label_y is not None and step.label_y > 0 else _REVEAL_MARGIN_PX
            self._browser.verticalScrollBar().setValue(int(self._top_of(label) - y))
            if step.keyboard:
                arrows = ["previous-version", "next-version"]
                if step.step > 0:
                    arrows.reverse()  # the arrow it was on, else (at an end) the other one
                if not self._link_focus.mark(action_href(arrows[0], message.id), label.position()):
                    self._link_focus.mark(action_href(arrows[1], message.id), label.position())
        announce(self._browser, version_words(message))

    # -- the welcome and the editor ------------------------------------------------------------

    def _leave_welcome(self) -> None:
        """Clear the welcome before the conversation's first message is written."""
        if self._welcome_shown:
            self._welcome_shown = False
            self._document.clear()
            self._browser.fit_column()

    def _open_editor(self, message_id: int) -> None:
        """Edit was clicked under the user message with this id: open an editor in its place."""
        shown = self._messages[self._first_shown:]
        message = next((m for m in shown if m.id == message_id and m.role == "user"), None)
        if message is None:
            return
        if self._editor is not None and self._editor.message_id == message_id:
            self._editor.editor.box.setFocus()
            return
        self._close_editor(rebuild=False)
        self._editor = EditorOverlay(self._browser, message_id, message.content)
        self._editor.editor.submitted.connect(lambda text: self.editSubmitted.emit(message_id, text))
        self._editor.editor.cancelled.connect(self._cancel_edit)
        self._rebuild_in_place()
        self._editor.scroll_into_view()
        self._editor.editor.box.setFocus()

    def _cancel_edit(self) -> None:
        self._close_editor()
        self._browser.setFocus()

    def _close_editor(self, rebuild: bool = True) -> None:
        """Take the editor away; with `rebuild`, write its message again in place of its gap."""
        if self._editor is None:
            return
        self._editor.close()
        self._editor = None
        if rebuild:
            self._rebuild_in_place()

    def _rebuild_in_place(self) -> None:
        """Render again, keeping the pane scrolled where it was (or following the stream)."""
        bar = self._browser.verticalScrollBar()
        value, following = bar.value(), self._follower.following
        self._rebuild()
        if following:
            self._follower.follow()
        else:
            bar.setValue(value)

    def _copy(self, text: str, what: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(what)
