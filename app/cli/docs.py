"""`hearth docs add | list | remove | search`: the user's documents, indexed on this machine
(app/documents/), from the command line.

    hearth docs add NAME PATH...      index the files under the paths into collection NAME
                                      (again: only what changed is read; Ctrl+C keeps what is done)
    hearth docs list                  one JSON line per collection
    hearth docs remove NAME
    hearth docs search NAME QUERY [--top K] [--json]

Progress and failures go to stderr; stdout carries only the results. The embedding model is the
default one (all-MiniLM-L6-v2, converted to GGUF on first use) or --embedding-model FILE.gguf.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from ..common.text import printable
from ..documents.index import DocumentIndex, DocumentIndexError, open_or_rebuild
from ..owners import paths
from .args import UsageError

PROGRESS_EVERY = 25  # files between progress lines on stderr


def add_docs_parser(subparsers) -> None:
    docs = subparsers.add_parser("docs", help="your documents, indexed on this machine: add, list, remove, search")
    commands = docs.add_subparsers(dest="docs_command", metavar="COMMAND", required=True)
    add = commands.add_parser("add", help="index the files under PATHs into collection NAME (only what changed)")
    add.add_argument("name")
    add.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    add.add_argument("--embedding-model", type=Path, metavar="FILE.gguf",
                     help="an embedding GGUF (default: all-MiniLM-L6-v2, converted on first use)")
    add.set_defaults(run=run_docs_add)
    listing = commands.add_parser("list", help="each collection as a JSON line")
    listing.set_defaults(run=run_docs_list)
    remove = commands.add_parser("remove", help="forget a collection (the files stay as they are)")
    remove.add_argument("name")
    remove.set_defaults(run=run_docs_remove)
    search = commands.add_parser("search", help="the chunks of NAME that answer QUERY, best first")
    search.add_argument("name")
    search.add_argument("query")
    search.add_argument("--top", type=int, default=5, metavar="K", help="how many (default 5)")
    search.add_argument("--json", action="store_true", help="a JSON array of {source, page, text, score}")
    search.add_argument("--embedding-model", type=Path, metavar="FILE.gguf",
                        help="the model the collection was indexed with, if not the default")
    search.set_defaults(run=run_docs_search)


def open_embedder(model: Path | None):
    """The embedding model in llama.cpp (the default, converted on first use, unless given)."""
    from ..engine.embedding.default_model import EmbeddingModelUnavailable
    from ..engine.opening import open_embedder as opened

    try:
        return opened(model, paths.embedding_models_dir())  # in this process: a crash ends only this command
    except EmbeddingModelUnavailable as exc:
        raise UsageError(f"{exc} Or give one with --embedding-model FILE.gguf.") from None


@contextmanager
def _index():
    """The documents' index; a damaged one is moved aside (said on stderr) and a new one made."""
    try:
        index, moved = open_or_rebuild(paths.documents_index_path())
    except DocumentIndexError as exc:
        raise UsageError(str(exc)) from None
    if moved is not None:
        print(f"hearth: the document index was damaged; it was moved aside to {moved} and a new one begun",
              file=sys.stderr)
    try:
        yield index
    finally:
        index.close()


def run_docs_add(args) -> int:
    from ..documents.indexing import index_paths

    missing = [str(path) for path in args.paths if not path.exists()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    embedder = open_embedder(args.embedding_model)
    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda _signum, _frame: cancel.set())

    def progress(step) -> None:
        if step.current is None or step.done % PROGRESS_EVERY == 0:
            print(f"hearth: {step.done:,} of {step.total:,} files, {step.chunks:,} chunks"
                  + (f", {step.failed} failed" if step.failed else ""), file=sys.stderr, flush=True)

    try:
        with _index() as index:
            report = index_paths(index, args.name, args.paths, embedder, progress, cancel)
    finally:
        signal.signal(signal.SIGINT, previous)
        embedder.close()
    for path, reason in (*report.failed, *report.unreachable):
        print(f"hearth: {printable(str(path), limit=None)}: {reason}", file=sys.stderr)
    print(f"hearth: {report.indexed} read, {report.unchanged} unchanged, {len(report.failed)} failed, "
          f"{report.removed} gone, {report.chunks:,} chunks" + (" (cancelled: run again to go on)"
                                                                  if report.cancelled else ""), file=sys.stderr)
    return 130 if report.cancelled else 0


def run_docs_list(args) -> int:
    with _index() as index:
        for collection in index.list_collections():
            stats = index.stats(collection.name)
            print(json.dumps({"name": collection.name, "files": stats.files, "failed": stats.failed,
                              "chunks": stats.chunks, "model": collection.model}, ensure_ascii=False))
    return 0


def run_docs_remove(args) -> int:
    with _index() as index:
        _known(index, args.name)
        index.remove_collection(args.name)
    return 0


def run_docs_search(args) -> int:
    if args.top < 1:
        raise UsageError("--top must be at least 1")
    with _index() as index:
        _known(index, args.name)
    hits = find_sources(args.name, args.query, args.top, args.embedding_model)
    if args.json:
        print(json.dumps([{"source": str(hit.source), "page": hit.page, "text": hit.text, "score": hit.score}
                          for hit in hits], ensure_ascii=False))
        return 0
    for number, hit in enumerate(hits, start=1):
        where = f"{hit.source}" + (f", page {hit.page}" if hit.page else "")
        print(f"[{number}] {printable(where)}\n{printable(hit.text, limit=400)}\n")
    return 0


def find_sources(name: str, query: str, top: int, model: Path | None = None) -> list:
    """The `top` chunks of collection `name` that answer `query` (`hearth chat --docs`)."""
    from ..documents.retrieval import retrieve

    with _index() as index:
        _known(index, name)
        embedder = open_embedder(model)
        try:
            found = retrieve(index, [name], query, embedder, top)
        finally:
            embedder.close()
        if found.words_only:
            collection = index.collection(name)
            print(f"hearth: note: {printable(name)} was indexed with {printable(collection.model)}, not "
                  f"{printable(embedder.name)}: searched by its words only", file=sys.stderr)
        return list(found.hits)


def _known(index: DocumentIndex, name: str):
    names = {collection.name: collection for collection in index.list_collections()}
    if name not in names:
        shown = ", ".join(sorted(names)) or "none yet"
        raise UsageError(f"there is no collection named {printable(name)} (collections: {printable(shown)})")
    return names[name]
