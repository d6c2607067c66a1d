"""ChatSession with documents: a question asked of the conversation's collections has its sources
found first (on the library's search thread, with the real embedding model), kept with it, and
read by the reply; Regenerate reads the same ones; Stop ends the wait; a failed search is said and
the reply goes on. The backend is scripted (it records what it was asked), the store and the
index are real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from support.model_files.embedding_model import ensure_minilm

from app.conversation.sources import INSTRUCTION
from app.documents.index import DocumentIndex
from app.owners.chat_session import SOURCES_WAIT_MESSAGE, ChatSession
from app.owners.conversation_documents import ConversationDocuments
from app.owners.document_settings import DocumentSettings
from app.owners.documents import DocumentLibrary
from app.store import ConversationStore

WAIT_MS = 60_000


@pytest.fixture
def library(qtbot, tmp_path):
    from app.engine.opening import open_embedder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bread.txt").write_text("Knead the dough for ten minutes, then let it rise for an hour.\n")
    (docs / "garden.md").write_text("# Roses\n\nPrune roses in late winter before new growth starts.\n")
    settings = DocumentSettings(QSettings(str(tmp_path / "documents.ini"), QSettings.Format.IniFormat))
    settings.sources_per_reply = 1
    library = DocumentLibrary(settings, tmp_path / "documents.sqlite3",
                              lambda model: open_embedder(ensure_minilm().gguf if model is None else model, tmp_path))
    with qtbot.waitSignal(library.indexed, timeout=WAIT_MS):
        library.add("kitchen", [docs])
    qtbot.waitUntil(lambda: library.names() == ("kitchen",), timeout=WAIT_MS)
    yield library
    library.close()


@pytest.fixture
def session(qtbot, tmp_path, scripted_models, library):
    store = ConversationStore(tmp_path / "conversations.sqlite3")
    with qtbot.waitSignal(scripted_models.modelLoaded, timeout=WAIT_MS):
        scripted_models.load(Path("/models/gemma.gguf"))
    session = ChatSession(store, scripted_models._bridge, scripted_models, documents=ConversationDocuments(library))
    yield session
    store.close()


def test_a_question_is_answered_from_its_sources_kept_with_it(qtbot, session, script):
    session.choose_collections(("kitchen",))
    waits = []
    session.waitingChanged.connect(waits.append)
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.send("How long should the dough rise?")
        assert session.busy and waits == [SOURCES_WAIT_MESSAGE]
    question = session.store.messages(session.conversation_id)[0]
    [source] = question.sources
    assert Path(source.path).name == "bread.txt" and "rise for an hour" in source.text
    messages, _params = script.requests[-1]
    asked = messages[-1]["content"]
    assert asked.startswith(INSTRUCTION) and "[1] bread.txt\nKnead the dough" in asked
    assert asked.endswith("Question: How long should the dough rise?")
    assert session.store.get_conversation(session.conversation_id).collections == ("kitchen",)

    # Regenerate reads the very same prompt (no new search), and so does every later turn.
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.regenerate()
    assert script.requests[-1][0] == messages
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        session.send("And when do I prune roses?")
    later, _params = script.requests[-1]
    assert later[: len(messages)] == messages and "[1] garden.md\nPrune roses" in later[-1]["content"]


def test_without_collections_a_question_goes_as_it_is(qtbot, session, script):
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        session.send("Hello")
    assert script.requests[-1][0][-1] == {"role": "user", "content": "Hello"}
    assert session.store.messages(session.conversation_id)[0].sources == ()


def test_stop_ends_the_wait_for_sources(qtbot, session, script):
    session.choose_collections(("kitchen",))
    with qtbot.waitSignal(session.busyChanged, timeout=WAIT_MS, check_params_cb=lambda busy: not busy):
        assert session.send("How long should the dough rise?")
        session.stop()
    qtbot.wait(200)  # the search's answer comes, and is dropped
    assert not session.busy and script.requests == []


def test_a_collection_removed_meanwhile_is_said_and_the_reply_goes_on(qtbot, tmp_path, session, script, library):
    session.choose_collections(("kitchen",))
    with DocumentIndex(tmp_path / "documents.sqlite3") as index:
        index.remove_collection("kitchen")  # by `hearth docs remove` while the window runs: its list is behind
    assert session.documents.chosen == ("kitchen",)
    with qtbot.waitSignal(session.error, timeout=WAIT_MS) as said, \
            qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        session.send("How long should the dough rise?")
    assert "could not be searched" in said.args[0] and "no collection named kitchen" in said.args[0]
    assert script.requests[-1][0][-1]["content"] == "How long should the dough rise?"


def test_sources_fill_at_most_half_of_a_small_context():
    from app.conversation.sources import fitting
    from app.store import Source

    sources = [Source(f"/d/{n}.txt", "word " * 200) for n in range(5)]  # about 250 tokens each
    assert len(fitting(sources, None)) == 5 and len(fitting(sources, 100_000)) == 5
    assert len(fitting(sources, 1024)) == 2 and fitting(sources, 256) == ()


def test_after_the_model_searched_a_lookup_adds_its_sources_after_those(qtbot, session, script):
    from app.conversation.sources import with_sources
    from app.store import Source

    session.choose_collections(("kitchen",))
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        session.send("How long should the dough rise?")
    question = session.store.messages(session.conversation_id)[0]
    found_by_tool = (Source("/docs/tea.txt", "Steep tea for two minutes.", by_tool=True),)
    session.store.set_sources(question.id, found_by_tool)  # as a turn in "the model searches" left it
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.regenerate()  # "the model searches" is off now: a lookup runs
    sources = session.store.message(question.id).sources
    assert sources[0] == found_by_tool[0] and Path(sources[1].path).name == "bread.txt"
    asked = script.requests[-1][0][-1]["content"]
    assert "\n[2] bread.txt" in asked and "\n[1] " not in asked, "numbered by their place among all of them"
    assert with_sources("Q?", sources) == asked.replace("How long should the dough rise?", "Q?")
