"""The conversation store: every conversation and message Hearth keeps, in one SQLite file.

Nothing is lost: a reply is saved while it streams (status 'streaming', its text replaced by
update_partial() every half second or so), and every call commits before it returns. If Hearth
is killed mid-reply, the next start finds the reply as far as it got and marks it 'cancelled'
with the stop reason "interrupted".

A user message may hold images: their bytes are files beside the database, named by digest
(image_files.py, image_links.py), written before the row that names them is committed and
unlinked after the last row naming them is erased (purge_deleted); the message keeps references.

Statistics and statuses come in and go out typed (`ReplyStats`, `ReplyStatus`); this package
is the only place they are turned into JSON and back.

Threads: the GUI calls the store from the GUI thread only. The connection keeps sqlite3's
check_same_thread default, so a call from another thread fails loudly instead of racing.
Hearth runs one instance at a time; a second one opening the same file would take the first
one's streaming reply for a crashed one.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

from app.common.sqlite_files import reporting_errors, transaction
from app.common.text import shorten
from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, ReplyStatus
from app.images.image import Image, ImageRef
from app.store import exchange, image_links, markdown, search, streaming
from app.store.image_files import ImageFiles, images_folder
from app.store.importing import insert_import
from app.store.records import (
    ROLES,
    STATUSES,
    Conversation,
    DeletedVersion,
    MessagePage,
    Source,
    StoredMessage,
    StoreError,
    ToolResult,
    require_choice,
    sources_to_json,
    unanswered,
    utc_now,
)
from app.store.schema import connect, database_error
from app.store.tree import (
    BRANCH,
    MESSAGE,
    SUBTREE,
    answered_reply,
    branch_messages,
    copy_branch,
    last_seen_leaf,
    live_tree,
    set_leaf,
    shown_leaf,
)

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


def branch_title(title: str) -> str:
    """The title of a conversation branched from one titled `title`."""
    return f"{title or 'Untitled conversation'} (branch)"


@reporting_errors(database_error)
class ConversationStore:
    """All reads and writes of conversations; one per database file, closed with close().

    Errors the user should see (unknown ids, newer databases, bad imports, damaged pages) are
    StoreError.
    """

    def __init__(self, path: str | os.PathLike, *, full_text_search: bool = True, recover: bool = True):
        """Open path, creating or upgrading it, and recover replies cut off by a crash.

        full_text_search=False searches with LIKE, as on an SQLite built without FTS5; the
        tests use it to cover that path. recover=False leaves 'streaming' replies as they are:
        the command line reads beside a running Hearth, whose reply is not a crashed one; and
        image files no message names (a crash between writing one and committing its message)
        are swept only with recover.
        """
        self.path = Path(path)
        self._files = ImageFiles(images_folder(self.path))
        self._conn = connect(path)
        try:
            self.full_text_search = search.install(self._conn, full_text_search)
            if recover:
                streaming.recover_interrupted(self._conn)
                image_links.sweep(self._conn, self._files)
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

    def set_tool_servers(self, conversation_id: int, names: tuple[str, ...]) -> None:
        """The tool servers whose tools the model may see in this conversation (Conversation.tool_servers)."""
        self._update_conversation(conversation_id, "tool_servers_json = ?", json.dumps(list(names)))

    def set_collections(self, conversation_id: int, names: tuple[str, ...]) -> None:
        """The document collections this conversation's questions are answered from (Conversation.collections)."""
        self._update_conversation(conversation_id, "collections_json = ?", json.dumps(list(names)))

    def set_sources(self, message_id: int, sources: tuple[Source, ...]) -> None:
        """The passages a user message's reply is given (StoredMessage.sources)."""
        self._conn.execute("UPDATE messages SET sources_json = ? WHERE id = ? AND role = 'user'",
                           (sources_to_json(sources), message_id))

    def delete(self, conversation_id: int) -> Conversation:
        """Move the conversation to the trash; the returned snapshot is what an Undo offers.

        Nothing is erased until purge_deleted(); restore(conversation.id) undoes this.
        Deleting twice keeps the first deletion time.
        """
        self._update_conversation(conversation_id, "deleted_at = COALESCE(deleted_at, ?)", utc_now())
        return self.get_conversation(conversation_id)

    def restore(self, conversation_id: int) -> None:  # the Undo of delete: out of the trash
        self._update_conversation(conversation_id, "deleted_at = NULL")

    def purge_deleted(self) -> int:
        """Erase everything in the trash, messages and deleted versions included; returns how
        many conversations. What is erased is unlinked from its parent first: a deletion would
        cascade down a branch one level at a time, past SQLite's limit of 1000 levels. Then,
        once that is committed, the image files no message names any more are deleted."""
        with transaction(self._conn):
            self._conn.execute("UPDATE messages SET parent_id = NULL WHERE deleted_at IS NOT NULL OR conversation_id IN"
                               " (SELECT id FROM conversations WHERE deleted_at IS NOT NULL)")
            self._conn.execute("DELETE FROM messages WHERE deleted_at IS NOT NULL")
            purged = self._conn.execute("DELETE FROM conversations WHERE deleted_at IS NOT NULL").rowcount
        image_links.sweep(self._conn, self._files)
        return purged

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

    def search_hit(self, text: str, conversation_id: int) -> int | None:
        """The message a search for text opens this conversation at: its newest message, in any
        version, that has every word; None when only the title matched."""
        words = text.split()
        if not words:
            return None
        return search.newest_hits(self._conn, words, self.full_text_search, [conversation_id]).get(conversation_id)

    # Messages: a tree per conversation, and the branch of it that is shown

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        """The branch shown, in order (position 0 first); other versions are not in it."""
        leaf = shown_leaf(self._conn, conversation_id)
        return branch_messages(self._conn, leaf, 0, leaf[1] + 1) if leaf else []

    def recent_messages(self, conversation_id: int, limit: int, before: int | None = None) -> MessagePage:
        """The last `limit` messages of the branch shown, or the last `limit` before position
        `before`, in order; what a window shows first and then page by page. Only the part of
        the branch asked for is read: a conversation may hold a hundred thousand messages."""
        leaf = shown_leaf(self._conn, conversation_id)
        if leaf is None:
            return MessagePage([], 0)
        end = leaf[1] + 1 if before is None else min(before, leaf[1] + 1)
        lowest = max(0, end - limit)
        return MessagePage(branch_messages(self._conn, leaf, lowest, end), lowest)

    def message(self, message_id: int) -> StoredMessage:
        """The message, also a deleted version (Undo may still bring it back)."""
        return StoredMessage.from_row(self._message_row(message_id))

    def _message_row(self, message_id: int) -> sqlite3.Row:
        row = self._conn.execute(f"{MESSAGE} WHERE m.id = ?", (message_id,)).fetchone()
        if row is None:
            raise StoreError(f"There is no message {message_id}.")
        return row

    def is_shown(self, message_id: int) -> bool:
        """Whether the message is on its conversation's branch shown."""
        message = self.message(message_id)
        found = self.recent_messages(message.conversation_id, 1, before=message.position + 1).messages
        return bool(found) and found[0].id == message_id

    def leaf_message(self, conversation_id: int) -> StoredMessage | None:
        """The last message of the branch shown (the reply Regenerate answers again)."""
        leaf = shown_leaf(self._conn, conversation_id)
        return self.message(leaf[0]) if leaf else None

    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        model: str | None = None,
        params: dict | None = None,
        status: ReplyStatus = ReplyStatus.COMPLETE,
        images: tuple[Image, ...] = (),
    ) -> int:
        """Append a message to the branch shown, which it now ends; returns its id. A user
        message may hold images (in order; their files are written before it is committed).

        A reply about to stream is added with status='streaming' (usually empty content), then
        fed with update_partial() and closed with finish_message(). A model given here becomes
        the conversation's model; the first user message titles an untitled conversation.
        A tool's result is added with add_tool_result(), which says what it answers.
        """
        if role == "tool":
            raise StoreError("A tool result is added with the call it answers (add_tool_result).")
        image_links.check_images(role, images)
        with transaction(self._conn):
            self.get_conversation(conversation_id)
            leaf = shown_leaf(self._conn, conversation_id)
            parent, position = (leaf[0], leaf[1] + 1) if leaf else (None, 0)
            message_id = self._insert(conversation_id, parent, position, role, content, model, params, status)
            image_links.store_images(self._conn, self._files, message_id, images)
            return message_id

    def add_version(
        self,
        message_id: int,
        content: str,
        model: str | None = None,
        params: dict | None = None,
        status: ReplyStatus = ReplyStatus.COMPLETE,
        images: tuple[Image, ...] | None = None,
    ) -> int:
        """Add another version of a message (an edit of a user message, another reply), which
        now ends the branch shown; the message and all that follows it are kept. A version of a
        tool result answers the same call; a reply's calls come with its finish_message(). An
        edit keeps the message's images (images None) or holds those given instead."""
        with transaction(self._conn):
            original = self._live(message_id)
            image_links.check_images(original.role, images or ())
            result = original.tool_result
            answer = None if result is None else ToolResult(result.call_id, result.name, content, result.error)
            version = self._insert(original.conversation_id, original.parent_id, original.position, original.role,
                                   content, model, params, status, answer)
            if images is None:
                image_links.copy_links(self._conn, message_id, version)
            else:
                image_links.store_images(self._conn, self._files, version, images)
            return version

    def add_tool_result(self, conversation_id: int, result: ToolResult) -> int:
        """Append a tool's result (role "tool", its content the result's) to the branch shown,
        which it now ends; returns its id. It must answer a call of the reply the branch ends
        with (the results of that reply's other calls may come between): a result that names
        no call above it is refused, so that every history hands the model a whole exchange."""
        with transaction(self._conn):
            self.get_conversation(conversation_id)
            leaf = shown_leaf(self._conn, conversation_id)
            reply = answered_reply(self._conn, leaf[0]) if leaf else None
            problem = unanswered(reply.tool_calls if reply is not None else (), result)
            if problem is not None:
                raise StoreError(f"This tool result cannot be added: {problem}.")
            return self._insert(conversation_id, leaf[0], leaf[1] + 1, "tool", result.content, None, None,
                                ReplyStatus.COMPLETE, result)

    def sibling(self, message_id: int, step: int) -> int | None:
        """The version before (step -1) or after (step 1) this one, or None at either end."""
        return self._sibling(self._live(message_id), step)

    def _sibling(self, message: StoredMessage, step: int) -> int | None:
        newer = step > 0
        row = self._conn.execute(
            f"SELECT id FROM messages WHERE parent_id IS ? AND conversation_id = ? AND deleted_at IS NULL"
            f" AND id {'>' if newer else '<'} ? ORDER BY id {'ASC' if newer else 'DESC'} LIMIT 1",
            (message.parent_id, message.conversation_id, message.id)).fetchone()
        return row["id"] if row else None

    def show_version(self, message_id: int) -> int:
        """Show the branch through this message: below it, the branch that was seen last there
        (else the newest). Returns the message that now ends the branch shown."""
        with transaction(self._conn):
            message = self._live(message_id)
            leaf = last_seen_leaf(self._conn, message_id)
            set_leaf(self._conn, message.conversation_id, leaf)
        return leaf

    def delete_version(self, message_id: int) -> DeletedVersion:
        """Hide a version and everything below it, until restore_version() (Undo). If the branch
        shown went through it, the version before it is shown instead (else the one after,
        else its parent). A reply still being written cannot be deleted."""
        with transaction(self._conn):
            message = self._live(message_id)
            conversation_id = message.conversation_id
            leaf = shown_leaf(self._conn, conversation_id)
            if self._conn.execute(
                f"SELECT 1 FROM messages WHERE id IN {SUBTREE} AND status = 'streaming'",
                {"top": message_id},
            ).fetchone():
                raise StoreError("A reply below this version is still being written: stop it first.")
            stamp = utc_now()
            hidden = self._conn.execute(
                f"UPDATE messages SET deleted_at = :stamp WHERE id IN {SUBTREE}",
                {"top": message_id, "stamp": stamp},
            ).rowcount
            if leaf is not None and self._conn.execute(
                "SELECT deleted_at IS NOT NULL FROM messages WHERE id = ?", (leaf[0],)
            ).fetchone()[0]:
                # Shown instead: the version before it, else the one after, else its parent.
                instead = self._sibling(message, -1) or self._sibling(message, 1)
                shown = last_seen_leaf(self._conn, instead) if instead else message.parent_id
                set_leaf(self._conn, conversation_id, shown)
            self._conn.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (stamp, conversation_id))
        return DeletedVersion(message_id, conversation_id, stamp, leaf[0] if leaf else None, hidden)

    def restore_version(self, deleted: DeletedVersion) -> None:
        """Undo delete_version(): its messages come back, and the branch that was shown. Not
        while a message above it is deleted too (a later deletion holds it): undo that first."""
        with transaction(self._conn):
            parent = self.message(deleted.message_id).parent_id
            if parent is not None and self._conn.execute(
                f"{BRANCH} SELECT 1 FROM messages JOIN branch USING (id) WHERE deleted_at IS NOT NULL",
                {"leaf": parent, "lowest": 0},
            ).fetchone():
                raise StoreError("This version was inside one deleted later: undo that deletion first.")
            self._conn.execute(  # one instant marks one deletion: what was deleted before stays so
                "UPDATE messages SET deleted_at = NULL WHERE conversation_id = ? AND deleted_at = ?",
                (deleted.conversation_id, deleted.deleted_at),
            )
            if deleted.leaf_id is not None:
                set_leaf(self._conn, deleted.conversation_id, last_seen_leaf(self._conn, deleted.leaf_id))

    def branch_from(self, message_id: int) -> int:
        """A new conversation holding a copy of the branch up to this message (its versions and
        what follows are not copied), images included; returns its id. The original is not changed."""
        with transaction(self._conn):
            message = self._live(message_id)
            if message.status is ReplyStatus.STREAMING:
                raise StoreError("This reply is still being written: branch from it when it has ended.")
            source = self.get_conversation(message.conversation_id)
            now = utc_now()
            conversation_id = self._conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, model, system_prompt, tool_servers_json,"
                " collections_json) SELECT ?, ?, ?, model, system_prompt, tool_servers_json, collections_json"
                " FROM conversations WHERE id = ?",  # a branch asks with the same tools and documents
                (branch_title(source.title), now, now, source.id),
            ).lastrowid
            set_leaf(self._conn, conversation_id, copy_branch(self._conn, message_id, conversation_id))
        return conversation_id

    def update_partial(self, message_id: int, content: str) -> None:
        """Save the text a streaming reply has so far: one UPDATE, one small commit. Raises
        StoreError if the message is not streaming: a late timer cannot overwrite a finished reply."""
        streaming.save_partial(self._conn, message_id, content)

    def finish_message(
        self, message_id: int, content: str, stats: ReplyStats | None = None,
        status: ReplyStatus = ReplyStatus.COMPLETE, tool_calls: tuple[ToolCall, ...] = (),
    ) -> None:
        """Close a streaming reply with its final text, the engine's stats, how it ended
        (complete, cancelled or error) and the tool calls it ended with, if any."""
        streaming.finish(self._conn, message_id, content, stats, status, tool_calls)

    def image(self, ref: ImageRef) -> Image:
        """A stored image's bytes (a message's images are references: StoredMessage.images),
        checked against its digest. A file that is gone or damaged is MissingImage (an
        ImageError and a StoreError) naming the image and its conversation; the message and its
        conversation still open, and the caller decides whether to go on without the image."""
        return image_links.read(self._conn, self._files, ref)

    # Export and import

    def export_markdown(self, conversation_id: int) -> str:
        """The branch shown, noting how many messages are on other branches."""
        branch = self.messages(conversation_id)
        live = self._conn.execute(
            "SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND deleted_at IS NULL", (conversation_id,)
        ).fetchone()[0]
        return markdown.to_markdown(self.get_conversation(conversation_id), branch, live - len(branch))

    def export_json(self, conversation_id: int) -> dict:
        """A {"format": "hearth.conversation", "version": 5, ...} dict with every version (not
        deleted ones), tool calls and results and images (their bytes) included, ready for
        json.dump. A missing or damaged image file is MissingImage: nothing is exported."""
        conversation = self.get_conversation(conversation_id)
        tree = live_tree(self._conn, conversation_id)
        leaf = shown_leaf(self._conn, conversation_id)
        refs = {ref.digest: ref for message in tree for ref in message.images}  # each image once, in order of use
        images = [self.image(ref) for ref in refs.values()]
        return exchange.to_json(conversation, tree, leaf[0] if leaf else None, images)

    def import_json(self, data: dict | str | bytes) -> int:
        """Add an exported conversation (the dict, or the file's text) as a new one; returns its id.

        Titles, messages, params, stats, timestamps and images are kept as they were. Bad input
        raises StoreError and adds nothing (an image file it wrote is swept at the next start).
        """
        return insert_import(self._conn, self._files, *exchange.parse(data))

    # Internals

    def _update_conversation(self, conversation_id: int, assignments: str, *values) -> None:
        cursor = self._conn.execute(f"UPDATE conversations SET {assignments} WHERE id = ?", (*values, conversation_id))
        if cursor.rowcount == 0:
            raise StoreError(f"There is no conversation {conversation_id}.")

    def _insert(self, conversation_id: int, parent_id: int | None, position: int, role: str, content: str,
                model: str | None, params: dict | None, status: ReplyStatus, result: ToolResult | None = None) -> int:
        """Store a message under parent_id as the end of the branch shown (inside a transaction);
        a model becomes the conversation's, a first user message titles an untitled one. A tool
        message (and only one) has the result it holds."""
        require_choice("role", role, ROLES)
        require_choice("status", status, STATUSES)
        now = utc_now()
        message_id = self._conn.execute(
            "INSERT INTO messages (conversation_id, parent_id, position, role, content, model, params_json, status,"
            " created_at, updated_at, viewed_at, tool_call_id, tool_name, tool_error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (conversation_id, parent_id, position, role, content, model, json.dumps(params or {}), str(status),
             now, now, now, *((result.call_id, result.name, result.error) if result else (None, None, False))),
        ).lastrowid
        title = self.get_conversation(conversation_id).title
        if not title and role == "user":
            title = auto_title(content)
        self._conn.execute(
            "UPDATE conversations SET title = ?, model = COALESCE(?, model), updated_at = ?, leaf_id = ? WHERE id = ?",
            (title, model, now, message_id, conversation_id),
        )
        return message_id

    def _live(self, message_id: int) -> StoredMessage:
        """The message, refused if it is a deleted version (read once, with its deleted_at)."""
        row = self._message_row(message_id)
        if row["deleted_at"]:
            raise StoreError(f"Message {message_id} was deleted.")
        return StoredMessage.from_row(row)
