"""DocumentLibrary: the user's document collections for the whole application, on the GUI thread.

It owns two worker threads, each with its own connection to the document index (an SQLite
connection stays on its thread; WAL lets one write while the other reads):
- the indexing thread runs one collection's indexing at a time (documents/indexing.py), queued in
  the order asked, each cancellable; progress comes back as signals. A collection whose last run
  was cut short (Hearth quit, or it crashed) is taken up again by `resume()`, which the window
  calls once it shows.
- the search thread answers questions (documents/retrieval.py) for replies: a reply asked while
  a folder is being indexed does not wait behind it, only behind the batch being embedded.

Both use one embedding model (the default, converted on first use, or the GGUF chosen in
Settings → Documents), loaded on first use by whichever thread needs it first; llama.cpp's
context is not for two threads at once, so each use holds a lock (a search waits at most for one
batch of chunks, about a third of a second). A damaged index, found at open or by any read while
Hearth runs, is moved aside and a new one begun, and the user is told (`problem`), as the command
line does: it holds nothing the user's files cannot give again.

Everything from these threads reaches the GUI thread as queued signals; nothing here blocks it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from ..documents.index import CollectionSummary, DocumentIndex, DocumentIndexError, IndexDamaged, open_or_rebuild
from ..documents.indexing import IndexReport, index_paths
from ..documents.retrieval import Retrieval, retrieve
from ..documents.search import DocumentSearch
from ..documents.types import EmbeddingStopped
from ..engine.embedding.types import Embedder
from . import paths
from .document_settings import DocumentSettings

log = logging.getLogger(__name__)


def _profile_embedder(model: Path | None) -> Embedder:
    """The embedding model, in a process of its own (llama.cpp never runs in the window's); on a
    worker thread, when first needed: the default one is converted the first time."""
    from ..engine.embedding.default_model import embedding_model
    from ..engine.process.embedder import ProcessEmbedder

    return ProcessEmbedder(embedding_model(model, paths.embedding_models_dir()))


@dataclass(frozen=True)
class IndexingJob:
    """One run asked for: the collection and the folders or files it adds (none: an update)."""

    name: str
    paths: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Asked:
    """A question's answer for the caller of DocumentLibrary.retrieve: the sources found, or why
    none could be (`error`, for the user)."""

    ticket: int
    retrieval: Retrieval | None
    error: str = ""


class _Embedding:
    """The one embedding model both threads use, loaded on first use, one use at a time.

    `wanted` (the GGUF chosen, None: the default) is set on the GUI thread and read here: the
    settings file's QSettings object is the GUI thread's alone. Choosing another model bumps
    the generation; the model is swapped at its next use, and a run begun with the old one
    stops rather than mix the two models' vectors in one collection (EmbeddingStopped)."""

    def __init__(self, opener: Callable[[Path | None], Embedder], wanted: Path | None):
        self._opener = opener
        self._model: Embedder | None = None
        self.loaded = -1  # the generation the loaded model is of
        self._choice: tuple[Path | None, int] = (wanted, 0)  # one tuple, replaced whole: read without the lock
        self.lock = threading.Lock()

    @property
    def generation(self) -> int:
        return self._choice[1]

    @property
    def wanted(self) -> Path | None:
        return self._choice[0]

    def want(self, model: Path | None) -> None:
        """Another model from now on. Never waits: the GUI thread calls it, and the lock may be
        held for a batch's embedding."""
        self._choice = (model, self._choice[1] + 1)

    def model(self, expected: int | None = None) -> Embedder:
        """The model wanted now (loaded now if not yet); call with `lock` held. `expected`: the
        generation the caller began with; another one chosen since is EmbeddingStopped (read
        once here, so a choice made meanwhile cannot slip between a check and the load)."""
        wanted, generation = self._choice
        if expected is not None and expected != generation:
            raise EmbeddingStopped("another embedding model was chosen")
        if self._model is not None and self.loaded != generation:
            self._model.close()
            self._model = None
        if self._model is None:
            self._model, self.loaded = self._opener(wanted), generation
        return self._model

    def close(self) -> None:
        with self.lock:
            if self._model is not None:
                self._model.close()
                self._model = None


class _LockedEmbedder:
    """The shared model as an Embedder for one run or one question, each call holding the lock:
    indexing embeds a batch at a time, and a search may go between two batches. If another
    model was chosen since it began, it stops (EmbeddingStopped) instead of embedding with it."""

    def __init__(self, embedding: _Embedding):
        self._embedding = embedding
        with embedding.lock:
            model = embedding.model()
            self.name, self.dims, self._generation = model.name, model.dims, embedding.loaded

    def _model(self) -> Embedder:
        return self._embedding.model(self._generation)

    def embed(self, texts):
        with self._embedding.lock:
            return self._model().embed(texts)

    def count_tokens(self, text: str) -> int:
        with self._embedding.lock:
            return self._model().count_tokens(text)

    def close(self) -> None:  # the model is the library's, closed with it
        pass


class DocumentLibrary(QObject):
    """The collections, their indexing and the questions asked of them.

    Signals:
        collectionsChanged(object): every collection as a tuple of CollectionSummary, by name,
            after anything changed them (and once the index is first read).
        indexingChanged(object): the collections being indexed or waiting to be, as a tuple of
            names, the one running first ( (): none).
        progress(str, Progress): how the named collection's run is going.
        indexed(str, IndexReport): the named collection's run ended (cancelled or not).
        retrieved(Asked): a question's sources (DocumentLibrary.retrieve's ticket says which).
        problem(str): something the user should read (a damaged index moved aside, a model that
            does not load, a folder that cannot be indexed).
    """

    collectionsChanged = Signal(object)
    indexingChanged = Signal(object)
    progress = Signal(str, object)
    indexed = Signal(str, object)
    retrieved = Signal(object)
    problem = Signal(str)
    _ran = Signal(object, object)  # the indexing thread -> the GUI thread: the job, its report (or None)
    _set_summaries = Signal(object)  # a worker thread -> the GUI thread: the collections read

    def __init__(self, settings: DocumentSettings, index_path: Path | None = None,
                 open_embedder: Callable[[Path | None], Embedder] | None = None, parent: QObject | None = None):
        """`index_path`: the index file (the profile's by default). `open_embedder(model)`: the
        embedding model (None: the default), loaded on a worker thread when first needed
        (engine/opening.py's, with the profile's model cache, by default)."""
        super().__init__(parent)
        self.settings = settings
        self._index_path = index_path if index_path is not None else paths.documents_index_path()
        self._embedding = _Embedding(open_embedder or _profile_embedder, settings.embedding_model)
        self._indexer = ThreadPoolExecutor(1, thread_name_prefix="documents-index")
        self._searcher = ThreadPoolExecutor(1, thread_name_prefix="documents-search")
        self._local = threading.local()  # each thread's DocumentIndex (and its search's cache)
        self._opening = threading.Lock()
        self._generation = 0  # bumped when a damaged index was moved aside: each thread opens the new one
        self._jobs: deque[IndexingJob] = deque()  # asked, not begun (GUI thread only)
        self._running: IndexingJob | None = None
        self._cancel = threading.Event()
        self._summaries: tuple[CollectionSummary, ...] = ()
        self._tickets = 0
        self._closed = False
        self._ran.connect(self._on_ran)
        self._set_summaries.connect(self._store_summaries)
        self.refresh()

    # -- the window's API -----------------------------------------------------------------------

    @property
    def summaries(self) -> tuple[CollectionSummary, ...]:
        """The collections as last read (collectionsChanged says when that changes)."""
        return self._summaries

    def names(self) -> tuple[str, ...]:
        return tuple(summary.name for summary in self._summaries)

    def indexing(self) -> tuple[str, ...]:
        """The collection being indexed, then those waiting, by name."""
        running = (self._running.name,) if self._running is not None else ()
        return running + tuple(job.name for job in self._jobs)

    def add(self, name: str, paths: Sequence[Path]) -> None:
        """Index the folders and files into collection `name` (made if new; only what changed
        is read again), after the runs already asked for."""
        self._ask(IndexingJob(name, tuple(Path(path) for path in paths)))

    def update(self, name: str) -> None:
        """Bring the collection up to date with its folders and files."""
        self._ask(IndexingJob(name))

    def resume(self) -> None:
        """Take up again every collection whose last run was cut short."""
        for summary in self._summaries:
            if not summary.collection.finished and summary.name not in self.indexing():
                self._ask(IndexingJob(summary.name))

    def cancel(self, name: str) -> None:
        """Stop indexing `name` (what is done stays; an update goes on from there)."""
        waiting = [job for job in self._jobs if job.name != name]
        if len(waiting) != len(self._jobs):
            self._jobs = deque(waiting)
            self.indexingChanged.emit(self.indexing())
        if self._running is not None and self._running.name == name:
            self._cancel.set()

    def remove(self, name: str) -> None:
        """Forget the collection (the files stay as they are); a run of it is cancelled first."""
        self.cancel(name)
        self._submit(self._indexer, lambda index: index.remove_collection(name))

    def remove_root(self, name: str, path: Path) -> None:
        """The collection no longer reads this folder or file: its files leave it (an update)."""
        self._submit(self._indexer, lambda index: index.remove_root(name, path))
        self.update(name)

    def set_embedding_model(self, model: Path | None) -> None:
        """Index and search with this embedding GGUF from now on (None: the default), kept in the
        settings. The loaded one is let go at the next use; a run under way stops after its batch
        and begins again with the new model. Each collection made with another model is embedded
        again at its next update, and searched by its words only until then (retrieval.py)."""
        if model == self._embedding.wanted:
            return
        self.settings.embedding_model = model
        self._embedding.want(model)
        if self._running is not None and not self._cancel.is_set():  # one cancelled or removed stays so
            self._ask(IndexingJob(self._running.name))  # after the run stopped by the change

    def refresh(self) -> None:
        """Read the collections again (collectionsChanged)."""
        self._submit(self._searcher, lambda _index: None)

    def retrieve(self, names: Sequence[str], query: str, top: int | None = None) -> int:
        """Ask for the sources of `query` in the collections `names`; the answer comes as
        retrieved(Asked) with the ticket returned here."""
        self._tickets += 1
        ticket, names, top = self._tickets, tuple(names), top or self.settings.sources_per_reply
        self._searcher.submit(self._retrieve, ticket, names, query, top)
        return ticket

    def search(self, names: Sequence[str], query: str, top: int | None = None) -> Future:
        """The sources of `query` in the collections `names`, as a future Retrieval resolved on
        the search thread (the model's search_documents tool: documents_tool.py); a failure is
        the future's DocumentIndexError, or another exception where the model did not load."""
        names, top = tuple(names), top or self.settings.sources_per_reply
        return self._searcher.submit(self._search_now, names, query, top)

    def close(self) -> None:
        """Before Hearth quits: the run in progress stops after its batch (what is done stays),
        and the threads end."""
        self._closed = True
        self._jobs.clear()
        self._cancel.set()
        for pool in (self._indexer, self._searcher):
            pool.submit(self._close_here)  # each thread's connection, on its thread: the last one checkpoints the WAL
        self._indexer.shutdown(wait=True)
        self._searcher.shutdown(wait=True)
        self._embedding.close()

    # -- the indexing queue (GUI thread) ----------------------------------------------------------

    def _ask(self, job: IndexingJob) -> None:
        if self._closed or any(waiting == job for waiting in self._jobs):
            return
        self._jobs.append(job)
        self._next()
        self.indexingChanged.emit(self.indexing())

    def _next(self) -> None:
        if self._running is not None or not self._jobs:
            return
        self._running = self._jobs.popleft()
        self._cancel = threading.Event()
        self._indexer.submit(self._index, self._running, self._cancel)

    def _on_ran(self, job: IndexingJob, report: IndexReport | None) -> None:
        self._running = None
        if report is not None:
            if report.unreachable:  # one message for the run, however many folders
                self.problem.emit(f"{job.name}: " + "; ".join(f"{folder} {why}" for folder, why in report.unreachable))
            self.indexed.emit(job.name, report)
        self._next()
        self.indexingChanged.emit(self.indexing())

    # -- the worker threads ---------------------------------------------------------------------

    def _index_here(self) -> DocumentIndex:
        """This thread's index, opened on first use and again after the file was rebuilt (a
        damaged one moved aside, and said)."""
        index = getattr(self._local, "index", None)
        if index is not None and self._local.generation != self._generation:
            index.close()  # the other thread moved the damaged file aside: this one still reads it
            index = None
        if index is None:
            with self._opening:  # two threads creating or upgrading one file at once: one is refused "locked"
                index, moved = open_or_rebuild(self._index_path)
                if moved is not None:
                    self._generation += 1
                self._local.generation = self._generation
            if moved is not None:
                self._said_moved(moved)
            self._local.index = index
            self._local.search = DocumentSearch(index)
        return index

    def _close_here(self) -> None:
        index = getattr(self._local, "index", None)
        if index is not None:
            index.close()
            self._local.index = None

    def _recover(self, exc: DocumentIndexError) -> None:
        """This thread met damage in the index while Hearth runs: the file is checked again and,
        damaged, moved aside for a new one (the other thread follows at its next use)."""
        if not isinstance(exc, IndexDamaged):
            return
        with self._opening:
            stale = getattr(self._local, "index", None)
            if stale is not None:
                stale.close()
                self._local.index = None
            if getattr(self._local, "generation", self._generation) != self._generation:
                return  # the other thread rebuilt it already
            try:
                index, moved = open_or_rebuild(self._index_path)  # quick_check reads every page
            except (DocumentIndexError, OSError):  # not even moved aside: said by the caller, tried at the next use
                return
            index.close()
            if moved is not None:
                self._generation += 1
        if moved is not None:
            self._said_moved(moved)

    def _said_moved(self, moved: Path) -> None:
        self.problem.emit(f"The document index was damaged; it was moved aside to {moved} and a new "
                          "one begun. Add your folders again to index them.")

    def _index(self, job: IndexingJob, cancel: threading.Event) -> None:
        report = None
        try:
            index = self._index_here()
            embedder = _LockedEmbedder(self._embedding)
            report = index_paths(index, job.name, job.paths, embedder,
                                 lambda step: self.progress.emit(job.name, step), cancel)
        except DocumentIndexError as exc:
            self._recover(exc)
            self.problem.emit(f"{job.name} could not be indexed: {exc}")
        except Exception as exc:  # the embedding model would not load: said, never a traceback in a thread
            log.exception("indexing %s failed", job.name)
            self.problem.emit(f"{job.name} could not be indexed: {exc}")
        finally:
            try:
                self._publish()
            finally:
                self._ran.emit(job, report)  # whatever happened, the queue goes on

    def _submit(self, pool: ThreadPoolExecutor, change: Callable[[DocumentIndex], None]) -> None:
        """Run a change of the index on that pool's thread, then read the collections again."""
        if not self._closed:
            pool.submit(self._change, change)

    def _change(self, change: Callable[[DocumentIndex], None]) -> None:
        try:
            change(self._index_here())
        except DocumentIndexError as exc:
            self._recover(exc)
            self.problem.emit(str(exc))
        self._publish()

    def _publish(self) -> None:
        try:
            summaries = tuple(self._index_here().summaries())
        except DocumentIndexError as exc:
            self._recover(exc)
            self.problem.emit(str(exc))
            return
        self._set_summaries.emit(summaries)

    def _search_now(self, names: tuple[str, ...], query: str, top: int) -> Retrieval:
        try:
            return retrieve(self._index_here(), names, query, _LockedEmbedder(self._embedding), top, self._local.search)
        except DocumentIndexError as exc:
            self._recover(exc)
            raise

    def _retrieve(self, ticket: int, names: tuple[str, ...], query: str, top: int) -> None:
        try:
            self.retrieved.emit(Asked(ticket, self._search_now(names, query, top)))
        except DocumentIndexError as exc:
            self.retrieved.emit(Asked(ticket, None, str(exc)))
        except Exception as exc:  # the embedding model would not load
            log.exception("searching %s failed", names)
            self.retrieved.emit(Asked(ticket, None, f"Your documents could not be searched: {exc}"))

    def _store_summaries(self, summaries: tuple[CollectionSummary, ...]) -> None:
        self._summaries = summaries
        self.collectionsChanged.emit(summaries)
