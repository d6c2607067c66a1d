"""Indexing a collection: the files under the paths given, each read, chunked, embedded and
kept, one file per transaction, so a quit (or Ctrl+C, or the window's Cancel) leaves every file
done so far in the index and the next run goes on from there.

Only what changed is read again: a file whose size and modification time are as recorded is
skipped without opening it; one whose size or time changed is hashed, and read only if its
bytes did. A file that cannot be read (damaged, hostile, not what its name says) is recorded
with its reason and its state, so it is not tried again until it changes, and the rest goes on.
The paths given are kept as the collection's roots: each run walks all of them (adding a folder
adds to what the collection reads), and files gone from every root leave the index at the end
of a run that was not cancelled, which also marks the collection finished (Collection.finished).

A folder is walked without following links (a link may point anywhere, or loop), in a stable
order, taking the files whose suffix a reader reads (readers.SUPPORTED_SUFFIXES).
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine.embedding.types import Embedder
from .chunking import chunk_passages
from .index import DocumentIndex
from .limits import EMBED_BATCH
from .readers import SUPPORTED_SUFFIXES, read_document
from .types import Chunk, DocumentError, EmbeddingStopped

KEPT = "what was indexed from it is kept (Remove folder forgets it)"
NOT_THERE = f"is not there (a drive not connected, or moved?): {KEPT}"
EMPTIED = f"is empty now (a drive not connected?): {KEPT}"


@dataclass(frozen=True)
class Progress:
    """Where a run is: files seen and of how many, the chunks embedded, the files that failed,
    and the file being read (None between files)."""

    done: int
    total: int
    chunks: int
    failed: int
    current: Path | None = None


@dataclass(frozen=True)
class IndexReport:
    """How a run ended: files read anew, left as they were, failed (each with its reason),
    removed because they are gone, chunks written, whether it was cancelled, and the folders it
    could not reach."""

    indexed: int
    unchanged: int
    failed: tuple[tuple[Path, str], ...]
    removed: int
    chunks: int
    cancelled: bool
    unreachable: tuple[tuple[Path, str], ...] = ()  # roots or folders not there or not listed: their files kept


def files_under(paths: Sequence[Path]) -> list[Path]:
    """Every readable-format file under `paths` (files named directly, whatever their suffix,
    and the supported files in folders, walked without following links), absolute, sorted,
    each once."""
    return walk_roots(paths)[0]


def walk_roots(paths: Sequence[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """files_under's files, and the roots or folders that could not be read, each with why: a
    root that is not there (a drive not connected, a share offline, a folder moved) or a folder
    that could not be listed. What was indexed from those is kept, not taken for deleted."""
    found: set[Path] = set()
    unreachable: list[tuple[Path, str]] = []
    for path in paths:
        path = Path(os.path.abspath(path))
        if not os.path.lexists(path):
            unreachable.append((path, NOT_THERE))
        elif path.is_dir() and not path.is_symlink():
            found.update(_walk(path, unreachable))
        else:
            found.add(path)
    return sorted(found), unreachable


def _walk(folder: Path, unreachable: list[tuple[Path, str]]) -> Iterator[Path]:
    def unlisted(error: OSError) -> None:
        unreachable.append((Path(error.filename or folder), f"could not be listed ({error.strerror or error}): {KEPT}"))

    for root, dirs, files in os.walk(folder, followlinks=False, onerror=unlisted):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        for name in files:
            if not name.startswith(".") and Path(name).suffix.lower() in SUPPORTED_SUFFIXES:
                yield Path(root) / name


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def index_paths(index: DocumentIndex, collection: str, paths: Sequence[Path], embedder: Embedder,
                progress: Callable[[Progress], None] = lambda _progress: None,
                cancel: threading.Event | None = None) -> IndexReport:
    """Add `paths` to `collection`'s roots and bring it up to date with the files under all of
    them (no paths: an update of what it has). It is made if new, and embedded again if it was
    made with another model. Returns how it went; never raises for a file, only for the index
    itself (DocumentIndexError)."""
    cancel = cancel or threading.Event()
    names = {found.name for found in index.list_collections()}
    if collection not in names:
        index.add_collection(collection, embedder.name, embedder.dims)
    else:
        index.set_model(collection, embedder.name, embedder.dims)
    index.add_roots(collection, paths)
    index.set_finished(collection, False)
    roots = index.roots(collection)
    files, unreachable = walk_roots(roots)
    # A folder that lists nothing where files were indexed is a mount point with its drive away
    # (it stays as an empty folder), not a folder whose files were all deleted: kept, and said.
    unreachable += [(root, EMPTIED) for root in roots if root.is_dir() and not any(_under(path, root) for path in files)
                    and index.has_files_under(collection, root)]
    # A subfolder no one may list (lost+found, System Volume Information) is said only where
    # something indexed from it is kept; it is spared either way.
    reported = [(folder, why) for folder, why in unreachable
                if folder in roots or index.has_files_under(collection, folder)]
    indexed = unchanged = chunks = 0
    failed: list[tuple[Path, str]] = []
    stopped = False
    for done, path in enumerate(files):
        if cancel.is_set():
            break
        progress(Progress(done, len(files), chunks, len(failed), path))
        try:
            outcome = _index_file(index, collection, path, embedder, cancel)
        except EmbeddingStopped:  # cancelled mid-file, or another model chosen: the file is read next time
            stopped = True
            break
        if isinstance(outcome, str):
            failed.append((path, outcome))
        elif outcome is None:
            unchanged += 1
        else:
            indexed += 1
            chunks += outcome
    cancelled = stopped or cancel.is_set()
    removed = 0 if cancelled else index.remove_missing(collection, files, spared=[root for root, _ in unreachable])
    if not cancelled:
        index.set_finished(collection, True)
    progress(Progress(len(files) if not cancelled else indexed + unchanged + len(failed), len(files), chunks,
                      len(failed)))
    return IndexReport(indexed, unchanged, tuple(failed), removed, chunks, cancelled, tuple(reported))


def _index_file(index: DocumentIndex, collection: str, path: Path, embedder: Embedder,
                cancel: threading.Event) -> int | str | None:
    """The chunks written for the file, None when it was unchanged, or why it failed."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    size, mtime_ns = info.st_size, info.st_mtime_ns
    recorded = index.file_state(collection, path)
    if recorded is not None and (recorded.size, recorded.mtime_ns) == (size, mtime_ns):
        return None
    digest = None
    try:
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError("is not a regular file (a link, a folder or a device)")
        digest = sha256_file(path)
        if recorded is not None and recorded.sha256 == digest:
            index.touch_file(collection, path, size, mtime_ns)  # touched, not changed: not read again
            return None
        found = chunk_passages(read_document(path), lambda text: _go_on(cancel) and embedder.count_tokens(text))
    except (DocumentError, OSError) as exc:
        reason = str(exc) if isinstance(exc, DocumentError) else f"cannot be read ({exc.strerror or exc})"
        index.mark_failed(collection, path, reason, size=size, mtime_ns=mtime_ns, sha256=digest)
        return reason
    index.replace_file(collection, path, size, mtime_ns, digest, found, _embed(embedder, found, cancel))
    return len(found)


def _go_on(cancel: threading.Event) -> bool:
    """True, unless the run was cancelled: then EmbeddingStopped (chunking a 20-million-character
    file takes seconds: Cancel and Quit need not wait for it)."""
    if cancel.is_set():
        raise EmbeddingStopped("cancelled")
    return True


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _embed(embedder: Embedder, chunks: Sequence[Chunk], cancel: threading.Event) -> np.ndarray:
    """The chunks' vectors, a batch at a time; each chunk is embedded with its heading before
    it (the chunk's own text leaves it out), so a section's title counts for its meaning."""
    texts = [f"{chunk.heading}\n{chunk.text}" if chunk.heading else chunk.text for chunk in chunks]
    rows = []
    for start in range(0, len(texts), EMBED_BATCH):
        if cancel.is_set():  # a long file need not finish first: Cancel and Quit take a batch's time
            raise EmbeddingStopped("cancelled")
        rows.append(embedder.embed(texts[start:start + EMBED_BATCH]))
    return np.concatenate(rows) if rows else np.zeros((0, embedder.dims), dtype=np.float32)
