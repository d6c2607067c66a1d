"""ChatSession on its own: what Send, Stop, Regenerate, Edit and Delete store and signal, over a
real SQLite file and scripted backends (no model, no waits beyond the engine thread's hop)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.conversation.context_use import ContextUse
from app.engine.sampling import SamplingParams
from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.owners.chat_session import NO_MODEL_MESSAGE, SERVED_WAIT_MESSAGE, ChatSession
from app.owners.replies import FinishedReply
from app.serve.completions import Job
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
        qtbot.waitUntil(script.first_words.is_set, timeout=WAIT_MS)
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


def test_opening_another_conversation_leaves_the_reply_going_in_its_own(qtbot, session, script, store):
    second = store.create_conversation()
    script.hold = True
    script.replies = ["one two"]
    assert session.send("Go")
    reply_in = session.conversation_id
    qtbot.waitUntil(lambda: bool(script.requests), timeout=WAIT_MS)
    session.open(second)
    assert session.busy and session.reply_conversation_id == reply_in  # not stopped by opening another
    so_far = session.reply_so_far()
    assert (so_far.conversation_id, so_far.model) == (reply_in, "gemma.gguf")
    assert not session.send("Meanwhile")  # one reply at a time: the window makes this one wait
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS) as finished:
        session.stop()
    assert finished.args[0].conversation_id == reply_in and session.conversation_id == second
    assert store.messages(reply_in)[-1].content == "one" and store.messages(second) == []


def test_deleting_another_conversation_whose_reply_is_written_stops_it(qtbot, session, script, store):
    script.hold = True
    assert session.send("Go")
    reply_in = session.conversation_id
    other = store.create_conversation()
    session.open(other)
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS) as finished:
        session.delete_conversation(reply_in)
    assert finished.args[0].status is ReplyStatus.CANCELLED and session.conversation_id == other


def test_new_conversation_reuses_the_open_one_while_nothing_was_said_in_it(qtbot, session, store):
    first = session.new_conversation()
    assert session.new_conversation() == first and len(store.list_conversations()) == 1
    send(qtbot, session, "Something")
    assert session.new_conversation() != first and len(store.list_conversations()) == 2


def test_the_context_meter_estimates_while_the_reply_grows_and_counts_at_the_end(qtbot, session, script):
    script.replies = ["one two three"]
    uses = []
    session.contextChanged.connect(uses.append)
    reply = send(qtbot, session, "Count me")
    assert all(isinstance(use, ContextUse) for use in uses)
    estimates = [use for use in uses if use.estimated]
    assert len(estimates) >= 2 and estimates[-1].tokens > estimates[0].tokens  # the text moved it
    counted = ContextUse(reply.stats.prompt_tokens + reply.stats.completion_tokens, estimated=False)
    assert uses[-1] == counted  # the engine's count when the reply ends
    session.open(session.conversation_id)  # opened again: the engine's count, from the store
    assert uses[-1] == counted


def test_the_next_reply_is_estimated_from_the_last_count_and_the_new_message(qtbot, session, script):
    send(qtbot, session, "First")  # the scripted engine counts 10 prompt tokens, 2 reply tokens
    script.hold = True
    uses = []
    session.contextChanged.connect(uses.append)
    assert session.send("x" * 40)  # about 10 more tokens
    assert uses[0] == ContextUse(10 + 2 + 10, estimated=True)
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        session.stop()


def test_a_send_while_a_served_request_runs_is_stored_at_once_and_its_reply_waits_in_line(qtbot, session, script, store):
    script.hold = True
    script.replies = ["served words", "The window's reply."]
    served_events = []
    served = session.bridge.serve(Job(SamplingParams(), messages=[{"role": "user", "content": "From a program"}]),
                                  served_events.append)
    qtbot.waitUntil(lambda: bool(served_events), timeout=WAIT_MS)
    said = []
    session.waitingChanged.connect(said.append)
    assert session.send("From the window")
    assert session.waiting and said == [SERVED_WAIT_MESSAGE] and session.busy
    assert [m.content for m in store.messages(session.conversation_id)] == ["From the window", ""]  # stored already
    script.hold = False
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS) as finished:
        served.cancel()
    assert isinstance(served_events[-1], ReplyStats) and "".join(e for e in served_events if isinstance(e, str)) == "served"
    assert finished.args[0].text == "The window's reply." and said == [SERVED_WAIT_MESSAGE, ""] and not session.waiting
    send(qtbot, session, "Nothing served now")
    assert said == [SERVED_WAIT_MESSAGE, ""]  # a reply that did not wait says nothing


def test_regenerate_keeps_the_earlier_reply_and_shows_the_new_one_as_it_streams(qtbot, session, script, store):
    script.replies = ["first", "second"]
    send(qtbot, session, "Q1")
    shown = []
    session.conversationChanged.connect(lambda cid: shown.append(
        (cid, [m.content for m in store.messages(cid)], session.reply_so_far() is not None)))
    session.replyStarted.connect(lambda m: pytest.fail("a new version is shown by conversationChanged"))
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.regenerate()
    # The window is told while the new version streams: the branch shown ends with it.
    assert shown == [(session.conversation_id, ["Q1", ""], True)]
    first, second = store.messages(session.conversation_id)[1], store.message(store.sibling(
        store.messages(session.conversation_id)[1].id, -1))
    assert (first.content, first.version, first.versions) == ("second", 2, 2)
    assert (second.content, second.status) == ("first", ReplyStatus.COMPLETE)
    assert script.requests[-1][0] == [{"role": "user", "content": "Q1"}]  # not the reply it replaces


def test_a_stopped_reply_stays_as_its_own_version(qtbot, session, script, store):
    script.hold = True
    script.replies = ["partial words here", "again"]
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        session.send("Go")
        qtbot.waitUntil(script.first_words.is_set, timeout=WAIT_MS)
        session.stop()
    script.hold = False
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.regenerate()
    reply = store.messages(session.conversation_id)[-1]
    stopped = store.message(store.sibling(reply.id, -1))
    assert (stopped.content, stopped.status) == ("partial", ReplyStatus.CANCELLED)
    assert (reply.content, reply.version, reply.versions) == ("again", 2, 2)


def test_versions_are_shown_deleted_restored_and_branched_from(qtbot, session, script, store):
    script.replies = ["a1", "a2", "a2 edited"]
    send(qtbot, session, "Q1")
    send(qtbot, session, "Q2")
    q2 = store.messages(session.conversation_id)[2]
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.edit(q2.id, "Q2 edited")
    cid = session.conversation_id
    assert [m.content for m in store.messages(cid)] == ["Q1", "a1", "Q2 edited", "a2 edited"]
    with qtbot.waitSignal(session.conversationChanged, timeout=WAIT_MS):
        assert session.show_version(q2.id)
    assert [m.content for m in session.messages()] == ["Q1", "a1", "Q2", "a2"]

    with qtbot.waitSignals([session.conversationChanged, session.conversationsChanged], timeout=WAIT_MS):
        deleted = session.delete_version(q2.id)
    assert deleted.messages == 2 and [m.content for m in session.messages()] == ["Q1", "a1", "Q2 edited", "a2 edited"]
    session.restore_version(deleted)
    assert [m.content for m in session.messages()] == ["Q1", "a1", "Q2", "a2"]

    branch = session.branch_from(q2.id)
    assert session.conversation_id == branch != cid
    assert [m.content for m in session.messages()] == ["Q1", "a1", "Q2"]


def test_the_branch_being_written_cannot_be_switched_or_deleted(qtbot, session, script, store):
    script.replies = ["a1", "held reply"]
    send(qtbot, session, "Q1")
    first = store.messages(session.conversation_id)[1]
    script.hold = True
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.regenerate()
        assert not session.show_version(first.id)
        assert session.delete_version(first.id) is None
        assert [m.id for m in store.messages(session.conversation_id)][-1] != first.id
        session.stop()
    assert session.show_version(first.id)


def test_the_context_boundary_follows_the_branch_shown(qtbot, session, script, store):
    script.replies = ["a1", "a2", "a3"]
    send(qtbot, session, "Q1")
    send(qtbot, session, "Q2")
    assert session.context_boundary() is None
    script.dropped_messages = 2
    send(qtbot, session, "Q3")
    q1, a1, *_ = store.messages(session.conversation_id)
    assert (session.context_boundary().message_id, session.context_boundary().unseen) == (a1.id, 2)
    script.dropped_messages = 0
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        assert session.regenerate()
    assert session.context_boundary() is None  # this version saw everything
    session.show_version(store.sibling(store.leaf_message(session.conversation_id).id, -1))
    assert session.context_boundary().message_id == a1.id


def test_undo_of_a_delete_waits_while_that_conversation_has_a_reply_written(qtbot, session, script, store):
    script.replies = ["first", "second", "held"]
    send(qtbot, session, "Q1")
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        session.regenerate()
    deleted = session.delete_version(store.leaf_message(session.conversation_id).id)
    script.hold = True
    with qtbot.waitSignal(session.replyFinished, timeout=WAIT_MS):
        session.send("Q2")
        assert not session.restore_version(deleted)
        assert store.leaf_message(session.conversation_id).role == "assistant"
        session.stop()
    assert [m.content for m in store.messages(session.conversation_id)][:2] == ["Q1", "first"]
    assert session.restore_version(deleted)
    assert [m.content for m in store.messages(session.conversation_id)] == ["Q1", "second"]


def test_the_engine_hears_which_conversation_a_reply_is_for_which_is_opened_and_deleted(
        qtbot, session, script, scripted_models):
    # What the Engine keeps a conversation's KV state by (tests/engine/test_saved_state_resume.py
    # shows what it does with it): the scripted backend records what the bridge passed on.
    send(qtbot, session, "In the first")
    first = session.conversation_id
    second = session.new_conversation()
    qtbot.waitUntil(lambda: script.prepared[-1:] == [second], timeout=WAIT_MS)  # while the engine is idle
    send(qtbot, session, "In the second")
    assert script.conversations == [first, second]
    opened = len(script.prepared)
    session.open(second)  # opening the open one again asks nothing
    with qtbot.waitSignal(scripted_models.modelLoaded, timeout=WAIT_MS):
        scripted_models.load(Path("/models/other.gguf"))
    qtbot.waitUntil(lambda: len(script.prepared) == opened + 1, timeout=WAIT_MS)
    assert script.prepared[-1] == second  # the new model readies the open conversation
    session.delete_conversation(first)
    qtbot.waitUntil(lambda: script.forgotten == [first], timeout=WAIT_MS)
