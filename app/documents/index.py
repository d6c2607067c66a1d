"""The document index: collections, their files and their chunks with vectors, in one SQLite file
of their own (not the conversation database: an index is derived from the user's files and may be
thrown away and rebuilt, a conversation may not).

Tables: `collections` (a name the user gave, the embedding model and its vector length, and a
generation bumped by every change, so a search's cached vectors know when to load again, in this
process or another), `files` (each file's size, mtime and SHA-256, so adding a folder again
re-reads only what changed, and why a file failed), `chunks` (their text, page and heading),
`chunk_vectors` (each chunk's vector: a little-endian float16 BLOB of the collection's model's
length, in a table of its own so that its rows fill the 16 KB pages and a collection's matrix is
read without the text) and `chunk_fts`, the FTS5 index over the chunks' text and headings.

The file itself (schema, migrations, the full-text index's choices) is index_schema.py's.

The vectors belong to one embedding model: a collection records the model's name and length,
and set_model() with another one drops the collection's chunks and file states, so the next
indexing run reads and embeds every file again.

Every public method turns sqlite3's errors into IndexDamaged (damaged pages, not a database)
or DocumentIndexError (the rest): never a traceback in a slot. A damaged file is found at open
(its header; PRAGMA quick_check with check=True), and open_or_rebuild() moves it aside and starts
a new one.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import numpy as np

from app.common.sqlite_files import move_aside, reporting_errors, transaction
from app.common.text import shorten
from app.documents.index_schema import (
    PAGE_SIZE,
    DocumentIndexError,
    IndexDamaged,
    connect,
    database_error,
    quick_check,
)
from app.documents.types import Chunk

__all__ = ["PAGE_SIZE", "Collection", "CollectionStats", "CollectionSummary", "DocumentIndex", "DocumentIndexError",
           "FailedFile", "FileState", "IndexDamaged", "StoredChunk", "move_aside", "open_or_rebuild"]

# How many ids go into one "IN (...)" list: SQLite's default limit of variables is 32,766.
ID_BATCH = 900
# The longest reason kept for a failed file (a reader's message may quote a megabyte of it).
REASON_CHARS = 300
COLLECTION_COLUMNS = "id, name, created_at, model, dims, generation, finished_at"


@dataclass(frozen=True)

class Collection:
    """A named set of files indexed with one embedding model (`model`, its vectors `dims` long).
    `generation` changes with every change to its files or chunks."""

    id: int
    name: str
    created_at: str
    model: str
    dims: int
    generation: int
    finished_at: str | None = None  # when its last indexing run ended; None while one is under way or was cut short

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


class FileState(NamedTuple):
    """What says a file is unchanged since it was read: its size and modification time first
    (cheap), then its SHA-256 (hex) where those differ."""

    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class FailedFile:
    """A file of a collection that could not be indexed, and why (for the user)."""

    path: Path
    reason: str


# Vectors on disk: half precision, half the size. They are unit vectors (every number within
# ±1), where float16 keeps ~3 significant digits: a cosine changes by less than 0.001, far
# below what separates one chunk from the next; they are searched as float32 in memory.
STORED_VECTOR = np.dtype("<f2")


@dataclass(frozen=True)
class CollectionStats:
    """How much a collection holds: files indexed and failed, chunks, and the bytes of their text
    (UTF-8) and of their vectors."""

    files: int
    failed: int
    chunks: int
    text_bytes: int
    vector_bytes: int


@dataclass(frozen=True)
class CollectionSummary:
    """All the window shows of a collection: itself, its counts, its roots, its failed files."""

    collection: Collection
    stats: CollectionStats
    roots: tuple[Path, ...]
    failures: tuple[FailedFile, ...]

    @property
    def name(self) -> str:
        return self.collection.name


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as the index keeps it, with the file it came from (what a Hit is made of)."""

    id: int
    source: Path
    ordinal: int
    text: str
    page: int | None
    heading: str




def open_or_rebuild(path: str | os.PathLike, *, check: bool = True) -> tuple["DocumentIndex", Path | None]:
    """The index at path, or, when it is damaged, a new empty one in its place: the damaged file
    is moved aside (its new path is returned with the index, None when it was sound), so the
    caller can say that the collections are indexed again. An index from a newer Hearth is not
    damaged and is not moved: DocumentIndexError."""
    try:
        return DocumentIndex(path, check=check), None
    except IndexDamaged:
        moved = move_aside(path)
        return DocumentIndex(path, check=False), moved


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@reporting_errors(database_error)
class DocumentIndex:
    """All reads and writes of one index file; one per thread (sqlite3 connections stay on the
    thread that made them), closed with close(). WAL lets an indexing thread write while another
    searches."""

    def __init__(self, path: str | os.PathLike, *, check: bool = False):
        """Open path, creating or upgrading it. check=True also reads every page (PRAGMA
        quick_check, about a second for a few hundred MB; skipped past QUICK_CHECK_MAX_BYTES),
        so damage is found now rather than by a later search. Raises IndexDamaged or
        DocumentIndexError; the file is left as it was."""
        self.path = Path(path)
        self._conn = connect(path)
        try:
            problems = quick_check(self._conn, path) if check else []
        except sqlite3.Error as exc:
            self._conn.close()
            raise database_error(path, exc) from exc
        if problems:
            self._conn.close()
            raise IndexDamaged(f"The document index {os.fspath(path)} is damaged ({problems[0]}).")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "DocumentIndex":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # Collections

    def add_collection(self, name: str, model: str, dims: int) -> Collection:
        """A new, empty collection whose vectors come from `model` (`dims` long)."""
        if not name.strip():
            raise DocumentIndexError("A collection needs a name.")
        if dims <= 0:
            raise DocumentIndexError(f"An embedding model's vectors cannot be {dims} long.")
        try:
            self._conn.execute("INSERT INTO collections (name, created_at, model, dims) VALUES (?, ?, ?, ?)",
                               (name, _utc_now(), model, int(dims)))
        except sqlite3.IntegrityError as exc:
            raise DocumentIndexError(f"There is already a collection named {shorten(name)}.") from exc
        return self.collection(name)

    def collection(self, name: str) -> Collection:
        row = self._conn.execute(f"SELECT {COLLECTION_COLUMNS} FROM collections WHERE name = ?",
                                 (name,)).fetchone()
        if row is None:
            raise DocumentIndexError(f"There is no collection named {shorten(name)}.")
        return Collection(*row)

    def list_collections(self) -> list[Collection]:
        """Every collection, by name."""
        rows = self._conn.execute(f"SELECT {COLLECTION_COLUMNS} FROM collections ORDER BY name")
        return [Collection(*row) for row in rows]

    def remove_collection(self, name: str) -> None:
        """The collection, its files and chunks (the cascade's triggers empty the full-text index)."""
        collection = self.collection(name)
        with transaction(self._conn):
            self._conn.execute("DELETE FROM collections WHERE id = ?", (collection.id,))

    def set_model(self, name: str, model: str, dims: int) -> bool:
        """Record the embedding model the collection's vectors come from. Another model than the
        one recorded makes every vector meaningless: its chunks and file states go, so the next
        indexing run reads every file again. True when that happened."""
        collection = self.collection(name)
        if (collection.model, collection.dims) == (model, dims):
            return False
        with transaction(self._conn):
            self._conn.execute("DELETE FROM files WHERE collection_id = ?", (collection.id,))
            self._conn.execute("UPDATE collections SET model = ?, dims = ?, generation = generation + 1 WHERE id = ?",
                               (model, int(dims), collection.id))
        return True

    def collection_by_id(self, collection_id: int) -> Collection | None:
        """The collection with this id, None when it is gone: one row read, cheap before every
        search (its generation says whether the vectors kept are still its own)."""
        row = self._conn.execute(f"SELECT {COLLECTION_COLUMNS} FROM collections WHERE id = ?",
                                 (collection_id,)).fetchone()
        return None if row is None else Collection(*row)

    def roots(self, name: str) -> list[Path]:
        """The folders and files the collection was made from, by path."""
        found = self.collection(name)
        rows = self._conn.execute("SELECT path FROM collection_roots WHERE collection_id = ? ORDER BY path", (found.id,))
        return [Path(path) for (path,) in rows]

    def add_roots(self, name: str, paths: Iterable[str | os.PathLike]) -> None:
        """More folders or files for the collection (absolute; those it has already are kept once)."""
        found = self.collection(name)
        with transaction(self._conn):
            self._conn.executemany("INSERT OR IGNORE INTO collection_roots (collection_id, path) VALUES (?, ?)",
                                   [(found.id, os.path.abspath(path)) for path in paths])

    def remove_root(self, name: str, path: str | os.PathLike) -> None:
        """A folder or file the collection no longer reads (its files leave at the next run)."""
        found = self.collection(name)
        self._conn.execute("DELETE FROM collection_roots WHERE collection_id = ? AND path = ?",
                           (found.id, os.fspath(path)))

    def set_finished(self, name: str, finished: bool) -> None:
        """An indexing run begins (False) or ends without being cut short (True)."""
        found = self.collection(name)
        self._conn.execute("UPDATE collections SET finished_at = ? WHERE id = ?",
                           (_utc_now() if finished else None, found.id))

    # Files

    def file_state(self, collection: str, path: str | os.PathLike) -> FileState | None:
        """What was recorded of the file when it was last read (indexed, or failed with its state
        known), None when it never was: the indexer compares it with the file now and reads only
        what changed."""
        row = self._conn.execute(
            "SELECT f.size, f.mtime_ns, f.sha256 FROM files f JOIN collections c ON c.id = f.collection_id "
            "WHERE c.name = ? AND f.path = ?", (collection, os.fspath(path))).fetchone()
        if row is None or None in row:
            return None
        return FileState(*row)

    def replace_file(self, collection: str, path: str | os.PathLike, size: int, mtime_ns: int, sha256: str,
                     chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """The file's chunks and their vectors (one row each, the collection's model's length), in
        place of whatever it had, in one transaction: a search sees the old file or the new one."""
        found = self.collection(collection)
        matrix = _vectors(vectors, len(chunks), found.dims)
        with transaction(self._conn):
            file_id = self._upsert_file(found.id, path, size, mtime_ns, sha256, "indexed", "")
            self._conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
            for ordinal, (chunk, row) in enumerate(zip(chunks, matrix)):
                chunk_id = self._conn.execute(
                    "INSERT INTO chunks (file_id, collection_id, ordinal, text, page, heading, start, tokens) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (file_id, found.id, ordinal, chunk.text, chunk.page, chunk.heading, chunk.start, chunk.tokens),
                ).lastrowid
                self._conn.execute("INSERT INTO chunk_vectors (chunk_id, vector) VALUES (?, ?)", (chunk_id, row.tobytes()))
            self._bump(found.id)

    def touch_file(self, collection: str, path: str | os.PathLike, size: int, mtime_ns: int) -> None:
        """The file's size or time changed but not its bytes (its hash is as recorded): the new
        state is kept, so the next run skips it without hashing it again."""
        found = self.collection(collection)
        with transaction(self._conn):
            self._conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE collection_id = ? AND path = ?",
                               (size, mtime_ns, found.id, os.fspath(path)))

    def mark_failed(self, collection: str, path: str | os.PathLike, reason: str, *, size: int | None = None,
                    mtime_ns: int | None = None, sha256: str | None = None) -> None:
        """The file could not be indexed, for `reason`; whatever it had before goes. With its state
        given, file_state() reports it, so an unchanged hostile file is not read again each time."""
        found = self.collection(collection)
        with transaction(self._conn):
            file_id = self._upsert_file(found.id, path, size, mtime_ns, sha256, "failed", shorten(reason, REASON_CHARS))
            self._conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
            self._bump(found.id)

    def remove_missing(self, collection: str, present_paths: Iterable[str | os.PathLike],
                       spared: Iterable[str | os.PathLike] = ()) -> int:
        """Forget the collection's files that are not among present_paths (deleted or moved since
        they were read), with their chunks; how many. Files under `spared` (folders that could
        not be reached this time) stay."""
        found = self.collection(collection)
        present = {os.fspath(path) for path in present_paths}
        kept = tuple(os.fspath(folder) for folder in spared)
        gone = [file_id for file_id, path in
                self._conn.execute("SELECT id, path FROM files WHERE collection_id = ?", (found.id,))
                if path not in present and not any(path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
                                                   for folder in kept)]
        if gone:
            with transaction(self._conn):
                for start in range(0, len(gone), ID_BATCH):
                    batch = gone[start:start + ID_BATCH]
                    self._conn.execute(f"DELETE FROM files WHERE id IN ({','.join('?' * len(batch))})", batch)
                self._bump(found.id)
        return len(gone)

    def has_files_under(self, collection: str, folder: str | os.PathLike) -> bool:
        """Whether any file the collection holds (indexed or failed) is `folder` or under it."""
        found = self.collection(collection)
        folder = os.fspath(folder)
        prefix = folder.rstrip(os.sep) + os.sep
        row = self._conn.execute(
            "SELECT 1 FROM files WHERE collection_id = ? AND (path = ? OR substr(path, 1, ?) = ?) LIMIT 1",
            (found.id, folder, len(prefix), prefix)).fetchone()
        return row is not None

    def failures(self, collection: str) -> list[FailedFile]:
        """The collection's files that could not be indexed, and why, by path."""
        found = self.collection(collection)
        rows = self._conn.execute("SELECT path, error FROM files WHERE collection_id = ? AND status = 'failed' "
                                  "ORDER BY path", (found.id,))
        return [FailedFile(Path(path), error) for path, error in rows]

    def stats(self, collection: str) -> CollectionStats:
        found = self.collection(collection)
        files, failed = self._conn.execute(
            "SELECT COUNT(*) FILTER (WHERE status = 'indexed'), COUNT(*) FILTER (WHERE status = 'failed') "
            "FROM files WHERE collection_id = ?", (found.id,)).fetchone()
        chunks, text_bytes, vector_bytes = self._conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(c.text AS BLOB))), 0), COALESCE(SUM(LENGTH(v.vector)), 0) "
            "FROM chunks c JOIN chunk_vectors v ON v.chunk_id = c.id WHERE c.collection_id = ?", (found.id,)).fetchone()
        return CollectionStats(files, failed, chunks, text_bytes, vector_bytes)

    def summaries(self) -> list[CollectionSummary]:
        """Every collection with its counts, roots and failures, by name."""
        return [CollectionSummary(found, self.stats(found.name), tuple(self.roots(found.name)),
                                  tuple(self.failures(found.name))) for found in self.list_collections()]

    # What search.py reads

    def load_vectors(self, collection_id: int, dims: int) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id of the collection (int64) and its vector, as one (n, dims) float32 matrix
        in the same order: read once, searched in memory. A vector of another length (a file
        written by hand) is damage."""
        ids, blobs = [], []
        for chunk_id, blob in self._conn.execute(
                "SELECT v.chunk_id, v.vector FROM chunks c JOIN chunk_vectors v ON v.chunk_id = c.id "
                "WHERE c.collection_id = ? ORDER BY c.id", (collection_id,)):
            ids.append(chunk_id)
            blobs.append(blob)
        joined = b"".join(blobs)
        if len(joined) != len(ids) * dims * STORED_VECTOR.itemsize:
            raise IndexDamaged(f"The document index {self.path} is damaged (a vector is not {dims} long).")
        matrix = np.frombuffer(joined, dtype=STORED_VECTOR).reshape(len(ids), dims)
        return np.asarray(ids, dtype=np.int64), matrix.astype(np.float32)

    def keyword_ranks(self, collection_id: int, match: str, limit: int) -> list[int]:
        """The ids of the collection's chunks that the FTS5 expression `match` finds, best BM25
        first (text weighs 1, heading 0.5), at most `limit`. `match` must already be safe
        (search.fts_query makes it so)."""
        expression = f"{{text heading}} : ({match})"
        if self._conn.execute("SELECT COUNT(*) FROM collections").fetchone()[0] > 1:
            # Only where there are others: the collection's token is in each of its chunks, and
            # reading its list took 6 to 10 ms of a search over 100,000 chunks.
            expression = f'collection_id : "{int(collection_id)}" AND {expression}'
        rows = self._conn.execute("SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY rank LIMIT ?",
                                  (expression, int(limit)))
        return [row[0] for row in rows]

    def term_chunks(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        """In how many chunks of the whole index each term is (its text or heading), counted up to
        cap + 1 only; terms no chunk has are left out. What a query's words would cost to score:
        FTS5 counts by walking a term's list of chunks, so "the" over 100,000 chunks took 7 ms
        counted in full (fts5vocab is no quicker), and a count past the cap is all the caller needs.
        Terms as the tokenizer writes them: folded, without accents."""
        found: dict[str, int] = {}
        for term in terms:
            count = self._conn.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM chunk_fts WHERE chunk_fts MATCH ? LIMIT ?)",
                (f'{{text heading}} : "{term.replace(chr(34), chr(34) * 2)}"', int(cap) + 1)).fetchone()[0]
            if count:
                found[term] = count
        return found

    def chunks(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        """The chunks with these ids and their files, by id (ids that are gone are left out)."""
        found: dict[int, StoredChunk] = {}
        for start in range(0, len(ids), ID_BATCH):
            batch = [int(chunk_id) for chunk_id in ids[start:start + ID_BATCH]]
            rows = self._conn.execute(
                "SELECT c.id, f.path, c.ordinal, c.text, c.page, c.heading FROM chunks c JOIN files f ON f.id = c.file_id "
                f"WHERE c.id IN ({','.join('?' * len(batch))})", batch)
            for chunk_id, path, ordinal, text, page, heading in rows:
                found[chunk_id] = StoredChunk(chunk_id, Path(path), ordinal, text, page, heading)
        return found

    # Inside

    def _upsert_file(self, collection_id: int, path: str | os.PathLike, size: int | None, mtime_ns: int | None,
                     sha256: str | None, status: str, error: str) -> int:
        return self._conn.execute(
            "INSERT INTO files (collection_id, path, size, mtime_ns, sha256, status, error, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (collection_id, path) DO UPDATE SET size = excluded.size, "
            "mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, status = excluded.status, error = excluded.error, "
            "indexed_at = excluded.indexed_at RETURNING id",
            (collection_id, os.fspath(path), size, mtime_ns, sha256, status, error, _utc_now())).fetchone()[0]

    def _bump(self, collection_id: int) -> None:
        self._conn.execute("UPDATE collections SET generation = generation + 1 WHERE id = ?", (collection_id,))


def _vectors(vectors: np.ndarray, rows: int, dims: int) -> np.ndarray:
    """vectors as STORED_VECTOR rows, checked: one per chunk, `dims` long, finite."""
    matrix = np.asarray(vectors)
    if matrix.ndim != 2 or matrix.shape != (rows, dims):
        raise DocumentIndexError(f"Expected {rows} vectors of {dims} numbers, got an array shaped {matrix.shape}.")
    matrix = np.ascontiguousarray(matrix, dtype=STORED_VECTOR)
    if not np.isfinite(matrix).all():
        raise DocumentIndexError("An embedding held a number that is not finite.")
    return matrix

