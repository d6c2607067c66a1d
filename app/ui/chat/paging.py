"""Which of a conversation's messages the chat pane renders: its newest page, and older pages
on demand.

Markdown and syntax highlighting cost about 8 ms a message, so rendering hundreds of them up
front froze the window for seconds. A conversation opens on its newest messages, about
HISTORY_SHOWN_CHARS of them and at most HISTORY_SHOWN_MESSAGES; "Show earlier messages" renders
the page before them. The window may hand over only the newest messages of a conversation (it
can hold a hundred thousand); the pane asks it for older ones once every message handed over is
shown. The constants are read at each call (a benchmark renders everything at once by raising
HISTORY_SHOWN_CHARS here).
"""

from __future__ import annotations

from .message_view import MessageView

# Characters of message text rendered when a conversation opens (about 3,000 tokens, several
# screens); older messages wait behind "Show earlier messages", a page of this size per click.
# A page holds at least two messages, however long.
HISTORY_SHOWN_CHARS = 12_000
# ... and at most this many messages: a page of a thousand one-word messages took seconds.
HISTORY_SHOWN_MESSAGES = 40


def first_to_show(messages: list[MessageView]) -> int:
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


class Pages:
    """The messages handed over to the pane (oldest first), from which one it renders them,
    and how many older ones the window still holds back.

    `messages` is read by every part of the pane that writes or finds a message; only the
    methods here change it.
    """

    def __init__(self) -> None:
        self.messages: list[MessageView] = []
        self.first_shown = 0  # index of the oldest message rendered; older ones wait
        self.earlier = 0  # older messages the window has not handed over

    def replace(self, messages: list[MessageView], earlier: int) -> None:
        """A conversation shown afresh: its newest page is rendered."""
        self.messages = list(messages)
        self.earlier = earlier
        self.first_shown = first_to_show(self.messages)

    def prepend(self, messages: list[MessageView], earlier: int) -> None:
        """Older messages handed over, before those held; what is rendered stays as it was."""
        self.messages[:0] = messages
        self.first_shown += len(messages)
        self.earlier = earlier

    def append(self, message: MessageView) -> None:
        self.messages.append(message)

    def last_index(self) -> int:
        return len(self.messages) - 1

    def index_of(self, message_id: int) -> int | None:
        """Where the message with this id is among those handed over, or None."""
        return next((i for i, m in enumerate(self.messages) if m.id == message_id), None)

    def shown(self) -> list[MessageView]:
        """The messages rendered, oldest first."""
        return self.messages[self.first_shown:]

    def hidden_count(self) -> int:
        """How many older messages wait behind "Show earlier messages"."""
        return self.first_shown + self.earlier

    def oldest_id(self) -> int | None:
        """The id of the oldest message handed over (older ones are asked for before it)."""
        return self.messages[0].id if self.messages else None

    def turn_back(self) -> int | None:
        """Render one more page of older messages; return the index of the message that was
        the oldest rendered, or None when every message handed over is rendered already."""
        if not self.first_shown:
            return None
        anchor = self.first_shown
        self.first_shown = first_to_show(self.messages[:anchor])
        return anchor

    def show_back_to(self, index: int) -> None:
        """Render whole pages, as "Show earlier messages" does, until message `index` is one."""
        first = self.first_shown
        while index < first:
            first = first_to_show(self.messages[:first])
        self.first_shown = first
