"""The document index on a real SQLite file: files read again only when changed, a changed file's
chunks replaced in one go, missing files forgotten, a model change dropping the vectors, and a
damaged file found at open and rebuilt, never a crash."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from app.documents.index import (
    PAGE_SIZE,
    DocumentIndex,
    DocumentIndexError,
    FileState,
    IndexDamaged,
    open_or_rebuild,
)
from app.documents.index_schema import MIGRATIONS, SCHEMA_VERSION
from app.documents.types import Chunk

DIMS = 8


def unit_rows(count: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, DIMS)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def index(tmp_path):
    with DocumentIndex(tmp_path / "documents.sqlite3") as opened:
        opened.add_collection("notes", "test-model", DIMS)
        yield opened


def add(index: DocumentIndex, path: str, texts: list[str], mtime_ns: int = 1, sha: str = "a" * 64) -> None:
    chunks = [Chunk(text, page=number + 1, heading="Intro") for number, text in enumerate(texts)]
    index.replace_file("notes", path, 100, mtime_ns, sha, chunks, unit_rows(len(texts), seed=mtime_ns))


def test_collections_are_added_listed_and_removed(index):
    index.add_collection("papers", "test-model", DIMS)
    assert [c.name for c in index.list_collections()] == ["notes", "papers"]
    with pytest.raises(DocumentIndexError, match="already a collection"):
        index.add_collection("papers", "test-model", DIMS)
    add(index, "/a.txt", ["alpha"])
    index.remove_collection("notes")
    assert [c.name for c in index.list_collections()] == ["papers"]
    with pytest.raises(DocumentIndexError, match="no collection"):
        index.stats("notes")
    assert index._conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0] == 0


def test_an_unchanged_file_is_known_by_its_state(index):
    assert index.file_state("notes", "/a.txt") is None
    add(index, "/a.txt", ["alpha beta", "gamma"], mtime_ns=7, sha="b" * 64)
    assert index.file_state("notes", "/a.txt") == FileState(100, 7, "b" * 64)
    assert index.file_state("notes", Path("/a.txt")) == (100, 7, "b" * 64)
    assert index.file_state("notes", "/other.txt") is None


def test_a_changed_file_replaces_its_chunks(index):
    add(index, "/a.txt", ["old one", "old two", "old three"])
    before = index.collection("notes").generation
    add(index, "/a.txt", ["new text"], mtime_ns=2)
    stats = index.stats("notes")
    assert (stats.files, stats.chunks) == (1, 1)
    assert stats.text_bytes == len("new text") and stats.vector_bytes == DIMS * 2  # float16 on disk
    assert index.collection("notes").generation > before
    collection = index.collection("notes")
    assert index.keyword_ranks(collection.id, '"old"', 10) == []
    ids, matrix = index.load_vectors(collection.id, DIMS)
    assert len(ids) == 1 and matrix.dtype == np.float32 and np.allclose(matrix, unit_rows(1, seed=2), atol=1e-3)


def test_missing_files_leave_the_index(index):
    for name in ("a", "b", "c"):
        add(index, f"/{name}.txt", [f"text of {name}"])
    assert index.remove_missing("notes", ["/a.txt", Path("/c.txt")]) == 1
    assert index.file_state("notes", "/b.txt") is None and index.stats("notes").files == 2
    assert index.remove_missing("notes", ["/a.txt", "/c.txt"]) == 0


def test_a_failed_file_is_kept_with_its_reason_and_loses_its_chunks(index):
    add(index, "/a.pdf", ["readable once"])
    index.mark_failed("notes", "/a.pdf", "The PDF is cut short.\n" * 100, size=5, mtime_ns=9, sha256="c" * 64)
    stats = index.stats("notes")
    assert (stats.files, stats.failed, stats.chunks) == (0, 1, 0)
    (failed,) = index.failures("notes")
    assert failed.path == Path("/a.pdf") and failed.reason.startswith("The PDF is cut short.") and "\n" not in failed.reason
    assert index.file_state("notes", "/a.pdf") == (5, 9, "c" * 64)  # unchanged: not read again
    index.mark_failed("notes", "/b.txt", "binary data")
    assert index.file_state("notes", "/b.txt") is None  # its state unknown: read again next time


def test_vectors_of_the_wrong_shape_are_refused_and_nothing_is_written(index):
    with pytest.raises(DocumentIndexError, match="vectors of 8 numbers"):
        index.replace_file("notes", "/a.txt", 1, 1, "d" * 64, [Chunk("x")], np.zeros((1, 4), np.float32))
    with pytest.raises(DocumentIndexError, match="not finite"):
        index.replace_file("notes", "/a.txt", 1, 1, "d" * 64, [Chunk("x")], np.full((1, DIMS), np.nan))
    assert index.stats("notes").files == 0


def test_another_embedding_model_drops_the_vectors(index):
    add(index, "/a.txt", ["alpha"])
    assert not index.set_model("notes", "test-model", DIMS)
    assert index.set_model("notes", "bigger-model", 16)
    assert index.file_state("notes", "/a.txt") is None and index.stats("notes").chunks == 0
    assert (index.collection("notes").model, index.collection("notes").dims) == ("bigger-model", 16)


def test_a_collection_keeps_its_roots_and_whether_its_last_run_finished(index):
    assert index.roots("notes") == [] and not index.collection("notes").finished
    index.add_roots("notes", ["/home/u/papers", "/home/u/b.pdf", "/home/u/papers"])
    assert index.roots("notes") == [Path("/home/u/b.pdf"), Path("/home/u/papers")]
    index.remove_root("notes", "/home/u/b.pdf")
    assert index.roots("notes") == [Path("/home/u/papers")]
    index.set_finished("notes", True)
    assert index.collection("notes").finished and index.list_collections()[0].finished
    index.set_finished("notes", False)
    assert not index.collection("notes").finished


def test_an_index_of_the_first_schema_is_upgraded_and_its_collections_count_as_finished(tmp_path):
    path = tmp_path / "documents.sqlite3"
    with sqlite3.connect(path) as raw:
        raw.executescript(MIGRATIONS[0] + "PRAGMA user_version = 1;")
        raw.execute("INSERT INTO collections (name, created_at, model, dims) VALUES ('old', '2026-01-01', 'm', 8)")
    with DocumentIndex(path) as upgraded:
        [old] = upgraded.list_collections()
        assert old.finished and upgraded.roots("old") == []


def test_a_new_index_has_its_schema_wal_and_large_pages(tmp_path):
    path = tmp_path / "documents.sqlite3"
    DocumentIndex(path).close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE


def test_an_index_from_a_newer_hearth_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "documents.sqlite3"
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA user_version = 99")
    with pytest.raises(DocumentIndexError, match="newer version") as refused:
        open_or_rebuild(path)
    assert not isinstance(refused.value, IndexDamaged) and list(tmp_path.iterdir()) == [path]


def test_a_file_that_is_no_database_is_damaged_and_rebuilt(tmp_path):
    path = tmp_path / "documents.sqlite3"
    path.write_bytes(b"this is not an SQLite file at all" * 200)
    with pytest.raises(IndexDamaged, match="documents.sqlite3 is damaged"):
        DocumentIndex(path)
    index, moved = open_or_rebuild(path)
    with index:
        assert index.list_collections() == []
    assert moved is not None and moved.name.startswith("documents.sqlite3.damaged-")
    assert moved.read_bytes().startswith(b"this is not an SQLite file")


def test_damaged_pages_are_found_at_open_and_rebuilt(tmp_path):
    path = tmp_path / "documents.sqlite3"
    with DocumentIndex(path) as index:
        index.add_collection("notes", "test-model", DIMS)
        for number in range(40):
            add(index, f"/{number}.txt", [f"chunk {number} " + "lorem ipsum " * 300] * 3, mtime_ns=number + 1)
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = path.stat().st_size // PAGE_SIZE
    with open(path, "r+b") as file:
        file.seek(pages // 2 * PAGE_SIZE)
        file.write(b"\xde\xad\xbe\xef" * (PAGE_SIZE // 4) * 3)
    with pytest.raises(IndexDamaged):
        DocumentIndex(path, check=True)
    index, moved = open_or_rebuild(path)
    with index:
        assert moved is not None and index.list_collections() == []


def test_a_damaged_page_met_later_is_a_typed_error(tmp_path):
    path = tmp_path / "documents.sqlite3"
    with DocumentIndex(path) as index:
        index.add_collection("notes", "test-model", DIMS)
        for number in range(40):
            add(index, f"/{number}.txt", ["lorem ipsum " * 300] * 3, mtime_ns=number + 1)
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = path.stat().st_size // PAGE_SIZE
    with open(path, "r+b") as file:
        file.seek((pages - 3) * PAGE_SIZE)
        file.write(b"\xde\xad\xbe\xef" * (PAGE_SIZE // 4) * 2)
    with DocumentIndex(path) as index:  # no check: the damage is met by a read
        with pytest.raises(DocumentIndexError) as met:
            collection = index.collection("notes")
            index.load_vectors(collection.id, DIMS)
            index.stats("notes")
            index.keyword_ranks(collection.id, '"lorem"', 10)
    assert isinstance(met.value.__cause__, sqlite3.DatabaseError)
