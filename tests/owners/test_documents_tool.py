"""search_documents: the conversation's collections as a tool the model calls (Settings →
Documents, "the model searches"), through the real llama.cpp on a scripted Qwen3 model whose
greedy reply is always the call `search_documents {"query": "dough rise"}`
(support/model_files/scripted_models.py), over a real index with the real embedding model.

The call runs without a card asking (Hearth's own read-only tool over collections the user
attached), its result is the numbered passages, and the passages become the question's sources,
so the reply's citations open them; nothing is searched before the question in this mode."""

from __future__ import annotations

import json

import pytest
from support.model_files import tiny_models as tiny
from support.model_files.embedding_model import ensure_minilm
from support.model_files.scripted_families import SCRIPTED_FAMILIES
from support.model_files.scripted_models import write_scripted_model
from support.window_stack import ModelStack

from app.owners.chat_session import ChatSession
from app.owners.conversation_documents import ConversationDocuments
from app.owners.conversation_tools import ConversationTools
from app.owners.documents import DocumentLibrary
from app.owners.documents_tool import HEADER, NO_QUERY, SERVER
from app.owners.tool_servers import ToolServerManager
from app.store import ConversationStore

WAIT_MS = 60_000


@pytest.fixture(scope="module")
def searching_model(tmp_path_factory):
    family = SCRIPTED_FAMILIES["qwen3"]
    call = json.dumps({"name": "search_documents", "arguments": {"query": "dough rise"}})
    vocab = tiny.read_metadata(tiny.VOCAB_DIR / family.tokenizer.vocab)
    return write_scripted_model(tmp_path_factory.mktemp("scripted") / "searching.gguf", family.tokenizer, vocab,
                                family.chat_template(tiny.load_families_json()), family.prompt_tail,
                                f"<tool_call>\n{call}\n</tool_call>", family.end)


@pytest.fixture
def rig(qtbot, tmp_path, searching_model):
    from app.engine.opening import open_embedder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bread.txt").write_text("Knead the dough for ten minutes, then let it rise for an hour.\n")
    (docs / "garden.md").write_text("# Roses\n\nPrune roses in late winter before new growth starts.\n")
    stack = ModelStack.start(tmp_path)
    stack.settings.tools.step_limit = 1
    stack.settings.documents.as_tool = True
    library = DocumentLibrary(stack.settings.documents, tmp_path / "documents.sqlite3",
                              lambda model: open_embedder(ensure_minilm().gguf if model is None else model, tmp_path))
    with qtbot.waitSignal(library.indexed, timeout=WAIT_MS):
        library.add("kitchen", [docs])
    qtbot.waitUntil(lambda: library.names() == ("kitchen",), timeout=WAIT_MS)
    stack.load(qtbot, searching_model, WAIT_MS)
    store = ConversationStore(tmp_path / "conversations.sqlite3")
    tools = ConversationTools(ToolServerManager(stack.settings.tools), stack.settings.tools)
    session = ChatSession(store, stack.bridge, stack.models, tools, documents=ConversationDocuments(library))
    yield session
    library.close()
    stack.shutdown()
    store.close()


def test_the_model_searches_the_collections_and_its_passages_become_the_sources(qtbot, rig):
    session = rig
    session.choose_collections(("kitchen",))
    proposed, finished = [], []
    session.turn.callProposed.connect(proposed.append)
    session.turn.callFinished.connect(lambda call_id, outcome: finished.append(outcome))
    with qtbot.waitSignal(session.busyChanged, timeout=WAIT_MS, check_params_cb=lambda busy: not busy):
        assert session.send("How long should bread dough rise?")
    assert proposed == [], "Hearth's own read-only tool runs without asking"
    [outcome] = finished
    assert not outcome.error and outcome.model_text.startswith(HEADER)
    assert "[1] bread.txt\nKnead the dough" in outcome.model_text
    question, call, result, *_answer = session.store.messages(session.conversation_id)
    assert question.content == "How long should bread dough rise?", "nothing is put before the question"
    assert [source.text.strip() for source in question.sources][0].startswith("Knead the dough")
    assert call.tool_calls[0].name == "search_documents" and json.loads(call.tool_calls[0].arguments) == {
        "query": "dough rise"}
    assert result.tool_result.name == "search_documents" and result.content == outcome.model_text


def test_without_collections_the_tool_is_not_offered(rig):
    session = rig
    session.loop.hold(session.conversation_id)  # as a Send does
    tools, catalog = session.loop.use(0)
    assert catalog is None or all(listed.server != SERVER for listed in catalog.listed)
    session.choose_collections(("kitchen",))
    session.loop.hold(session.conversation_id)
    _tools, catalog = session.loop.use(0)
    assert [listed.name for listed in catalog.listed] == ["search_documents"]


def test_the_passages_it_found_are_not_put_before_the_question_again(qtbot, rig):
    session = rig
    session.choose_collections(("kitchen",))
    with qtbot.waitSignal(session.busyChanged, timeout=WAIT_MS, check_params_cb=lambda busy: not busy):
        session.send("How long should bread dough rise?")
    question = session.store.messages(session.conversation_id)[0]
    assert question.sources and all(source.by_tool for source in question.sources)
    assert session.history()[0] == {"role": "user", "content": "How long should bread dough rise?"}, \
        "the result holds them: the question reads as asked, its prefix the same at every step"


def test_a_turn_searches_the_collections_of_its_own_conversation(qtbot, rig, tmp_path):
    session = rig
    session.choose_collections(("kitchen",))
    session.loop.hold(session.conversation_id)  # the turn begins here...
    session.new_conversation()
    session.choose_collections(())  # ...and another conversation, without documents, is opened
    assert session.loop.documents.collections == ("kitchen",) and session.loop.documents.offered


def test_a_call_without_a_query_is_answered_as_an_error(rig):
    outcome = rig.loop.documents.call({"query": "  "}).result(timeout=5)
    assert outcome.error and outcome.model_text == NO_QUERY
