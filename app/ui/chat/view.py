"""The chat pane: a conversation as one rich-text document, with a reply streaming in at the end.

One QTextBrowser holds every message, so text can be selected across messages and the pane
scrolls as a whole. ChatView is what the window calls and listens to; it composes the parts
that each do one job, handing each what it needs:

    paging.Pages                which messages are handed over, and which are rendered
    transcript.Transcript       writes them into the document (footers, the context divider,
                                the welcome, the gap an editor lies over)
    reply_lifecycle             the streaming reply, from begin_reply to finish_reply
    version_steps.VersionSteps  ‹ n/m ›: the message stepped to keeps its place
    editing.MessageEditing      Edit under a message: an editor in its place
    link_routing.LinkRouter     which link was clicked (Qt never follows one)
    link_focus, reveal_mark     the keyboard's link told to a screen reader; a search hit marked
    images.in_transcript        a message's images as thumbnails, opened larger from there
    tool_calls.LiveToolCards    the calls of the agent loop as live cards under their reply

The view decides when each acts: what is written again after what, where the pane scrolls,
what assistive technology is told. reveal() scrolls to a message (a search hit), rendering the
pages before it if need be, and marks it a moment.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QEvent, QUrl, Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ...conversation.history import ContextBoundary
from ...engine.types import ReplyStats, ReplyStatus
from ...images.image import ImageError
from ...store import StoreError, shorten
from ...tool_servers.approval import PendingCall
from ..dialogs.image_view import ImageViewDialog
from ..widgets.announce import announce
from ..widgets.plain_message import tell
from ..widgets.thumbnails import image_words
from .browser import (
    DOCUMENT_MARGIN,
    MESSAGE_TOP_MARGIN_PX,
    BottomFollower,
    ChatBrowser,
    reading_place_kept,
    scroll_kept,
)
from .document import MESSAGE_END, MESSAGE_START, end_of, find_block, text_between
from .editing import MessageEditing
from .images.in_transcript import ImageReader, TranscriptImages
from .link_focus import LinkFocus
from .link_routing import LinkRouter
from .message_view import MessageView, stats_text
from .paging import Pages
from .reply_lifecycle import ReplyLifecycle
from .reveal_mark import RevealMark
from .theme import ChatTheme
from .tool_calls.live import LiveToolCards
from .tool_card import ToolCallCard
from .transcript import Transcript
from .version_steps import VersionSteps
from .welcome import Welcome

__all__ = ["ChatView", "MessageView", "stats_text"]


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
        sourceOpened(int, int): source n (1-based) under a reply was clicked: of the question
            (user message) with this id; the window opens its file.

    A reply's lifecycle: begin_reply(), append_text() per chunk (cheap: buffered), then
    finish_reply() with the authoritative text.

    After set_messages the window may call set_context_boundary (set_messages clears it), and
    reveal() to bring a message into view (a search hit).

    The agent loop's calls: show_tool_call() once the reply that wrote them has finished, one
    live card per call below it (the window answers each card's signals); a reply begun after
    them comes below them. They stay through every rendering afresh until clear_tool_cards(),
    which the window calls when it shows the conversation again from the store.
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
    sourceOpened = Signal(int, int)

    def __init__(self, parent: QWidget | None = None, *, read_image: ImageReader | None = None) -> None:
        """`read_image`: a message's image from the store, for its thumbnail and larger view
        (None: images are said to be missing)."""
        super().__init__(parent)
        self._read_image = read_image
        self._browser = ChatBrowser(self)
        self._document = self._browser.document()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._browser)
        self._reply = ReplyLifecycle(self._browser, self)
        links = LinkRouter(self._browser)
        self._follower = BottomFollower(self._browser.verticalScrollBar())
        self._link_focus = LinkFocus(self._browser)
        self._mark = RevealMark(self._browser)
        self._pages = Pages()
        self._editing = MessageEditing(self._browser, self._pages)
        self._steps = VersionSteps(self._browser, self._pages, self._link_focus)
        theme = ChatTheme.from_palette(self.palette())
        images = TranscriptImages(self._document, read_image, self._browser.devicePixelRatioF)
        self._transcript = Transcript(self._browser, self._pages, self._editing, theme, images)
        self._cards = LiveToolCards(self._browser)
        self._reply.set_colours(theme.muted, self.palette().color(QPalette.ColorRole.Base))
        links.webLinkClicked.connect(self.linkActivated)
        links.codeCopyClicked.connect(self._copy_code)
        links.messageCopyClicked.connect(self._copy_message)
        links.editClicked.connect(self._editing.open)
        links.regenerateClicked.connect(self.regenerateRequested)
        links.versionStepClicked.connect(self._steps.step)
        links.branchClicked.connect(self.branchRequested)
        links.deleteVersionClicked.connect(self.deleteVersionRequested)
        links.showEarlierClicked.connect(self.show_earlier)
        links.getModelsClicked.connect(self.getModelsRequested)
        links.promptClicked.connect(self._choose_prompt)
        links.resultExpandClicked.connect(self._show_whole_result)
        links.sourceClicked.connect(self.sourceOpened)
        links.imageClicked.connect(self.open_image)
        self._editing.submitted.connect(self.editSubmitted)
        self._editing.rewriteNeeded.connect(self._rebuild_in_place)
        self._steps.versionStepped.connect(self.versionStepped)

    # -- the window's API --------------------------------------------------------------------

    def set_messages(self, messages: list[MessageView], earlier: int = 0) -> None:
        """Show a conversation, replacing what was shown (a streaming reply included):
        messages are its newest, and `earlier` older ones exist that the view may ask for."""
        self._reply.drop()
        self._editing.close(rewrite=False)  # all is rendered afresh below
        self._transcript.boundary = None
        self._pages.replace(messages, earlier)
        stepped = self._steps.stepped_index()
        if stepped is None:
            self._rebuild()
            self._follower.follow()
            return
        self._pages.show_back_to(stepped)
        self._rebuild()
        self._steps.settle(stepped)

    def prepend_messages(self, messages: list[MessageView], earlier: int) -> None:
        """Older messages the window handed over after earlierRequested, and how many older
        ones still remain; shows the page before the oldest one shown."""
        self._pages.prepend(messages, earlier)
        self.show_earlier()

    def add_message(self, message: MessageView) -> None:
        """Append one finished message, e.g. the one the user just sent; scroll to it."""
        if self._reply.is_streaming():
            raise RuntimeError("a reply is streaming: finish it before adding a message")
        self._transcript.leave_welcome()
        self._transcript.drop_regenerate()
        self._pages.append(message)
        self._transcript.write_message(self._pages.last_index(), regenerate=message.role == "assistant")
        self._follower.follow()

    def begin_reply(
        self, message_id: int | None, model: str | None = None, version: int = 1, versions: int = 1,
    ) -> None:
        """Start a streaming assistant reply at the bottom; it is `version` of `versions`
        (a regenerated reply is a new version), offered under it when it finishes."""
        if self._reply.is_streaming():
            raise RuntimeError("a reply is already streaming")
        self._transcript.leave_welcome()
        self._transcript.drop_regenerate()
        self._reply.begin(self._transcript.writer, message_id, model, version, versions)
        self._follower.follow()

    def show_prompt_progress(self, done: int, total: int) -> None:
        """Say how far the model has read a long prompt, where its reply will appear, until
        the reply's first text replaces it."""
        self._reply.show_progress(done, total)

    def append_text(self, text: str) -> None:
        """Add a chunk of the streaming reply (ignored when none is streaming, e.g. a late
        chunk after set_messages switched conversations)."""
        self._reply.append(text)

    def finish_reply(self, content: str, stats: ReplyStats | None, status: ReplyStatus) -> None:
        """End the streaming reply: show `content` (the authoritative text) and its stats.

        When content is what was streamed, only the unrendered tail is rendered now; otherwise
        (an edited or trimmed text) the reply is rendered again from content.
        """
        ended = self._reply.end(content, stats, status)
        if ended is None:
            return
        self._pages.append(ended.message)
        self._transcript.write_finished_reply(ended.streamed, ended.rendered_in_place)

    def set_sources(self, message_id: int, sources: tuple) -> None:
        """The user message with this id was given these sources (found after it was shown):
        the reply under it lists them when it is written."""
        index = self._pages.index_of(message_id)
        if index is not None:
            self._pages.messages[index] = replace(self._pages.messages[index], sources=tuple(sources))

    def set_welcome(self, welcome: Welcome | None) -> None:
        """What an empty chat says of the model (None: nothing); shown whenever the
        conversation has no messages."""
        self._transcript.set_welcome(welcome)
        if not self._pages.messages and not self._reply.is_streaming():
            self._rebuild()

    def announce_error(self, message: str) -> None:
        """Have assistive technology say an error at once, e.g. a reply that could not start."""
        announce(self._browser, message, urgent=True)

    def is_streaming(self) -> bool:
        """Whether a reply has begun and not yet finished."""
        return self._reply.is_streaming()

    def column_width(self) -> int:
        """The widest the message column grows, document margins included: the window keeps
        the model selector and the message box to it."""
        return self._browser.reading_width() + 2 * DOCUMENT_MARGIN

    def is_following(self) -> bool:
        """Whether the view stays scrolled to the bottom as content arrives."""
        return self._follower.following

    def text_of_reply(self) -> str:
        """The shown text of the streaming reply, or of the last one finished."""
        if (start := self._reply.body_start()) is not None:
            span = (start, end_of(self._document).position())
        elif (last := self._transcript.last_reply_span()) is not None:
            span = last
        else:
            return ""
        return text_between(self._document, *span)

    def oldest_message_id(self) -> int | None:
        """The id of the oldest message handed over (older ones are asked for before it)."""
        return self._pages.oldest_id()

    def hidden_count(self) -> int:
        """How many older messages wait behind "Show earlier messages"."""
        return self._pages.hidden_count()

    def show_earlier(self) -> None:
        """Render one more page of older messages, keeping in view the oldest one shown before."""
        anchor = self._pages.turn_back()
        if anchor is None:
            if self._pages.earlier:
                self.earlierRequested.emit()
            return
        starts = self._rebuild()
        block = self._document.findBlock(starts[anchor])
        top = self._document.documentLayout().blockBoundingRect(block).top()
        self._browser.verticalScrollBar().setValue(int(top))

    def set_context_boundary(self, message_id: int | None, unseen: int = 0) -> None:
        """Draw a line after the message with this id: "The model did not see the `unseen`
        messages above this line" (None: no line). It moves when called again, stays through
        every rendering afresh, and waits while that message is not rendered (behind "Show
        earlier messages"). set_messages clears it."""
        boundary = None if message_id is None else ContextBoundary(message_id, unseen)
        if boundary == self._transcript.boundary:
            return
        self._transcript.boundary = boundary
        if self._editing.is_open():  # it lies over a gap at a position: render it all again
            self._rebuild_in_place()
            return
        with reading_place_kept(self._browser, self._follower):
            for at, delta in self._transcript.redraw_divider():
                self._reply.moved(at, delta)
                self._mark.clear()

    def reveal(self, message_id: int) -> bool:
        """Scroll the message with this id into view, rendering the pages before it if it
        waits behind "Show earlier messages", and mark it a moment so the eye finds it (a
        search hit); a screen reader is told. False if it is not among those handed over."""
        index = self._pages.index_of(message_id)
        if index is None:
            return False
        if index < self._pages.first_shown:
            self._pages.show_back_to(index)
            self._rebuild()
        label = find_block(self._document, MESSAGE_START, message_id)
        if not label.isValid():
            return False
        self._browser.verticalScrollBar().setValue(int(self._browser.message_top(label)) - MESSAGE_TOP_MARGIN_PX)
        footer = find_block(self._document, MESSAGE_END, message_id)
        end = footer.position() - 1 if footer.isValid() else label.position() + label.length() - 1
        self._mark.show(label.position(), end)
        message = self._pages.messages[index]
        who = {"user": "your message", "system": "the system prompt", "tool": "a tool's result"}.get(
            message.role, "a reply")
        announce(self._browser, f"Found in {who}: {shorten(message.content)}")
        return True

    def show_tool_call(self, pending: PendingCall, awaiting: bool = True) -> ToolCallCard:
        """A live card for a call the model wrote, at the end of the transcript below its reply:
        asking the user (it takes the keyboard unless an earlier card still asks), or with
        `awaiting` False already running (a tool the user always allows). A reply whose calls
        are under way offers no Regenerate."""
        if self._reply.is_streaming():
            raise RuntimeError("a reply is streaming: finish it before showing its calls")
        self._transcript.drop_regenerate()
        anchor = self._pages.messages[-1].id if self._pages.messages else None
        card, changes = self._cards.add(pending, anchor, awaiting)
        self._moved(changes)
        return card

    def tool_card(self, call_id: str) -> ToolCallCard | None:
        """The live card of the call with this id, if it is shown."""
        return self._cards.card(call_id)

    def tool_cards(self) -> list[ToolCallCard]:
        """The live cards, oldest first."""
        return self._cards.cards()

    def has_tool_cards(self) -> bool:
        return bool(self._cards.cards())

    def clear_tool_cards(self) -> None:
        """Take the live cards away (the conversation is about to be shown from the store, where
        the calls and results are kept)."""
        self._moved(self._cards.clear())

    @property
    def flush_count(self) -> int:
        """Document updates made by the streaming reply so far (for tests and benchmarks)."""
        return self._reply.flush_count()

    @property
    def text_waiting(self) -> bool:
        """Whether the streaming reply holds text not written yet (for tests)."""
        return self._reply.text_waiting()

    def flush_now(self) -> None:
        """Write buffered chunks without waiting for the timer (benchmarks time one update)."""
        self._reply.flush_now()

    # -- rendering -----------------------------------------------------------------------------

    def _restyle(self) -> None:
        """Take the colours of the pane's new palette (the transcript's, the "Generating" line's)."""
        theme = ChatTheme.from_palette(self.palette())
        self._reply.set_colours(theme.muted, self.palette().color(QPalette.ColorRole.Base))
        self._transcript.set_theme(theme)

    def _rebuild(self) -> dict[int, int]:
        """Render the shown messages again (a new conversation, a new palette, or all of it),
        the streaming reply after them as far as it got, the editor over its gap.

        Returns where each message starts in the document, by index.
        """
        self._mark.clear()
        starts = self._transcript.render(streaming=self._reply.is_streaming())
        if self._cards:
            self._transcript.drop_regenerate()
            self._moved(self._cards.write_gaps())
        self._reply.write_again(self._transcript.writer)
        self._editing.place()
        self._cards.place()
        return starts

    def _moved(self, changes: list[tuple[int, int]]) -> None:
        """The document gained or lost characters at these places, in this order (live cards'
        gaps): the positions the transcript and the streaming reply keep move with them."""
        for at, delta in changes:
            self._transcript.moved(at, delta)
            self._reply.moved(at, delta)
            self._mark.clear()

    def _rebuild_in_place(self) -> None:
        """Render again, keeping the pane scrolled where it was (or following the stream)."""
        with scroll_kept(self._browser, self._follower):
            self._rebuild()

    # -- events --------------------------------------------------------------------------------

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._restyle()
            self._rebuild_in_place()
        super().changeEvent(event)

    def _copy_code(self, href: str) -> None:
        if (code := self._transcript.code_of(href)) is not None:
            self._copy(code, "Code copied")

    def _copy_message(self, index: int) -> None:
        if index < len(self._pages.messages):
            self._copy(self._pages.messages[index].content, "Message copied")

    def _show_whole_result(self, message_id: int) -> None:
        """"Show all" (or "Show less") under a tool's result: written again in place."""
        if self._transcript.expand_result(message_id):
            self._rebuild_in_place()

    def open_image(self, message_id: int, number: int) -> None:
        """Image `number` (1-based) of the message with this id, larger (the dialog's Esc brings
        the keyboard back here); said in a message box when it cannot be read."""
        index = self._pages.index_of(message_id)
        images = self._pages.messages[index].images if index is not None else ()
        if not 1 <= number <= len(images) or self._read_image is None:
            return
        words = image_words(number, len(images), images[number - 1])
        try:
            image = self._read_image(images[number - 1])
        except (ImageError, StoreError) as exc:
            tell(self, words, f"The image could not be opened: {exc}", warning=True)
            return
        ImageViewDialog.open_for(image, words, self)

    def _choose_prompt(self, index: int) -> None:
        if (prompt := self._transcript.prompt(index)) is not None:
            self.promptChosen.emit(prompt)

    def _copy(self, text: str, what: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(what)
