"""Indexing a collection with the real embedding model (all-MiniLM-L6-v2 in llama.cpp) into a
real index: only what changed is read again, a hostile file is recorded with its reason and the
rest goes on, files gone leave, a cancelled run keeps what it did and the next goes on; and the
command line's `hearth docs` over it, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.model_files.embedding_model import ensure_minilm

from app.documents.index import DocumentIndex
from app.documents.indexing import EMPTIED, NOT_THERE, Progress, files_under, index_paths
from app.documents.search import DocumentSearch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder():
    from app.engine.llama.embedder import LlamaEmbedder

    model = LlamaEmbedder(ensure_minilm().gguf)
    yield model
    model.close()


@pytest.fixture
def folder(tmp_path) -> Path:
    docs = tmp_path / "docs"
    (docs / "notes").mkdir(parents=True)
    (docs / "garden.md").write_text("# Tomatoes\n\nWater tomatoes in the morning, deeply, twice a week.\n\n"
                                    "# Roses\n\nPrune roses in late winter before new growth starts.\n")
    (docs / "notes" / "bread.txt").write_text("Knead the dough for ten minutes, then let it rise for an hour.\n")
    (docs / "notes" / "fake.txt").write_bytes(b"\x00\x01\x02binary\x00" * 100)  # binary data named .txt
    (docs / "notes" / "image.png").write_bytes(b"\x89PNG not read: not a document format")
    os.symlink(docs, docs / "notes" / "loop")  # a link back up: never followed
    return docs


def run(index, folder, embedder, **options):
    return index_paths(index, "home", [folder], embedder, **options)


def test_a_folder_is_indexed_and_searched_and_a_hostile_file_is_said(tmp_path, folder, embedder):
    steps: list[Progress] = []
    with DocumentIndex(tmp_path / "index.sqlite3") as index:
        report = run(index, folder, embedder, progress=steps.append)
        assert (report.indexed, report.unchanged, report.removed, report.cancelled) == (2, 0, 0, False)
        [(bad, reason)] = report.failed
        assert bad.name == "fake.txt" and "binary" in reason
        assert steps[-1].done == steps[-1].total == 3 and steps[-1].failed == 1
        vector = embedder.embed(["when should I water my tomato plants?"])[0]
        [best, *_] = DocumentSearch(index).search("home", "when should I water my tomato plants?", vector)
        assert best.source.name == "garden.md" and "morning" in best.text and best.heading == "Tomatoes"
    assert [path.name for path in files_under([folder])] == ["garden.md", "bread.txt", "fake.txt"]


def test_only_what_changed_is_read_again_and_files_gone_leave(tmp_path, folder, embedder):
    with DocumentIndex(tmp_path / "index.sqlite3") as index:
        run(index, folder, embedder)
        again = run(index, folder, embedder)
        assert (again.indexed, again.unchanged, len(again.failed)) == (0, 3, 0)  # the hostile file too
        bread = folder / "notes" / "bread.txt"
        os.utime(bread, ns=(bread.stat().st_atime_ns, bread.stat().st_mtime_ns + 10**9))  # touched, same bytes
        assert run(index, folder, embedder).unchanged == 3
        bread.write_text("Bake the loaf at 230 degrees for forty minutes.\n")
        (folder / "garden.md").unlink()
        changed = run(index, folder, embedder)
        assert (changed.indexed, changed.removed) == (1, 1)
        assert index.stats("home").files == 1


def test_a_cancelled_run_keeps_what_it_did_and_the_next_goes_on(tmp_path, folder, embedder):
    cancel = threading.Event()

    def progress(step: Progress) -> None:
        if step.done == 1:
            cancel.set()  # Ctrl+C, or the window's Cancel, after the first file

    with DocumentIndex(tmp_path / "index.sqlite3") as index:
        first = run(index, folder, embedder, progress=progress, cancel=cancel)
        assert first.cancelled and first.removed == 0
        assert not index.collection("home").finished  # the window goes on with it at its next start
        rest = index_paths(index, "home", [], embedder)  # an update: the roots kept are walked
        assert rest.unchanged == first.indexed + len(first.failed) and not rest.cancelled
        assert index.stats("home").files == 2 and index.collection("home").finished


def test_a_folder_added_to_a_collection_adds_to_what_it_reads(tmp_path, folder, embedder):
    more = tmp_path / "more"
    more.mkdir()
    (more / "tea.txt").write_text("Steep green tea for two minutes at eighty degrees.\n")
    with DocumentIndex(tmp_path / "index.sqlite3") as index:
        run(index, folder, embedder)
        added = index_paths(index, "home", [more], embedder)
        assert (added.indexed, added.unchanged, added.removed) == (1, 3, 0)
        assert index.roots("home") == [folder, more] and index.stats("home").files == 3
        index.remove_root("home", more)
        assert index_paths(index, "home", [], embedder).removed == 1


def test_the_command_line_adds_lists_searches_and_removes(tmp_path, folder):
    model = str(ensure_minilm().gguf)
    env = dict(os.environ, HEARTH_HOME=str(tmp_path / "home"))

    def hearth(*args):
        return subprocess.run([sys.executable, "-m", "app", "docs", *map(str, args)], capture_output=True,
                              cwd=ROOT, env=env, timeout=120)

    added = hearth("add", "home", folder, "--embedding-model", model)
    assert added.returncode == 0, added.stderr.decode()
    said = added.stderr.decode()
    assert "2 read, 0 unchanged, 1 failed" in said and "fake.txt" in said
    [listed] = [json.loads(line) for line in hearth("list").stdout.decode().splitlines()]
    assert (listed["name"], listed["files"], listed["failed"]) == ("home", 2, 1)
    found = hearth("search", "home", "how long should dough rise", "--json", "--top", "2", "--embedding-model", model)
    assert found.returncode == 0, found.stderr.decode()
    hits = json.loads(found.stdout)
    assert Path(hits[0]["source"]).name == "bread.txt" and set(hits[0]) == {"source", "page", "text", "score"}
    assert hearth("remove", "home").returncode == 0
    assert hearth("list").stdout.decode() == ""
    unknown = hearth("search", "home", "x")
    assert unknown.returncode == 2 and "no collection named home" in unknown.stderr.decode()


def test_a_chat_answers_from_a_collection_and_lists_its_sources(tmp_path, folder, gemma_path):
    """`hearth chat MODEL QUESTION --docs NAME`: the chunks that answer go into the prompt as
    numbered sources before the question (with_sources), and the sources are listed after the reply."""
    env = dict(os.environ, HEARTH_HOME=str(tmp_path / "home"))
    model = str(ensure_minilm().gguf)

    def hearth(*args):
        return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, cwd=ROOT, env=env,
                              timeout=180)

    assert hearth("docs", "add", "home", folder, "--embedding-model", model).returncode == 0
    # The chat's embedding model is the default one, converted into Hearth's cache on first use:
    # the same conversion as the test's, so the collection is searched by meaning too.
    out = hearth("chat", gemma_path, "How long should bread dough rise?", "--docs", "home", "--docs-top", "2",
                 "--max-tokens", "8", "--temperature", "0")
    assert out.returncode == 0, out.stderr.decode()
    assert "searched by its words only" not in out.stderr.decode()
    alone = hearth("chat", gemma_path, "?", "--embedding-model", model)
    assert alone.returncode == 2 and "--embedding-model goes with --docs" in alone.stderr.decode()
    _reply, _, sources = out.stdout.decode().partition("\nSources:\n")
    assert sources.splitlines()[0].startswith("[1] ") and sources.splitlines()[0].endswith("bread.txt")


def test_sources_go_into_the_question_numbered():
    from app.conversation.sources import sources_of, with_sources
    from app.documents.types import Hit

    hits = [Hit(Path("/docs/a.pdf"), "Prune in winter.", 0.5, page=3), Hit(Path("/docs/b.md"), "Water daily.", 0.4)]
    asked = with_sources("When do I prune?", sources_of(hits))
    assert asked.startswith("Answer from the numbered sources") and asked.endswith("\n\nQuestion: When do I prune?")
    assert "[1] a.pdf, page 3\nPrune in winter." in asked and "[2] b.md\nWater daily." in asked
    assert with_sources("When?", ()) == "When?"


def test_a_folder_not_there_keeps_what_was_indexed_from_it(tmp_path, folder, embedder):
    usb = tmp_path / "usb"
    usb.mkdir()
    (usb / "tea.txt").write_text("Steep green tea for two minutes at eighty degrees.\n")
    with DocumentIndex(tmp_path / "index.sqlite3") as index:
        run(index, folder, embedder)
        index_paths(index, "home", [usb], embedder)
        usb.rename(tmp_path / "unplugged")  # the drive is not connected at the next update
        update = index_paths(index, "home", [], embedder)
        assert update.removed == 0 and update.unreachable == ((usb, NOT_THERE),)
        assert index.stats("home").files == 3 and index.collection("home").finished
        (tmp_path / "unplugged").rename(usb)
        assert index_paths(index, "home", [], embedder).unchanged == 4


def test_cancel_takes_a_batch_not_a_whole_long_file(tmp_path, embedder):
    from support.gated_embedder import GatedEmbedder

    docs = tmp_path / "long"
    docs.mkdir()
    long_file = docs / "long.txt"
    long_file.write_text("\n\n".join(f"Paragraph {n}: " + "words of a long document " * 40 for n in range(200)))
    gated, cancel, reports = GatedEmbedder(embedder_copy(embedder)), threading.Event(), []

    def indexing() -> None:  # as the window's indexing thread runs it, with its own connection
        with DocumentIndex(tmp_path / "index.sqlite3") as index:
            reports.append(index_paths(index, "home", [docs], gated, cancel=cancel))

    worker = threading.Thread(target=indexing)
    worker.start()
    assert gated.embedding.wait(60)  # the first batch of a file of many
    cancel.set()
    gated.gate.set()
    worker.join(60)
    [report] = reports
    assert report.cancelled and report.indexed == 0
    with DocumentIndex(tmp_path / "index.sqlite3") as index:
        assert index.file_state("home", long_file) is None  # not half-kept: read again next time
        assert not index.collection("home").finished


def embedder_copy(embedder):
    """The module's model, closed by its fixture, not by a test's wrapper."""
    class Borrowed:
        name, dims = embedder.name, embedder.dims
        embed, count_tokens = embedder.embed, embedder.count_tokens

        def close(self):
            pass

    return Borrowed()


def test_a_mount_point_left_empty_keeps_what_was_indexed_from_it(tmp_path, folder, embedder):
    with DocumentIndex(tmp_path / "index.sqlite3") as index:
        run(index, folder, embedder)
        kept = tmp_path / "away"
        folder.rename(kept)
        folder.mkdir()  # the mount point stays, an empty folder, while the drive is away
        update = run(index, folder, embedder)
        assert update.removed == 0 and update.unreachable == ((folder, EMPTIED),)
        assert index.stats("home").files == 2
