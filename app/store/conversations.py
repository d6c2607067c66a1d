"""The conversation store: every conversation and message Hearth keeps, in one SQLite file.

Nothing is lost: a reply is saved while it streams (status 'streaming', its text replaced by
update_partial() every half second or so), and every call commits before it returns. If Hearth
is killed mid-reply, the next start finds the reply as far as it got and marks it 'cancelled'
with the stop reason "interrupted".

Statistics and statuses come in and go out typed (`ReplyStats`, `ReplyStatus`); this package
is the only place they are turned into JSON and back.

Threads: the GUI calls the store from the GUI thread only. The connection keeps sqlite3's
check_same_thread default, so a call from another thread fails loudly instead of racing.
Hearth runs one instance at a time; a second one opening the same file would take the first
one's streaming reply for a crashed one.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from app.engine.text import shorten
from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store import exchange, search
from app.store.records import ROLES, STATUSES, Conversation, StoredMessage, StoreError, require_choice, utc_now
from app.store.schema import connect, database_error, transaction

TITLE_LENGTH = 40
SNIPPET_SHOWN_CHARS = 100  # a search hit's snippet, on one line


def auto_title(text: str, limit: int = TITLE_LENGTH) -> str:
    """A title from a first message: whitespace collapsed, cut at a word boundary near limit."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit + 1]
    boundary = cut.rfind(" ")
    # A boundary too near the start would leave a one-word title; cut mid-word instead.
    cut = cut[:boundary] if boundary > limit // 2 else text[:limit]
    return re.sub(r"[\s.,;:!?-]+$", "", cut) + "…"


@dataclass(frozen=True)
class MessagePage:
    """The newest messages of a conversation (or those before a position), oldest first, and
    how many older ones there are: a conversation may hold a hundred thousand."""

    messages: list[StoredMessage]
    earlier: int


def _reports_database_errors(cls):
    """Every public method of cls turns an SQLite error into a StoreError (DatabaseDamaged for
    damaged pages), so a damaged or full database is a message the window can show, whatever
    call meets it first, and never a traceback in a slot."""

    def guarded(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except sqlite3.DatabaseError as exc:
                raise database_error(self.path, exc) from exc

        return call

    for name, value in list(vars(cls).items()):
        if callable(value) and not name.startswith("_"):
            setattr(cls, name, guarded(value))
    return cls


@_reports_database_errors
class ConversationStore:
    """All reads and writes of conversations; one per database file, closed with close().

    Errors the user should see (unknown ids, newer databases, bad imports, damaged pages) are
    StoreError.
    """

    def __init__(self, path: str | os.PathLike, *, full_text_search: bool = True):
        """Open path, creating or upgrading it, and recover replies cut off by a crash.

        full_text_search=False searches with LIKE, as on an SQLite built without FTS5; the
        tests use it to cover that path.
        """
        self.path = Path(path)
        self._conn = connect(path)
        try:
            self.full_text_search = search.install(self._conn, full_text_search)
            self._recover_interrupted()
        except sqlite3.Error as exc:
            self._conn.close()
            raise database_error(path, exc) from exc

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "ConversationStore":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # Conversations

    def create_conversation(self, title: str = "", model: str | None = None, system_prompt: str = "") -> int:
        """A new, empty conversation; an empty title is filled in by the first user message."""
        now = utc_now()
        cursor = self._conn.execute(
            "INSERT INTO conversations (title, created_at, updated_at, model, system_prompt) VALUES (?, ?, ?, ?, ?)",
            (title, now, now, model, system_prompt),
        )
        return cursor.lastrowid

    def get_conversation(self, conversation_id: int) -> Conversation:
        """The conversation, also when it is in the trash (then deleted_at is set)."""
        row = self._conn.execute("SELECT * FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None:
            raise StoreError(f"There is no conversation {conversation_id}.")
        return Conversation.from_row(row)

    def list_conversations(self) -> list[Conversation]:
        """Conversations not in the trash, most recently active first."""
        rows = self._conn.execute(
            "SELECT * FROM conversations WHERE deleted_at IS NULL ORDER BY updated_at DESC, id DESC"
        )
        return [Conversation.from_row(row) for row in rows]

    def rename(self, conversation_id: int, title: str) -> None:
        """Renaming does not touch updated_at, so the conversation keeps its place in the list."""
        self._update_conversation(conversation_id, "title = ?", title)

    def set_system_prompt(self, conversation_id: int, system_prompt: str) -> None:
        self._update_conversation(conversation_id, "system_prompt = ?, updated_at = ?", system_prompt, utc_now())

    def delete(self, conversation_id: int) -> Conversation:
        """Move the conversation to the trash; the returned snapshot is what an Undo offers.

        Nothing is erased until purge_deleted(); restore(conversation.id) undoes this.
        Deleting twice keeps the first deletion time.
        """
        self._update_conversation(conversation_id, "deleted_at = COALESCE(deleted_at, ?)", utc_now())
        return self.get_conversation(conversation_id)

    def restore(self, conversation_id: int) -> None:
        """Take the conversation out of the trash (the Undo of delete)."""
        self._update_conversation(conversation_id, "deleted_at = NULL")

    def purge_deleted(self) -> int:
        """Erase everything in the trash, messages included; returns how many conversations."""
        return self._conn.execute("DELETE FROM conversations WHERE deleted_at IS NOT NULL").rowcount

    def search(self, text: str) -> list[Conversation]:
        """Conversations not in the trash whose title or one message contains every word of text,
        most recently active first. Blank text matches every conversation."""
        words = text.split()
        if not words:
            return self.list_conversations()
        return [Conversation.from_row(row) for row in search.find(self._conn, words, self.full_text_search)]

    def search_snippets(self, text: str, conversation_ids: list[int]) -> dict[int, str]:
        """What a search for text found in each of these conversations (search's results, the
        first ones a list shows): the words around the match in the newest message that has
        them all, on one line. A conversation found by its title alone has none."""
        words = text.split()
        if not words:
            return {}
        found = search.snippets(self._conn, words, self.full_text_search, conversation_ids)
        return {conversation_id: shorten(snippet, SNIPPET_SHOWN_CHARS) for conversation_id, snippet in found.items()}

    # Messages

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        """The conversation's messages in order (position 0 first)."""
        self.get_conversation(conversation_id)  # an unknown id is an error, not an empty list
        rows = self._conn.execute(
            "SELECT * FROM messages WHERE conversation_id = ? ORDER BY position", (conversation_id,)
        )
        return [StoredMessage.from_row(row) for row in rows]

    def recent_messages(self, conversation_id: int, limit: int, before: int | None = None) -> MessagePage:
        """The last `limit` messages, or the last `limit` before position `before`, in order;
        what a window shows first and then page by page."""
        self.get_conversation(conversation_id)
        end = before if before is not None else self._conn.execute(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()[0]
        rows = self._conn.execute(
            "SELECT * FROM messages WHERE conversation_id = ? AND position < ? ORDER BY position DESC LIMIT ?",
            (conversation_id, end, limit),
        ).fetchall()
        messages = [StoredMessage.from_row(row) for row in reversed(rows)]
        first = messages[0].position if messages else end
        earlier = self._conn.execute(
            "SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND position < ?", (conversation_id, first)
        ).fetchone()[0]
        return MessagePage(messages, earlier)

    def message(self, message_id: int) -> StoredMessage:
        row = self._conn.execute("SELECT * FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            raise StoreError(f"There is no message {message_id}.")
        return StoredMessage.from_row(row)

    def last_message(self, conversation_id: int, role: str) -> StoredMessage | None:
        """The conversation's last message with this role (the one Regenerate answers again)."""
        row = self._conn.execute(
            "SELECT * FROM messages WHERE conversation_id = ? AND role = ? ORDER BY position DESC LIMIT 1",
            (conversation_id, role),
        ).fetchone()
        return StoredMessage.from_row(row) if row is not None else None

    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        model: str | None = None,
        params: dict | None = None,
        status: ReplyStatus = ReplyStatus.COMPLETE,
    ) -> int:
        """Append a message and return its id.

        A reply about to stream is added with status='streaming' (usually empty content), then
        fed with update_partial() and closed with finish_message(). A model given here becomes
        the conversation's model; the first user message titles an untitled conversation.
        """
        require_choice("role", role, ROLES)
        require_choice("status", status, STATUSES)
        now = utc_now()
        with transaction(self._conn):
            conversation = self.get_conversation(conversation_id)
            position = self._conn.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()[0]
            cursor = self._conn.execute(
                "INSERT INTO messages (conversation_id, position, role, content, model, params_json, status,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, position, role, content, model, json.dumps(params or {}), str(status), now, now),
            )
            title = conversation.title
            if not title and role == "user":
                title = auto_title(content)
            self._conn.execute(
                "UPDATE conversations SET title = ?, model = COALESCE(?, model), updated_at = ? WHERE id = ?",
                (title, model, now, conversation_id),
            )
        return cursor.lastrowid

    def update_partial(self, message_id: int, content: str) -> None:
        """Save the text a streaming reply has so far: one UPDATE, one small commit.

        Raises StoreError if the message is not streaming, so that a late timer cannot
        overwrite a finished reply.
        """
        cursor = self._conn.execute(
            "UPDATE messages SET content = ?, updated_at = ? WHERE id = ? AND status = 'streaming'",
            (content, utc_now(), message_id),
        )
        if cursor.rowcount == 0:
            raise StoreError(f"Message {message_id} is not a streaming reply.")

    def finish_message(
        self, message_id: int, content: str, stats: ReplyStats | None = None,
        status: ReplyStatus = ReplyStatus.COMPLETE,
    ) -> None:
        """Close a streaming reply with its final text, the engine's stats and how it ended
        (complete, cancelled or error)."""
        require_choice("status", status, tuple(s for s in STATUSES if s != "streaming"))
        now = utc_now()
        with transaction(self._conn):
            cursor = self._conn.execute(
                "UPDATE messages SET content = ?, stats_json = ?, status = ?, updated_at = ?"
                " WHERE id = ? AND status = 'streaming'",
                (content, json.dumps(stats.to_dict() if stats else {}), str(status), now, message_id),
            )
            if cursor.rowcount == 0:
                raise StoreError(f"Message {message_id} is not a streaming reply.")
            self._touch_conversation_of(message_id, now)

    def update_message_content(self, message_id: int, content: str) -> None:
        """Replace a message's text (editing a user message; truncate_after drops what followed)."""
        now = utc_now()
        with transaction(self._conn):
            cursor = self._conn.execute(
                "UPDATE messages SET content = ?, updated_at = ? WHERE id = ?", (content, now, message_id)
            )
            if cursor.rowcount == 0:
                raise StoreError(f"There is no message {message_id}.")
            self._touch_conversation_of(message_id, now)

    def truncate_after(self, conversation_id: int, message_id: int) -> int:
        """Delete every message after message_id; returns how many.

        Edit: truncate after the edited user message, then generate anew. Regenerate: truncate
        after the user message that the last assistant reply answered.
        """
        with transaction(self._conn):
            row = self._conn.execute(
                "SELECT position FROM messages WHERE id = ? AND conversation_id = ?", (message_id, conversation_id)
            ).fetchone()
            if row is None:
                raise StoreError(f"Conversation {conversation_id} has no message {message_id}.")
            removed = self._conn.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position > ?", (conversation_id, row["position"])
            ).rowcount
            self._conn.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (utc_now(), conversation_id))
        return removed

    # Export and import

    def export_markdown(self, conversation_id: int) -> str:
        return exchange.to_markdown(self.get_conversation(conversation_id), self.messages(conversation_id))

    def export_json(self, conversation_id: int) -> dict:
        """A {"format": "hearth.conversation", "version": 1, ...} dict, ready for json.dump."""
        return exchange.to_json(self.get_conversation(conversation_id), self.messages(conversation_id))

    def import_json(self, data: dict | str | bytes) -> int:
        """Add an exported conversation (the dict, or the file's text) as a new one; returns its id.

        Titles, messages, params, stats and timestamps are kept as they were. Bad input raises
        StoreError and adds nothing.
        """
        return _insert_import(self._conn, *exchange.parse(data))

    # Internals

    def _update_conversation(self, conversation_id: int, assignments: str, *values) -> None:
        cursor = self._conn.execute(f"UPDATE conversations SET {assignments} WHERE id = ?", (*values, conversation_id))
        if cursor.rowcount == 0:
            raise StoreError(f"There is no conversation {conversation_id}.")

    def _touch_conversation_of(self, message_id: int, now: str) -> None:
        self._conn.execute(
            "UPDATE conversations SET updated_at = ? WHERE id = (SELECT conversation_id FROM messages WHERE id = ?)",
            (now, message_id),
        )

    def _recover_interrupted(self) -> None:
        """Replies still 'streaming' at open were cut off by a crash: keep their text, mark them."""
        rows = self._conn.execute("SELECT id, stats_json FROM messages WHERE status = 'streaming'").fetchall()
        if not rows:
            return
        with transaction(self._conn):
            for row in rows:
                stats = {**json.loads(row["stats_json"]), "stop_reason": StopReason.INTERRUPTED.value}
                self._conn.execute(
                    "UPDATE messages SET status = 'cancelled', stats_json = ? WHERE id = ?",
                    (json.dumps(stats), row["id"]),
                )


def import_file(database: str | os.PathLike, file: Path) -> int:
    """Import an export file into the database at `database`; returns the new conversation's id.

    For a worker thread, so that reading, checking and storing a large file never freezes the
    window: the connection is its own (ConversationStore's belongs to the GUI thread), and WAL
    lets the window keep reading meanwhile. All or nothing: every failure is a StoreError and
    adds nothing.
    """
    conversation, messages = exchange.parse(exchange.read_export(Path(file)))
    conn = connect(database)
    try:
        return _insert_import(conn, conversation, messages)
    except sqlite3.DatabaseError as exc:
        raise database_error(database, exc) from exc
    finally:
        conn.close()


def _insert_import(conn: sqlite3.Connection, conversation: dict, messages: list[dict]) -> int:
    """One transaction: the conversation and all its messages, or nothing."""
    with transaction(conn):
        conversation_id = conn.execute(
            "INSERT INTO conversations (title, model, system_prompt, created_at, updated_at)"
            " VALUES (:title, :model, :system_prompt, :created_at, :updated_at)",
            conversation,
        ).lastrowid
        conn.executemany(
            "INSERT INTO messages (conversation_id, position, role, content, model, params_json, stats_json,"
            " status, created_at, updated_at) VALUES (:conversation_id, :position, :role, :content, :model,"
            " :params_json, :stats_json, :status, :created_at, :updated_at)",
            [
                {**message, "conversation_id": conversation_id, "position": position}
                for position, message in enumerate(messages)
            ],
        )
    return conversation_id
