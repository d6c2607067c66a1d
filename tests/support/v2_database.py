"""Conversation databases at schema version 2 (message trees, before tool calls), for the
2 -> 3 migration's tests.

Built the way such a file came to be: a version-1 database (v1_database.py) upgraded by the
released 1 -> 2 migration (MIGRATIONS[1], which is never edited), its full-text index rebuilt
as version 2's search.install did (the same statements as version 1's), and then what only
version 2 wrote, as its store wrote it: another version of a reply shown in place of the first,
an edited question with its own reply below it, and a deleted version. The reply the version-1
history left 'streaming' stays so (Hearth was killed and never started again).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from app.store.schema import MIGRATIONS, migrate
from support.v1_database import V1_FTS, V1Conversation, build_v1_database

V2_MIGRATIONS = MIGRATIONS[:2]
_COPY = ("conversation_id, parent_id, position, role, model, params_json, stats_json, status, created_at, updated_at,"
         " viewed_at")


@dataclass(frozen=True)
class V2Summary:
    """What a built database holds (every row of both tables, as read_v1 reads them), and
    where version 2's own cases are."""

    path: Path
    conversations: tuple[V1Conversation, ...]
    tree_conversation_id: int  # versions, a branch and a deleted version
    regenerated_id: int  # the second reply to the last question: the leaf shown
    edited_id: int  # another version of a question, with its own reply
    deleted_id: int  # a version deleted (deleted_at set), not undone
    streaming_message_id: int  # left 'streaming' by a killed Hearth
    long_conversation_id: int  # the longest branch (about a thousand messages deep)


def read_v2(conn: sqlite3.Connection) -> tuple[V1Conversation, ...]:
    """Every conversation and message row, conversations by id, messages by depth and then id
    (the versions of a message share its depth)."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    messages: dict[int, list[dict]] = {}
    for row in cursor.execute("SELECT * FROM messages ORDER BY conversation_id, position, id"):
        messages.setdefault(row["conversation_id"], []).append(dict(row))
    return tuple(V1Conversation(dict(row), tuple(messages.get(row["id"], ())))
                 for row in cursor.execute("SELECT * FROM conversations ORDER BY id").fetchall())


def build_v2_database(path: Path, messages: int = 3000, seed: int = 0) -> V2Summary:
    """A new version-2 database at path; closed when it returns."""
    v1 = build_v1_database(path, messages=messages, seed=seed)
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, V2_MIGRATIONS)
        conn.execute("BEGIN IMMEDIATE")
        for statement in V1_FTS:
            conn.execute(statement)
        conn.execute("COMMIT")
        conn.row_factory = sqlite3.Row
        conn.execute("BEGIN IMMEDIATE")
        cid = v1.edited_conversation_id
        rows = conn.execute("SELECT * FROM messages WHERE conversation_id = ? ORDER BY position", (cid,)).fetchall()
        last_reply, question = rows[-1], rows[-4]
        regenerated = _version(conn, last_reply, "Another reply, regenerated: shorter, and to the point.")
        edited = _version(conn, question, "An edited question: what changes below it?")
        conn.execute(f"INSERT INTO messages ({_COPY}, content) SELECT conversation_id, ?, position + 1, 'assistant',"
                     " model, params_json, stats_json, status, created_at, updated_at, viewed_at, ? FROM messages"
                     " WHERE id = ?", (edited, "The reply to the edited question.", rows[-3]["id"]))
        deleted = _version(conn, last_reply, "A reply deleted later.")
        conn.execute("UPDATE messages SET deleted_at = updated_at WHERE id = ?", (deleted,))
        conn.execute("UPDATE conversations SET leaf_id = ? WHERE id = ?", (regenerated, cid))
        longest = conn.execute("SELECT conversation_id FROM messages GROUP BY conversation_id"
                               " ORDER BY MAX(position) DESC LIMIT 1").fetchone()[0]
        conn.execute("COMMIT")
        return V2Summary(Path(path), read_v2(conn), cid, regenerated, edited, deleted, v1.streaming_message_id, longest)


def _version(conn: sqlite3.Connection, original: sqlite3.Row, content: str) -> int:
    """Another version of original, as version 2's add_version wrote it: same parent and depth."""
    return conn.execute(
        f"INSERT INTO messages ({_COPY}, content) SELECT {_COPY}, ? FROM messages WHERE id = ?",
        (content, original["id"])).lastrowid
