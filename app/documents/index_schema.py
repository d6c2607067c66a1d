"""The document index's file: connection settings, schema migrations, transactions, and what a
damaged one is (index.py is what reads and writes it).

As app/store/schema.py does it for the conversations (which this room, a rank beside the store,
may not import): WAL, synchronous=NORMAL, the schema version in PRAGMA user_version, and
MIGRATIONS[n] taking version n to n + 1 in one transaction with the version bump. Never edit a
released migration: append a new one. Pages are 16 KB, set before the first table.

`chunk_fts` is an external-content FTS5 table over `chunks`, as store/search.py's are, not a
contentless one: the text is kept once (a Hit needs it), the index holds only tokens, triggers
keep it in step through every insert and cascade delete, and 'rebuild' makes it again from the
chunks alone. A contentless table would keep no less on disk, and on this SQLite (3.40, before
contentless_delete) deleting a row from it needs the old text handed back anyway. The index keeps
positions (detail=full) though no query here is a phrase: without them FTS5's bm25() scored a
match ten times as slowly (measured over 10,000 chunks: 43 ms against 4.7), for a quarter less
index. The chunk's collection is an indexed column of its own (its id as a token), so a keyword
search in one of several collections reads only its postings (`collection_id : "7" AND ...`);
its bm25 weight is 0.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from app.common import sqlite_files
from app.common.text import shorten

# quick_check reads every page (a few hundred MB a second); an index past this size is not
# checked at open (the calls that meet a damaged page still say so).
QUICK_CHECK_MAX_BYTES = 1 << 30
PAGE_SIZE = 16384

MIGRATIONS: tuple[str, ...] = (
    # 0 -> 1: collections, files, chunks with their vectors, and the full-text index.
    """
    CREATE TABLE collections (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL CHECK (dims > 0),
        generation INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        collection_id INTEGER NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        size INTEGER,
        mtime_ns INTEGER,
        sha256 TEXT,
        status TEXT NOT NULL CHECK (status IN ('indexed', 'failed')),
        error TEXT NOT NULL DEFAULT '',
        indexed_at TEXT NOT NULL,
        UNIQUE (collection_id, path)
    );
    -- collection_id is the file's, kept on the chunk: a collection's vectors are read in one
    -- range of this index, and the full-text index holds it as a token (see the docstring).
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
        collection_id INTEGER NOT NULL,
        ordinal INTEGER NOT NULL,
        text TEXT NOT NULL,
        page INTEGER,
        heading TEXT NOT NULL DEFAULT '',
        start INTEGER NOT NULL DEFAULT 0,
        tokens INTEGER NOT NULL DEFAULT 0,
        UNIQUE (file_id, ordinal)
    );
    -- A chunk's vector in a table of its own: rows of one size that fill the pages (beside the
    -- text, a 1.5 KB vector leaves most of a page empty), read without the text when a search
    -- loads a collection's matrix.
    CREATE TABLE chunk_vectors (
        chunk_id INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
        vector BLOB NOT NULL
    );
    CREATE INDEX chunks_by_collection ON chunks (collection_id);
    CREATE VIRTUAL TABLE chunk_fts USING fts5(
        text, heading, collection_id, content='chunks', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2');
    INSERT INTO chunk_fts (chunk_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5, 0.0)');
    CREATE TRIGGER chunk_fts_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO chunk_fts (rowid, text, heading, collection_id)
            VALUES (new.id, new.text, new.heading, new.collection_id);
    END;
    CREATE TRIGGER chunk_fts_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO chunk_fts (chunk_fts, rowid, text, heading, collection_id)
            VALUES ('delete', old.id, old.text, old.heading, old.collection_id);
    END;
    CREATE TRIGGER chunk_fts_update AFTER UPDATE OF text, heading, collection_id ON chunks BEGIN
        INSERT INTO chunk_fts (chunk_fts, rowid, text, heading, collection_id)
            VALUES ('delete', old.id, old.text, old.heading, old.collection_id);
        INSERT INTO chunk_fts (rowid, text, heading, collection_id)
            VALUES (new.id, new.text, new.heading, new.collection_id);
    END;
    """,
    # 1 -> 2: the folders and files a collection was made from (its roots: an update walks them
    # all again, and a file gone from every root leaves the index), and whether its last run
    # finished (NULL while one is under way or was cut short: the window goes on with it at its
    # next start).
    """
    CREATE TABLE collection_roots (
        collection_id INTEGER NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        PRIMARY KEY (collection_id, path)
    );
    ALTER TABLE collections ADD COLUMN finished_at TEXT;
    UPDATE collections SET finished_at = created_at;
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


class DocumentIndexError(Exception):
    """What the user can be told about the index: a name that exists or does not, vectors of the
    wrong length, an index from a newer Hearth, a full disk. The message is written to be shown."""


class IndexDamaged(DocumentIndexError):
    """The index file is not a database or has damaged pages. It holds nothing that cannot be
    made again from the user's files: the caller moves it aside and builds a new one
    (open_or_rebuild)."""

def connect(path: str | os.PathLike) -> sqlite3.Connection:
    """Open (creating if needed) and upgrade the index at path, in autocommit mode (changes of
    several statements go through transaction()). Raises IndexDamaged for a file that is no
    database or whose pages are damaged, DocumentIndexError for one from a newer Hearth."""
    # The page size is set before the first table only (a no-op on an index that exists): 16 KB
    # pages hold ten vectors of 384 numbers with 6 % left over, where 4 KB pages hold two with a quarter.
    return sqlite_files.open_file(path, database_error, migrate, (f"PRAGMA page_size = {PAGE_SIZE}",))


def migrate(conn: sqlite3.Connection, migrations: tuple[str, ...] = MIGRATIONS) -> None:
    """Bring the index up to len(migrations), one transaction per step (common/sqlite_files.py);
    an index newer than the migrations known is refused before anything is written."""
    sqlite_files.migrate(conn, migrations, lambda version: DocumentIndexError(
        f"The document index was written by a newer version of Hearth (schema {version}; this "
        f"version knows up to {len(migrations)}). Update Hearth to open it; the file has not been changed."))


def database_error(path: str | os.PathLike, exc: sqlite3.Error) -> DocumentIndexError:
    """IndexDamaged when the file's pages are corrupt or it is no database, else a plain
    DocumentIndexError (a full disk, a file that cannot be written, a lock held too long)."""
    if sqlite_files.is_damage(exc):
        return IndexDamaged(f"The document index {os.fspath(path)} is damaged ({shorten(str(exc))}).")
    return DocumentIndexError(f"The document index {os.fspath(path)} could not be read or written ({shorten(str(exc))}).")


def quick_check(conn: sqlite3.Connection, path: str | os.PathLike, max_problems: int = 3) -> list[str]:
    """PRAGMA quick_check on conn: the problems found, [] when the file is sound or too big to
    check at open."""
    try:
        if Path(path).stat().st_size > QUICK_CHECK_MAX_BYTES:
            return []
    except OSError:
        return []
    rows = conn.execute(f"PRAGMA quick_check({int(max_problems)})").fetchall()
    return [] if rows == [("ok",)] else [shorten(str(row[0])) for row in rows]
