"""Opening the conversation database: connection settings, schema migrations, transactions.

WAL journal: every commit is one append to the -wal file, which keeps the twice-a-second saves
of a streaming reply cheap, and readers never block the writer. synchronous=NORMAL in WAL mode
cannot corrupt the database and loses nothing when the *app* crashes or is killed; only a power
cut or OS crash may drop the last few commits, which is the right trade for a chat log.

The schema version lives in PRAGMA user_version. MIGRATIONS[n] is the SQL that takes version n
to n + 1; each runs in its own transaction together with the version bump, so an interrupted
upgrade leaves the previous version intact. Never edit a released migration: append a new one.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from app.store.records import StoreError

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
)

SCHEMA_VERSION = len(MIGRATIONS)


def connect(path: str | os.PathLike) -> sqlite3.Connection:
    """Open (creating if needed) and upgrade the database at path; rows come back as sqlite3.Row.

    The connection is in autocommit mode: a lone statement is its own transaction, and
    multi-statement changes use transaction(). Raises StoreError when the file is not a usable
    database or comes from a newer Hearth; such a file is left as it was.
    """
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"Can't open the conversation database {os.fspath(path)}: {exc}") from exc
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"Can't open the conversation database {os.fspath(path)}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    conn.row_factory = sqlite3.Row
    return conn


def migrate(conn: sqlite3.Connection, migrations: tuple[str, ...] = MIGRATIONS) -> None:
    """Bring the database up to len(migrations), one transaction per step.

    Refuses a database newer than the migrations it knows, before writing anything: an older
    Hearth must not guess at a schema it has never seen.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(migrations):
        raise StoreError(
            f"The conversation database was written by a newer version of Hearth (schema "
            f"{version}; this version knows up to {len(migrations)}). Update Hearth to open it; "
            f"the file has not been changed."
        )
    for number, script in enumerate(migrations[version:], start=version + 1):
        # executescript() would commit an open transaction first, so BEGIN/COMMIT go inside it.
        try:
            conn.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Several statements as one commit; IMMEDIATE takes the write lock up front."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
