"""DocumentLibrary, the window's owner of the document collections: indexing queued on a thread
of its own with progress, cancel and resume after a quit, and questions answered on another, all
with the real embedding model (all-MiniLM-L6-v2 in llama.cpp) and a real index file."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from support.documents_folder import small_folder
from support.gated_embedder import GatedEmbedder
from support.model_files.embedding_model import ensure_minilm

from app.documents.index import DocumentIndex
from app.owners.document_settings import DocumentSettings
from app.owners.documents import Asked, DocumentLibrary

WAIT_MS = 60_000


@pytest.fixture(scope="module")
def minilm() -> Path:
    return ensure_minilm().gguf


@pytest.fixture
def folder(tmp_path) -> Path:
    return small_folder(tmp_path)


def library_at(tmp_path, minilm, qtbot, opened: list | None = None) -> DocumentLibrary:
    from app.engine.opening import open_embedder

    def opener(model):
        if opened is not None:
            opened.append(threading.current_thread().name)
        return open_embedder(minilm if model is None else model, tmp_path)

    settings = DocumentSettings(QSettings(str(tmp_path / "hearth.ini"), QSettings.Format.IniFormat))
    library = DocumentLibrary(settings, tmp_path / "documents.sqlite3", opener)
    qtbot.waitUntil(lambda: library.summaries == () and not library.indexing(), timeout=WAIT_MS)
    return library


def test_a_folder_is_indexed_with_progress_then_searched(tmp_path, folder, minilm, qtbot):
    opened: list[str] = []
    library = library_at(tmp_path, minilm, qtbot, opened)
    steps = []
    library.progress.connect(lambda name, step: steps.append((name, step)))
    with qtbot.waitSignal(library.indexed, timeout=WAIT_MS) as ended:
        library.add("home", [folder])
        assert library.indexing() == ("home",)
    name, report = ended.args
    assert name == "home" and (report.indexed, len(report.failed)) == (2, 1)
    assert steps[-1][1].done == steps[-1][1].total == 3
    qtbot.waitUntil(lambda: library.names() == ("home",) and not library.indexing(), timeout=WAIT_MS)
    [summary] = library.summaries
    assert (summary.stats.files, summary.stats.failed, summary.roots) == (2, 1, (folder,))
    assert summary.collection.finished and summary.failures[0].path.name == "broken.docx"
    with qtbot.waitSignal(library.retrieved, timeout=WAIT_MS) as answered:
        ticket = library.retrieve(["home"], "how long should bread dough be kneaded?", top=1)
    asked: Asked = answered.args[0]
    assert asked.ticket == ticket and not asked.error
    [hit] = asked.retrieval.hits
    assert hit.source.name == "bread.txt"
    assert opened == ["documents-index_0"]  # loaded once, for both threads
    library.close()


def test_a_cancelled_run_is_resumed_at_the_next_start(tmp_path, folder, minilm, qtbot):
    from app.engine.opening import open_embedder

    gated: list[GatedEmbedder] = []
    settings = DocumentSettings(QSettings(str(tmp_path / "hearth.ini"), QSettings.Format.IniFormat))
    library = DocumentLibrary(settings, tmp_path / "documents.sqlite3",
                              lambda _model: gated.append(GatedEmbedder(open_embedder(minilm, tmp_path))) or gated[-1])
    with qtbot.waitSignal(library.indexed, timeout=WAIT_MS) as ended:
        library.add("home", [folder])
        qtbot.waitUntil(lambda: bool(gated) and gated[0].embedding.is_set(), timeout=WAIT_MS)  # the first file
        library.cancel("home")
        gated[0].gate.set()
    assert ended.args[1].cancelled and ended.args[1].indexed == 1
    library.close()
    with DocumentIndex(tmp_path / "documents.sqlite3") as index:
        assert not index.collection("home").finished

    again = DocumentLibrary(settings, tmp_path / "documents.sqlite3", lambda _model: open_embedder(minilm, tmp_path))
    qtbot.waitUntil(lambda: again.names() == ("home",), timeout=WAIT_MS)
    with qtbot.waitSignal(again.indexed, timeout=WAIT_MS) as resumed:
        again.resume()
    report = resumed.args[1]
    assert (report.cancelled, report.unchanged, report.indexed, len(report.failed)) == (False, 1, 1, 1)
    qtbot.waitUntil(lambda: bool(again.summaries) and again.summaries[0].collection.finished, timeout=WAIT_MS)
    again.close()


def test_a_question_of_a_collection_that_is_gone_says_so(tmp_path, minilm, qtbot):
    library = library_at(tmp_path, minilm, qtbot)
    with qtbot.waitSignal(library.retrieved, timeout=WAIT_MS) as answered:
        library.retrieve(["nothing here"], "anything")
    assert answered.args[0].retrieval is None and "no collection named" in answered.args[0].error
    library.close()


def test_an_embedding_model_that_does_not_load_is_said_and_nothing_is_lost(tmp_path, folder, qtbot):
    def broken(_model):
        raise OSError("the model file is damaged")

    settings = DocumentSettings(QSettings(str(tmp_path / "hearth.ini"), QSettings.Format.IniFormat))
    library = DocumentLibrary(settings, tmp_path / "documents.sqlite3", broken)
    with qtbot.waitSignal(library.problem, timeout=WAIT_MS) as said:
        library.add("home", [folder])
    assert "could not be indexed" in said.args[0] and "damaged" in said.args[0]
    qtbot.waitUntil(lambda: not library.indexing(), timeout=WAIT_MS)
    library.close()


def damage(index_file: Path) -> None:
    """Every byte overwritten, as a bad disk or another program might."""
    size = index_file.stat().st_size
    with open(index_file, "r+b") as damaged:
        damaged.write(b"\xde\xad" * (size // 2))


def test_an_index_damaged_while_hearth_runs_is_moved_aside_and_begun_again(tmp_path, folder, minilm, qtbot):
    first = library_at(tmp_path, minilm, qtbot)
    with qtbot.waitSignal(first.indexed, timeout=WAIT_MS):
        first.add("home", [folder])
    first.close()
    library = library_at_existing(tmp_path, minilm, qtbot)  # the search thread has it open; the indexing thread not
    damage(tmp_path / "documents.sqlite3")
    with qtbot.waitSignal(library.problem, timeout=WAIT_MS) as said, \
            qtbot.waitSignal(library.indexed, timeout=WAIT_MS) as again:
        library.add("home", [folder])  # the indexing thread opens it: damaged, moved aside, a new one begun
    assert "moved aside" in said.args[0] and len([moved for moved in tmp_path.glob("documents.sqlite3.damaged-*") if not moved.name.endswith(("-wal", "-shm"))]) == 1
    assert again.args[1].indexed == 2
    with qtbot.waitSignal(library.retrieved, timeout=WAIT_MS) as answered:  # the search thread follows it there
        library.retrieve(["home"], "how long should dough rise")
    assert answered.args[0].retrieval.hits[0].source.name == "bread.txt"
    library.close()


def test_damage_met_by_a_read_is_checked_and_the_file_moved_aside(tmp_path, folder, minilm, qtbot):
    """SQLite keeps the pages it read, so a test cannot make a small index's open connection
    meet damage on cue: the read that met it (IndexDamaged) is stood in for by calling the
    library's answer to it on its thread, over a really damaged file."""
    from app.documents.index import IndexDamaged

    first = library_at(tmp_path, minilm, qtbot)
    with qtbot.waitSignal(first.indexed, timeout=WAIT_MS):
        first.add("home", [folder])
    first.close()
    library = library_at_existing(tmp_path, minilm, qtbot)
    damage(tmp_path / "documents.sqlite3")
    with qtbot.waitSignal(library.problem, timeout=WAIT_MS) as said:
        library._searcher.submit(library._recover, IndexDamaged("a page could not be read")).result(timeout=30)
    assert "moved aside" in said.args[0]
    library.refresh()
    qtbot.waitUntil(lambda: library.names() == (), timeout=WAIT_MS)  # a new, empty index: add the folders again
    library.close()


def library_at_existing(tmp_path, minilm, qtbot) -> DocumentLibrary:
    from app.engine.opening import open_embedder

    settings = DocumentSettings(QSettings(str(tmp_path / "hearth.ini"), QSettings.Format.IniFormat))
    library = DocumentLibrary(settings, tmp_path / "documents.sqlite3",
                              lambda model: open_embedder(minilm if model is None else model, tmp_path))
    qtbot.waitUntil(lambda: library.names() == ("home",), timeout=WAIT_MS)
    return library


def test_another_embedding_model_applies_at_once(tmp_path, folder, minilm, qtbot):
    from app.engine.opening import open_embedder

    asked: list = []
    settings = DocumentSettings(QSettings(str(tmp_path / "hearth.ini"), QSettings.Format.IniFormat))
    library = DocumentLibrary(settings, tmp_path / "documents.sqlite3",
                              lambda model: asked.append(model) or open_embedder(minilm, tmp_path))
    with qtbot.waitSignal(library.indexed, timeout=WAIT_MS):
        library.add("home", [folder])
    chosen = tmp_path / "another.gguf"
    library.set_embedding_model(chosen)  # Settings → Documents (the file read is the test's; the path is what counts)
    with qtbot.waitSignal(library.retrieved, timeout=WAIT_MS):
        library.retrieve(["home"], "dough")
    assert asked == [None, chosen] and library.settings.embedding_model == chosen
    library.close()


def test_a_model_chosen_during_a_run_stops_it_and_the_run_begins_again(tmp_path, folder, minilm, qtbot):
    from app.engine.opening import open_embedder

    gated: list[GatedEmbedder] = []
    settings = DocumentSettings(QSettings(str(tmp_path / "hearth.ini"), QSettings.Format.IniFormat))
    library = DocumentLibrary(settings, tmp_path / "documents.sqlite3",
                              lambda _model: gated.append(GatedEmbedder(open_embedder(minilm, tmp_path))) or gated[-1])
    reports = []
    library.indexed.connect(lambda name, report: reports.append(report))
    library.add("home", [folder])
    qtbot.waitUntil(lambda: bool(gated) and gated[0].embedding.is_set(), timeout=WAIT_MS)  # mid-file
    library.set_embedding_model(minilm)
    gated[0].gate.set()
    qtbot.waitUntil(lambda: len(gated) == 2 and gated[1].embedding.is_set(), timeout=WAIT_MS)
    gated[1].gate.set()
    qtbot.waitUntil(lambda: len(reports) == 2, timeout=WAIT_MS)
    # The batch under way when the model changed finished with the old one (its file kept under
    # the old model's name: a new model's run drops those, index.set_model); nothing after it did.
    assert reports[0].cancelled and reports[0].indexed == 1 and gated[0].calls == 1
    assert not reports[1].cancelled and reports[1].indexed + reports[1].unchanged == 3  # the .docx: failed, known
    library.close()
