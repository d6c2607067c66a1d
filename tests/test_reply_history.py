"""What a reply reads and what it did not see, from the branch shown of a real store."""

from __future__ import annotations

import pytest

from app.conversation import history as reply_history
from app.conversation.history import context_boundary, history
from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store import ConversationStore, ToolResult


@pytest.fixture
def store(tmp_path):
    with ConversationStore(tmp_path / "conversations.sqlite3") as opened:
        yield opened


def reply(store, cid, text, dropped=0, status=ReplyStatus.COMPLETE, counted=True) -> int:
    message_id = store.add_message(cid, "assistant", "", status=ReplyStatus.STREAMING)
    stats = ReplyStats(prompt_tokens=50 if counted else 0, completion_tokens=5, dropped_messages=dropped,
                       stop_reason=StopReason.END_OF_TURN)
    store.finish_message(message_id, text, stats, status)
    return message_id


def test_history_leaves_out_replies_that_failed_before_saying_anything(store):
    cid = store.create_conversation()
    store.add_message(cid, "user", "Q1")
    reply(store, cid, "", status=ReplyStatus.ERROR, counted=False)
    store.add_message(cid, "user", "Q2")
    assert history(store, cid, "Be kind.") == [
        {"role": "system", "content": "Be kind."}, {"role": "user", "content": "Q1"}, {"role": "user", "content": "Q2"}]
    assert history(store, cid, "  ", before=1) == [{"role": "user", "content": "Q1"}]


def test_the_boundary_counts_only_the_messages_the_engine_was_given(store):
    cid = store.create_conversation()
    q1 = store.add_message(cid, "user", "Q1")
    reply(store, cid, "", status=ReplyStatus.ERROR, counted=False)  # never given to the engine
    store.add_message(cid, "user", "Q1 again")
    a1 = reply(store, cid, "A1")
    store.add_message(cid, "user", "Q2")
    reply(store, cid, "A2", dropped=2)  # left out: Q1 and "Q1 again" (the failed reply was not given)
    boundary = context_boundary(store, cid)
    assert boundary is not None and store.message(boundary.message_id).content == "Q1 again"
    assert boundary.unseen == 3  # the line goes under the third message shown
    assert q1 != boundary.message_id != a1


def test_messages_beyond_the_history_limit_are_unseen_too(store, monkeypatch):
    monkeypatch.setattr(reply_history, "HISTORY_MESSAGES", 4)
    cid = store.create_conversation()
    for number in range(4):
        store.add_message(cid, "user", f"Q{number}")
        reply(store, cid, f"A{number}")
    boundary = context_boundary(store, cid)  # the last reply (position 7) read positions 3..6
    assert (store.message(boundary.message_id).content, boundary.unseen) == ("Q1", 3)


def test_no_counted_reply_no_boundary(store):
    cid = store.create_conversation()
    store.add_message(cid, "user", "Q1")
    reply(store, cid, "imported", dropped=1, counted=False)
    assert context_boundary(store, cid) is None


def test_tool_calls_and_results_are_read_in_openai_form_and_counted(store):
    """A reply that failed after it called is still read (its calls were made); the results are
    messages the engine was given, so the boundary counts them."""
    cid = store.create_conversation()
    store.add_message(cid, "user", "Q1")
    called = store.add_message(cid, "assistant", "", status=ReplyStatus.STREAMING)
    store.finish_message(called, "", ReplyStats(stop_reason=StopReason.ERROR), ReplyStatus.ERROR,
                         tool_calls=(ToolCall(0, "c1", "lookup", "{}"),))
    store.add_tool_result(cid, ToolResult("c1", "lookup", "found", error=False))
    store.add_message(cid, "user", "Q2")
    reply(store, cid, "A2", dropped=3)
    assert history(store, cid, "")[:3] == [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "found"}]
    boundary = context_boundary(store, cid)
    assert (store.message(boundary.message_id).role, boundary.unseen) == ("tool", 3)
