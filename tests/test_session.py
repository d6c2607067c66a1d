"""ChatSession on its own: what Send, Stop, Regenerate, Edit and Delete store and signal, over a
real SQLite file and scripted backends (no model, no waits beyond the engine thread's hop)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.sampling import SamplingParams
from app.engine.types import ReplyStatus, StopReason
from app.session import NO_MODEL_MESSAGE, ChatSession, FinishedReply
from app.store import ConversationStore

WAIT_MS = 5_000


@pytest.fixture
def store(tmp_path):
    store = ConversationStore(tmp_path / "conversations.sqlite3")
    yield store
    store.close()


@pytest.fixture
def session(qtbot, scripted_models, store):
    with qtbot.waitSignal(scripted_models.modelLoaded, timeout=WAIT_MS):
        scripted_models.load(Path("/models/gemma.gguf"))
    return ChatSession(store, scripted_models._bridge, scripted_models)


def send(qtbot, session, text) -> FinishedReply:
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS) as finished:
        assert session.send(text)
    return finished.args[0]


def test_send_stores_both_messages_streams_and_finishes_typed(qtbot, session, script, store):
    script.replies = ["The sea is wide."]
    events = []
    session.messageAdded.connect(lambda m: events.append(("added", m.role, m.content)))
    session.replyStarted.connect(lambda m: events.append(("started", m.status, m.model)))
    session.replyChunk.connect(lambda text: events.append(("chunk", text)))
    session.busyChanged.connect(lambda busy: events.append(("busy", busy)))
    reply = send(qtbot, session, "  Tell me about the sea  ")
    assert reply.text == "The sea is wide." and reply.status is ReplyStatus.COMPLETE
    assert reply.stats.stop_reason is StopReason.END_OF_TURN and reply.stats.completion_tokens == 4
    assert events[:3] == [("added", "user", "Tell me about the sea"), ("started", "streaming", "gemma.gguf"), ("busy", True)]
    assert "".join(e[1] for e in events if e[0] == "chunk") == reply.text and events[-1] == ("busy", False)
    user, assistant = store.messages(session.conversation_id)
    assert (assistant.id, assistant.content, assistant.status, assistant.stats) == (
        reply.message_id, reply.text, ReplyStatus.COMPLETE, reply.stats)
    assert store.get_conversation(session.conversation_id).title == "Tell me about the sea"


def test_the_reply_uses_the_current_models_settings(qtbot, session, script, scripted_models, store):
    settings = scripted_models.settings.with_changes(
        system_prompt="Be brief.", sampling=SamplingParams(temperature=0.0, max_tokens=9))
    scripted_models.update_settings(settings)
    send(qtbot, session, "Hi")
    messages, params = script.requests[-1]
    assert messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert params == settings.sampling
    stored = store.messages(session.conversation_id)[-1]
    assert stored.params["max_tokens"] == 9 and stored.model == "gemma.gguf"
    assert store.get_conversation(session.conversation_id).system_prompt == "Be brief."


def test_no_model_no_send(qtbot, qapp, tmp_path, scripted_models, store):
    session = ChatSession(store, scripted_models._bridge, scripted_models)
    with qtbot.waitSignal(session.error) as error:
        assert not session.send("Hello")
    assert error.args[0] == NO_MODEL_MESSAGE and store.list_conversations() == []


def test_one_reply_at_a_time_and_stop_keeps_the_partial_reply(qtbot, session, script, store):
    script.hold = True
    script.replies = ["one two three four"]
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS) as finished:
        assert session.send("Go")
        qtbot.waitUntil(lambda: session.busy and bool(script.requests), timeout=WAIT_MS)
        assert not session.send("Again") and not session.regenerate()
        session.stop()
    reply = finished.args[0]
    assert reply.status is ReplyStatus.CANCELLED and reply.stats.stop_reason is StopReason.CANCELLED
    assert reply.text == "one" and store.messages(session.conversation_id)[-1].status == "cancelled"
    assert [m.content for m in store.messages(session.conversation_id) if m.role == "user"] == ["Go"]


def test_a_reply_that_cannot_start_is_kept_as_an_error_and_said(qtbot, session, script, store):
    script.fail_start = "The template failed: no such filter"
    with qtbot.waitSignal(session.error, timeout=WAIT_MS) as error:
        reply = send(qtbot, session, "Hi")
    assert error.args[0] == "The template failed: no such filter"
    assert reply.status is ReplyStatus.ERROR and reply.stats.error == error.args[0]
    assert store.messages(session.conversation_id)[-1].status == "error"
    script.replies = ["Fine now."]
    send(qtbot, session, "Again")
    assert script.requests[-1][0] == [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Again"}]


def test_regenerate_and_edit_continue_from_the_right_message(qtbot, session, script, store):
    script.replies = ["first", "second", "third", "fourth"]
    send(qtbot, session, "Q1")
    send(qtbot, session, "Q2")
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.regenerate()
    assert [m.content for m in store.messages(session.conversation_id)] == ["Q1", "first", "Q2", "third"]
    q1 = store.messages(session.conversation_id)[0]
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.edit(q1.id, " Q1 edited ")
    assert [m.content for m in store.messages(session.conversation_id)] == ["Q1 edited", "fourth"]


def test_deleting_the_open_conversation_stops_its_reply_and_closes_it(qtbot, session, script, store):
    script.hold = True
    opened = []
    session.conversationChanged.connect(opened.append)
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS) as finished:
        session.send("Go")
        conversation_id = session.conversation_id
        deleted = session.delete_conversation(conversation_id)
    assert deleted.id == conversation_id and session.conversation_id is None and opened[-1] is None
    assert finished.args[0].status is ReplyStatus.CANCELLED and session.messages() == []
    store.restore(conversation_id)
    assert [m.status for m in store.messages(conversation_id)] == ["complete", "cancelled"]


def test_quitting_mid_reply_keeps_it_as_stopped_with_its_statistics(qtbot, session, script, store):
    script.hold = True
    script.replies = ["one two three"]
    assert session.send("Go")
    qtbot.waitUntil(lambda: bool(script.requests), timeout=WAIT_MS)
    session.close()  # what Hearth does after its event loop ends
    (reply,) = [m for m in store.messages(session.conversation_id) if m.role == "assistant"]
    assert not session.busy and (reply.status, reply.content) == ("cancelled", "one")
    assert reply.stats.stop_reason is StopReason.CANCELLED and reply.stats.completion_tokens == 1
