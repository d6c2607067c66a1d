"""Opening the conversation database: connection settings, schema migrations, transactions.

WAL journal: every commit is one append to the -wal file, which keeps the twice-a-second saves
of a streaming reply cheap, and readers never block the writer. synchronous=NORMAL in WAL mode
cannot corrupt the database and loses nothing when the *app* crashes or is killed; only a power
cut or OS crash may drop the last few commits, which is the right trade for a chat log.

The schema version lives in PRAGMA user_version. MIGRATIONS[n] is the SQL that takes version n
to n + 1; each runs in its own transaction together with the version bump, so an interrupted
upgrade leaves the previous version intact. Never edit a released migration: append a new one.
A migration that rebuilds a table drops the full-text index's triggers with it; search.install
then builds that index again, in this version's shape, on the next open.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from app.common import sqlite_files
from app.store.records import DatabaseDamaged, StoreError, shorten

MIGRATIONS: tuple[str, ...] = (
    # 0 -> 1: conversations and their messages.
    """
    CREATE TABLE conversations (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        model TEXT,
        system_prompt TEXT NOT NULL DEFAULT '',
        deleted_at TEXT
    );
    CREATE INDEX conversations_by_activity ON conversations (deleted_at, updated_at);

    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
        content TEXT NOT NULL,
        model TEXT,
        params_json TEXT NOT NULL DEFAULT '{}',
        stats_json TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'complete'
            CHECK (status IN ('complete', 'streaming', 'cancelled', 'error')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (conversation_id, position)
    );
    -- Crash recovery looks for 'streaming' rows on every start; this index holds only those.
    CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming';
    """,
    # 1 -> 2: every version of a message. A message's parent is the one it follows; an edit or a
    # regenerated reply is a sibling (same parent), so nothing is deleted by Edit or Regenerate.
    # position is the depth (0 for a first message), so a branch is numbered 0..n-1 as before.
    # conversations.leaf_id ends the branch shown; viewed_at says which branch below a message
    # was seen last; deleted_at hides a deleted version (and all below it) until Undo.
    # SQLite cannot drop the old UNIQUE (conversation_id, position), hence the new table; ids
    # are kept, so the full-text index (rebuilt by search.install) still points at the same rows.
    """
    CREATE TABLE messages_v2 (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        parent_id INTEGER REFERENCES messages_v2 (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
        content TEXT NOT NULL,
        model TEXT,
        params_json TEXT NOT NULL DEFAULT '{}',
        stats_json TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'complete'
            CHECK (status IN ('complete', 'streaming', 'cancelled', 'error')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        viewed_at TEXT NOT NULL,
        deleted_at TEXT
    );
    INSERT INTO messages_v2 (id, conversation_id, parent_id, position, role, content, model, params_json,
                             stats_json, status, created_at, updated_at, viewed_at)
        SELECT id, conversation_id, LAG(id) OVER branch, ROW_NUMBER() OVER branch - 1, role, content, model,
               params_json, stats_json, status, created_at, updated_at, updated_at
        FROM messages WINDOW branch AS (PARTITION BY conversation_id ORDER BY position)
        ORDER BY conversation_id, position;
    DROP TABLE messages;
    ALTER TABLE messages_v2 RENAME TO messages;
    CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming';
    -- A message's versions and children; roots (parent_id NULL) by conversation.
    CREATE INDEX messages_by_parent ON messages (parent_id, conversation_id);
    ALTER TABLE conversations ADD COLUMN leaf_id INTEGER;
    UPDATE conversations SET leaf_id =
        (SELECT id FROM messages m WHERE m.conversation_id = conversations.id ORDER BY position DESC LIMIT 1);
    """,
    # 2 -> 3: tool calls and their results. An assistant message keeps the calls it ended with
    # (tool_calls_json: [{"id", "name", "arguments", "problem"}], arguments as the model's JSON
    # text) and their names and arguments as search reads them (tool_calls_text); a 'tool'
    # message is the result of one call: tool_call_id and tool_name say which, content is what
    # the model reads next, tool_error says the tool failed or the user refused to run it.
    # The role CHECK cannot be altered in place, hence the new table, ids kept as in 1 -> 2.
    # Children may have smaller ids than their parents in a hand-edited file, so the foreign
    # keys are checked at COMMIT, not row by row.
    """
    PRAGMA defer_foreign_keys = ON;
    CREATE TABLE messages_v3 (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        parent_id INTEGER REFERENCES messages_v3 (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content TEXT NOT NULL,
        model TEXT,
        params_json TEXT NOT NULL DEFAULT '{}',
        stats_json TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'complete'
            CHECK (status IN ('complete', 'streaming', 'cancelled', 'error')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        viewed_at TEXT NOT NULL,
        deleted_at TEXT,
        tool_calls_json TEXT NOT NULL DEFAULT '[]' CHECK (role = 'assistant' OR tool_calls_json = '[]'),
        tool_calls_text TEXT NOT NULL DEFAULT '',
        tool_call_id TEXT,
        tool_name TEXT,
        tool_error INTEGER NOT NULL DEFAULT 0 CHECK (tool_error IN (0, 1)),
        CHECK ((role = 'tool') = (tool_call_id IS NOT NULL AND tool_name IS NOT NULL)),
        CHECK (role = 'tool' OR tool_error = 0)
    );
    INSERT INTO messages_v3 (id, conversation_id, parent_id, position, role, content, model, params_json,
                             stats_json, status, created_at, updated_at, viewed_at, deleted_at)
        SELECT id, conversation_id, parent_id, position, role, content, model, params_json,
               stats_json, status, created_at, updated_at, viewed_at, deleted_at
        FROM messages ORDER BY id;
    -- Dropping a table deletes its rows first, and each deletion would cascade to the row's
    -- children one level deeper: a long branch goes past SQLite's recursion limit. Unlinked first.
    UPDATE messages SET parent_id = NULL WHERE parent_id IS NOT NULL;
    DROP TABLE messages;
    ALTER TABLE messages_v3 RENAME TO messages;
    CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming';
    CREATE INDEX messages_by_parent ON messages (parent_id, conversation_id);
    """,
    # 3 -> 4: the tool servers a conversation's model may call (a JSON list of their names), or
    # NULL where the user never chose: the window's default for new conversations applies.
    """
    ALTER TABLE conversations ADD COLUMN tool_servers_json TEXT;
    """,
    # 4 -> 5: chat with documents. The collections a conversation's questions are answered from
    # (a JSON list of their names; NULL where never chosen), and, on a user message, the sources
    # its reply was given (sources_json: [{"path", "page", "heading", "text"}]): kept with the
    # message, so the prompt reads the same at every later turn (its prefix reused), a
    # regenerated reply reads the same sources, and the citations open what the reply read.
    """
    ALTER TABLE conversations ADD COLUMN collections_json TEXT;
    ALTER TABLE messages ADD COLUMN sources_json TEXT NOT NULL DEFAULT '[]';
    """,
    # 5 -> 6: images. A user message's images, in order (position from 0): each by its digest
    # (the SHA-256 of its bytes, which name its file beside the database: image_files.py), with
    # what it is. A digest is checked here too, since it becomes a file name. The index by
    # digest answers "does any message still use this file?" when files are swept.
    # A later migration that rebuilds `messages` must copy these rows aside first: dropping that
    # table deletes its rows, and the foreign key would take their images with them.
    """
    CREATE TABLE message_images (
        message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        position INTEGER NOT NULL CHECK (position >= 0),
        digest TEXT NOT NULL CHECK (length(digest) = 64 AND digest NOT GLOB '*[^0-9a-f]*'),
        media_type TEXT NOT NULL CHECK (media_type IN ('image/png', 'image/jpeg', 'image/webp')),
        width INTEGER NOT NULL CHECK (typeof(width) = 'integer' AND width > 0),
        height INTEGER NOT NULL CHECK (typeof(height) = 'integer' AND height > 0),
        PRIMARY KEY (message_id, position)
    ) WITHOUT ROWID;
    CREATE INDEX message_images_by_digest ON message_images (digest);
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


def connect(path: str | os.PathLike) -> sqlite3.Connection:
    """Open (creating if needed) and upgrade the database at path; rows come back as sqlite3.Row.

    The connection is in autocommit mode: a lone statement is its own transaction, and
    multi-statement changes use transaction(). Raises StoreError when the file is not a usable
    database or comes from a newer Hearth; such a file is left as it was.
    """
    conn = sqlite_files.open_file(path, database_error, migrate)
    conn.row_factory = sqlite3.Row
    return conn


def migrate(conn: sqlite3.Connection, migrations: tuple[str, ...] = MIGRATIONS) -> None:
    """Bring the database up to len(migrations), one transaction per step (common/sqlite_files.py);
    a database newer than the migrations known is refused before anything is written."""
    sqlite_files.migrate(conn, migrations, lambda version: StoreError(
        f"The conversation database was written by a newer version of Hearth (schema {version}; this "
        f"version knows up to {len(migrations)}). Update Hearth to open it; the file has not been changed."))


def database_error(path: str | os.PathLike, exc: sqlite3.Error) -> StoreError:
    """What to tell the user about an SQLite error: DatabaseDamaged when the file's pages are
    corrupt or it is not a database at all, a plain StoreError for the rest (a full disk, a
    file that cannot be written)."""
    if sqlite_files.is_damage(exc):
        return DatabaseDamaged(f"The conversation database {os.fspath(path)} is damaged ({shorten(str(exc))}).")
    return StoreError(f"The conversation database {os.fspath(path)} could not be read or written ({shorten(str(exc))}).")


# quick_check reads every page (a few hundred MB a second, from another thread and connection);
# above this size a start-up does not pay for it.
QUICK_CHECK_MAX_BYTES = 1 << 30


def quick_check(path: str | os.PathLike, max_problems: int = 5) -> list[str]:
    """PRAGMA quick_check on a read-only connection of its own (any thread may call it):
    the problems found, [] when the file is sound or too big to check at start-up."""
    path = Path(path)
    try:
        if path.stat().st_size > QUICK_CHECK_MAX_BYTES:
            return []
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (OSError, sqlite3.Error) as exc:
        return [shorten(str(exc))]
    try:
        rows = conn.execute(f"PRAGMA quick_check({int(max_problems)})").fetchall()
    except sqlite3.Error as exc:
        return [shorten(str(exc))]
    finally:
        conn.close()
    return [] if rows == [("ok",)] else [shorten(str(row[0])) for row in rows]
