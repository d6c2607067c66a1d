"""The transcript: the messages the pane renders, written into its document as the window
shows them, with what goes around them.

Each message is a label, its Markdown text and a footer of links (message_footer); only the
last reply offers Regenerate, so its footer is written again when anything follows it. Above
the oldest message rendered, a link says how many earlier ones wait (paging). A line drawn
after a message marks the context boundary: the model did not see what is above it. An empty
chat shows a welcome instead. A user message being edited leaves a gap for the editor in
place of its text and footer (editing). A reply's tool calls are small blocks under its text,
and a tool's result a block of its own with no label (tool_calls/stored.py), its first lines
until "Show all" (expand_result). A user message's images are thumbnails in its bubble, before
its text (images/in_transcript.py).

A message longer than MESSAGE_SHOWN_CHARS shows its beginning and says so; Copy gives all of it.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetricsF, QTextBlockFormat, QTextCharFormat, QTextCursor

from ...conversation.history import ContextBoundary
from ...store import ToolResult, shorten
from .browser import ChatBrowser
from .document import MESSAGE_END, DocumentWriter, FooterPart, end_of, find_block, remove_divider
from .documents.sources_block import SourcesBlock
from .editing import MessageEditing
from .images.in_transcript import TranscriptImages
from .markdown_render import MarkdownRenderer
from .message_footer import ACTION_SCHEME, action_href, footer_parts
from .message_view import stats_text
from .paging import Pages
from .streaming_reply import StreamingReply
from .theme import ChatTheme
from .tool_calls.stored import ToolBlocks
from .welcome import Welcome, write_welcome

# A message's text shown, at most (some 25,000 tokens): laying out a megabyte takes Qt a second.
MESSAGE_SHOWN_CHARS = 100_000


def shown_text(content: str) -> str:
    """content as the pane renders it: the beginning of a very long message, saying so."""
    if len(content) <= MESSAGE_SHOWN_CHARS:
        return content
    return (f"{content[:MESSAGE_SHOWN_CHARS]}\n\n*[The message goes on for {len(content) - MESSAGE_SHOWN_CHARS:,} "
            "more characters, not shown here: Copy or export it to read all of it.]*")


def divider_text(unseen: int) -> str:
    if unseen == 1:
        return "The model did not see the message above this line"
    if unseen > 1:
        return f"The model did not see the {unseen:,} messages above this line"
    return "The model did not see the messages above this line"


class Transcript:
    """Writes the rendered messages of `pages` into `browser`'s document.

    It keeps where the footer offering Regenerate and the last finished reply's text are in
    the document, and moves them when text is put in or taken out before them (moved). The
    context boundary (`boundary`) is drawn whenever its message's footer is written.
    """

    def __init__(self, browser: ChatBrowser, pages: Pages, editing: MessageEditing, theme: ChatTheme,
                 images: TranscriptImages) -> None:
        self._browser = browser
        self._images = images
        self._document = browser.document()
        self._pages = pages
        self._editing = editing
        self.boundary: ContextBoundary | None = None
        self._snippets: dict[str, str] = {}  # href of a code block's Copy link -> its code
        self._regenerate_footer: int | None = None  # position of the footer offering Regenerate
        self._last_body: tuple[int, int] | None = None  # the last finished reply's body span
        self._welcome: Welcome | None = None
        self._welcome_shown = False
        self._whole_results: set[int] = set()  # tool results shown whole ("Show all"), by message id
        self.writer = self._writer_for(theme)
        self._tools = ToolBlocks(theme)
        self._sources = SourcesBlock(theme)

    def set_theme(self, theme: ChatTheme) -> None:
        """Write in these colours from now on (the pane's palette changed): render() again."""
        self.writer = self._writer_for(theme)
        self._tools = ToolBlocks(theme)
        self._sources = SourcesBlock(theme)

    def expand_result(self, message_id: int) -> bool:
        """"Show all" (or "Show less") under the tool result with this id: from the next
        render() on it is shown whole (or its first lines again). False if no such result is shown."""
        if not any(m.id == message_id and m.role == "tool" for m in self._pages.shown()):
            return False
        self._whole_results ^= {message_id}
        return True

    def render(self, streaming: bool) -> dict[int, int]:
        """Write the rendered messages afresh (a new conversation, a new palette, or all of
        it), or the welcome if there are none and no reply is `streaming` (the reply is then
        written again after them).

        Returns where each message starts in the document, by index.
        """
        pages = self._pages
        self._document.clear()
        self._browser.fit_column()
        self._snippets.clear()
        self._regenerate_footer = self._last_body = None
        self._welcome_shown = not pages.messages and not streaming and self._welcome is not None
        if self._welcome_shown:
            write_welcome(self._document, self._welcome, self.writer.theme)
        if pages.hidden_count():
            count = pages.hidden_count()
            link = f"Show {count} earlier message{'s' if count != 1 else ''}"
            show = [FooterPart(link, action_href("show-earlier"))]
            self.writer.footer(end_of(self._document), show, "", indent=False)
        starts = {}
        for index in range(pages.first_shown, len(pages.messages)):
            is_last = index == len(pages.messages) - 1
            starts[index] = end_of(self._document).position()
            message = pages.messages[index]
            self.write_message(index, regenerate=is_last and message.role == "assistant" and not streaming)
        return starts

    def write_message(self, index: int, regenerate: bool) -> None:
        """Write message `index` of those handed over at the end of the document; with
        `regenerate`, its footer offers Regenerate."""
        message = self._pages.messages[index]
        cursor = end_of(self._document)
        writer = self.writer
        if message.role == "user":
            writer.bubble(cursor)
            writer.label(cursor, "You", top_margin=0, message_id=message.id)
            if message.images:
                room = QTextBlockFormat()
                room.setBottomMargin(6)
                self._images.write(cursor, message.id, message.images, room, writer.note_format())
            if (overlay := self._editing.overlay_for(message.id)) is not None:
                # The editor lies over a gap where the text was, in place of the text and footer.
                writer.new_block(cursor, overlay.gap_format(), QTextCharFormat())
                overlay.set_gap(cursor.block().position())
                return
        elif message.role == "tool":
            # A call's result: a block under the call, not a message of its own, nor Markdown.
            result = message.tool_result or ToolResult("", "a tool", message.content)
            self._tools.result(cursor, message.id, result, message.id in self._whole_results)
            self._write_footer(cursor, index, regenerate)
            return
        else:
            label = {"system": "System prompt"}.get(message.role) or message.model or "Assistant"
            writer.label(cursor, shorten(label), top_margin=16, message_id=message.id)
        if message.content or not (message.tool_calls or message.images):
            body_start = writer.markdown(cursor, shown_text(message.content))
        else:
            body_start = cursor.position()
        cursor.movePosition(QTextCursor.MoveOperation.End)  # out of the user's bubble
        for call in message.tool_calls:
            self._tools.call(cursor, call)
        self._write_sources(cursor, index)
        footer = self._write_footer(cursor, index, regenerate)
        if message.role == "assistant":
            self._last_body = (body_start, footer - 1)

    def write_finished_reply(self, streamed: StreamingReply, rendered_in_place: bool) -> None:
        """The last message handed over is the reply that was `streamed`: write its footer
        under it if its text was rendered where it stood, else write it again from its content."""
        index = self._pages.last_index()
        if rendered_in_place:
            self._write_sources(end_of(self._document), index)
            footer = self._write_footer(end_of(self._document), index, regenerate=True)
            self._last_body = (streamed.body_start, footer - 1)
            return
        cursor = end_of(self._document)
        cursor.setPosition(streamed.start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self.write_message(index, regenerate=True)

    def drop_regenerate(self) -> None:
        """Only the last reply offers Regenerate: rewrite its footer before anything follows."""
        if self._regenerate_footer is None:
            return
        cursor = end_of(self._document)
        cursor.setPosition(self._regenerate_footer)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._write_footer(cursor, self._pages.last_index(), regenerate=False)

    def redraw_divider(self) -> list[tuple[int, int]]:
        """Take the context divider away and draw it after `boundary`'s message, if that is
        rendered; return each change made to the document as (where, characters gained or
        lost), in order. The transcript's own positions have moved with them already."""
        changes = []
        removed = remove_divider(self._document)
        if removed is not None:
            changes.append((removed[0], -removed[1]))
            self.moved(*changes[-1])
        boundary = self.boundary
        footer = find_block(self._document, MESSAGE_END, boundary.message_id, backwards=True) if boundary else None
        if footer is not None and footer.isValid():
            cursor = QTextCursor(footer)
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
            start = cursor.position()
            self.writer.divider(cursor, divider_text(boundary.unseen))
            changes.append((start, cursor.position() - start))
            self.moved(*changes[-1])
        return changes

    def moved(self, at: int, delta: int) -> None:
        """The document gained (or lost) `delta` characters at `at`: positions kept after it move."""
        if self._regenerate_footer is not None and self._regenerate_footer >= at:
            self._regenerate_footer += delta
        if self._last_body is not None and self._last_body[0] >= at:
            self._last_body = (self._last_body[0] + delta, self._last_body[1] + delta)

    def last_reply_span(self) -> tuple[int, int] | None:
        """Where the last finished reply's text is in the document (first and last position)."""
        return self._last_body

    def code_of(self, href: str) -> str | None:
        """The code of the code block whose Copy link has this href."""
        return self._snippets.get(href)

    def set_welcome(self, welcome: Welcome | None) -> None:
        """What an empty chat says of the model, from the next render() on."""
        self._welcome = welcome

    def leave_welcome(self) -> None:
        """Clear the welcome before the conversation's first message is written."""
        if self._welcome_shown:
            self._welcome_shown = False
            self._document.clear()
            self._browser.fit_column()

    def prompt(self, index: int) -> str | None:
        """The welcome's example prompt at this index, if the welcome is shown and has one."""
        if not self._welcome_shown:
            return None
        prompts = self._welcome.prompts()
        return prompts[index] if index < len(prompts) else None

    def _write_sources(self, cursor: QTextCursor, index: int) -> None:
        """Under a reply, the sources its question was given (the user message before it): under
        the turn's last reply only, where a turn with tool calls has several."""
        messages = self._pages.messages
        if messages[index].role != "assistant" or (index + 1 < len(messages) and messages[index + 1].role != "user"):
            return
        question = next((message for message in reversed(self._pages.messages[:index]) if message.role == "user"), None)
        if question is not None and question.id is not None and question.sources:
            self._sources.write(cursor, question.id, question.sources)

    def _write_footer(self, cursor: QTextCursor, index: int, regenerate: bool) -> int:
        """Write the footer of message `index` at the cursor, and the context divider if it
        follows that message; return where the footer's block starts."""
        message = self._pages.messages[index]
        note = stats_text(message.stats, message.status) if message.role == "assistant" else ""
        self.writer.footer(cursor, footer_parts(message, index, regenerate), note, indent=message.role == "user",
                           message_id=message.id)
        position = cursor.block().position()
        self._regenerate_footer = position if regenerate else None
        if self.boundary is not None and message.id == self.boundary.message_id:
            self.writer.divider(cursor, divider_text(self.boundary.unseen))
        return position

    def _writer_for(self, theme: ChatTheme) -> DocumentWriter:
        code_font = QFont(self._browser.font())
        code_font.setFamilies([theme.render.mono_family, "monospace"])
        space_px = QFontMetricsF(code_font).horizontalAdvance(" ")
        return DocumentWriter(theme, MarkdownRenderer(theme.render, self._snippet_href), space_px)

    def _snippet_href(self, code: str) -> str:
        href = f"{ACTION_SCHEME}:copy-code/{len(self._snippets)}"
        self._snippets[href] = code
        return href

