import sqlite3
from contextlib import closing

import pytest

from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store import ConversationStore, StoreError, auto_title


def test_create_and_get(store):
    cid = store.create_conversation(title="Plans", model="gemma.gguf", system_prompt="Be brief.")
    conversation = store.get_conversation(cid)
    assert (conversation.id, conversation.title, conversation.model) == (cid, "Plans", "gemma.gguf")
    assert conversation.system_prompt == "Be brief."
    assert conversation.deleted_at is None
    assert conversation.created_at == conversation.updated_at
    assert conversation.created_at.endswith("+00:00")


def test_unknown_ids_are_store_errors(store):
    with pytest.raises(StoreError):
        store.get_conversation(999)
    with pytest.raises(StoreError):
        store.rename(999, "x")
    with pytest.raises(StoreError):
        store.messages(999)
    with pytest.raises(StoreError):
        store.add_message(999, "user", "hi")
    for call in (store.add_version, store.show_version, store.delete_version, store.branch_from):
        with pytest.raises(StoreError):
            call(*((999, "x") if call == store.add_version else (999,)))


def test_list_is_newest_activity_first_and_rename_keeps_the_order(store):
    first = store.create_conversation(title="first")
    second = store.create_conversation(title="second")
    assert [c.id for c in store.list_conversations()] == [second, first]
    store.add_message(first, "user", "bump")
    assert [c.id for c in store.list_conversations()] == [first, second]
    store.rename(second, "renamed")
    assert [c.title for c in store.list_conversations()] == ["first", "renamed"]


def test_system_prompt_is_saved(store):
    cid = store.create_conversation()
    store.set_system_prompt(cid, "You are a pirate.")
    assert store.get_conversation(cid).system_prompt == "You are a pirate."


def test_delete_restore_and_purge(store, db_path):
    keep = store.create_conversation(title="keep")
    doomed = store.create_conversation(title="doomed")
    store.add_message(doomed, "user", "bye")

    snapshot = store.delete(doomed)
    assert snapshot.id == doomed and snapshot.title == "doomed" and snapshot.deleted_at is not None
    assert [c.id for c in store.list_conversations()] == [keep]
    assert store.get_conversation(doomed).deleted_at == snapshot.deleted_at

    store.restore(snapshot.id)
    assert {c.id for c in store.list_conversations()} == {keep, doomed}
    assert store.purge_deleted() == 0

    store.delete(doomed)
    assert store.purge_deleted() == 1
    assert [c.id for c in store.list_conversations()] == [keep]
    with pytest.raises(StoreError):
        store.get_conversation(doomed)
    with pytest.raises(StoreError):
        store.restore(doomed)
    # Foreign keys are on: the purged conversation's messages went with it.
    store.add_message(keep, "user", "still here")
    store.close()
    with closing(sqlite3.connect(db_path)) as raw:
        assert raw.execute("SELECT conversation_id FROM messages").fetchall() == [(keep,)]


def test_messages_in_order_with_params_and_model(store):
    cid = store.create_conversation(title="t")
    ids = [
        store.add_message(cid, "system", "rules"),
        store.add_message(cid, "user", "hello"),
        store.add_message(cid, "assistant", "hi!", model="tiny.gguf", params={"temperature": 0.2, "stop": ["\n"]}),
    ]
    messages = store.messages(cid)
    assert [m.id for m in messages] == ids
    assert [(m.position, m.role, m.content) for m in messages] == [
        (0, "system", "rules"),
        (1, "user", "hello"),
        (2, "assistant", "hi!"),
    ]
    assert messages[2].params == {"temperature": 0.2, "stop": ["\n"]}
    assert messages[2].model == "tiny.gguf" and messages[0].params == {} and messages[0].stats is None
    assert store.get_conversation(cid).model == "tiny.gguf"


def test_add_message_rejects_unknown_role_and_status(store):
    cid = store.create_conversation()
    with pytest.raises(StoreError, match="role"):
        store.add_message(cid, "robot", "beep")
    with pytest.raises(StoreError, match="status"):
        store.add_message(cid, "user", "hi", status="done")
    assert store.messages(cid) == []


def test_first_user_message_titles_an_untitled_conversation(store):
    cid = store.create_conversation()
    store.add_message(cid, "system", "Ignore this for titles")
    store.add_message(cid, "user", "How do I bake sourdough bread at home without a dutch oven?")
    store.add_message(cid, "user", "Something else entirely")
    assert store.get_conversation(cid).title == "How do I bake sourdough bread at home…"

    titled = store.create_conversation(title="Mine")
    store.add_message(titled, "user", "A question")
    assert store.get_conversation(titled).title == "Mine"


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("  short   question \n", "short question"),
        ("x" * 40, "x" * 40),
        ("one two three four five six seven eight nine", "one two three four five six seven eight…"),
        ("Well, this is a sentence, with commas, everywhere", "Well, this is a sentence, with commas…"),
        ("a " + "y" * 60, "a " + "y" * 38 + "…"),
    ],
)
def test_auto_title(text, title):
    assert auto_title(text) == title
    assert len(auto_title(text)) <= 41


def test_streaming_reply_partial_updates_then_finish(store):
    cid = store.create_conversation(title="t")
    store.add_message(cid, "user", "count")
    mid = store.add_message(cid, "assistant", "", model="m.gguf", params={"seed": 1}, status="streaming")
    for text in ("1", "1 2", "1 2 3"):
        store.update_partial(mid, text)
        reply = store.messages(cid)[-1]
        assert (reply.content, reply.status) == (text, "streaming")

    stats = ReplyStats(prompt_tokens=5, completion_tokens=3, ttft_s=0.05, tokens_per_s=60.0,
                       stop_reason=StopReason.END_OF_TURN)
    store.finish_message(mid, "1 2 3 4", stats, ReplyStatus.COMPLETE)
    reply = store.messages(cid)[-1]
    assert (reply.content, reply.status, reply.stats, reply.params) == ("1 2 3 4", "complete", stats, {"seed": 1})
    assert store.get_conversation(cid).updated_at == reply.updated_at

    # A late timer must not overwrite the finished reply, nor can it be finished twice.
    with pytest.raises(StoreError):
        store.update_partial(mid, "1 2")
    with pytest.raises(StoreError):
        store.finish_message(mid, "again")
    assert store.messages(cid)[-1].content == "1 2 3 4"


def test_finish_rejects_streaming_as_final_status(store):
    cid = store.create_conversation()
    mid = store.add_message(cid, "assistant", "", status="streaming")
    with pytest.raises(StoreError):
        store.finish_message(mid, "x", ReplyStats(), ReplyStatus.STREAMING)
    store.finish_message(mid, "partial", ReplyStats(stop_reason=StopReason.CANCELLED), ReplyStatus.CANCELLED)
    assert store.messages(cid)[0].status == "cancelled"


def _dialogue(store):
    cid = store.create_conversation(title="d")
    ids = [
        store.add_message(cid, "user", "q1"),
        store.add_message(cid, "assistant", "a1"),
        store.add_message(cid, "user", "q2"),
        store.add_message(cid, "assistant", "a2"),
    ]
    return cid, ids


def test_an_edit_is_a_new_version_and_the_old_branch_stays(store):
    cid, (q1, a1, q2, a2) = _dialogue(store)
    edited = store.add_version(q1, "q1 edited")
    assert [(m.id, m.content, m.version, m.versions) for m in store.messages(cid)] == [(edited, "q1 edited", 2, 2)]
    new = store.add_message(cid, "assistant", "fresh")
    assert [(m.position, m.id) for m in store.messages(cid)] == [(0, edited), (1, new)]
    assert store.show_version(q1) == a2  # the old branch, whole
    assert [m.content for m in store.messages(cid)] == ["q1", "a1", "q2", "a2"]


def test_regenerate_keeps_the_earlier_reply_as_a_version(store):
    cid, (q1, a1, q2, a2) = _dialogue(store)
    again = store.add_version(a2, "a2 again")
    assert [(m.content, m.position, m.version) for m in store.messages(cid)][-1] == ("a2 again", 3, 2)
    assert store.sibling(again, -1) == a2 and store.sibling(a2, -1) is None and store.sibling(again, 1) is None
    assert store.leaf_message(cid).id == again


def test_a_deleted_version_comes_back_with_undo_and_hides_from_search_meanwhile(store):
    cid, (q1, a1, q2, a2) = _dialogue(store)
    edited = store.add_version(q2, "q2 edited")
    deleted = store.delete_version(q2)
    assert deleted.messages == 2  # q2 and its reply
    assert [m.content for m in store.messages(cid)] == ["q1", "a1", "q2 edited"]
    assert store.message(edited).versions == 1
    with pytest.raises(StoreError):
        store.show_version(q2)
    store.show_version(edited)
    store.restore_version(deleted)
    assert [m.content for m in store.messages(cid)] == ["q1", "a1", "q2 edited"]  # the branch shown at the delete
    assert store.show_version(q2) == a2


def test_a_reply_being_written_cannot_be_deleted_or_branched_from(store):
    cid, (q1, a1, q2, a2) = _dialogue(store)
    streaming = store.add_version(a2, "", status="streaming")
    for call in (store.delete_version, store.branch_from):
        with pytest.raises(StoreError, match="being written"):
            call(streaming)
    with pytest.raises(StoreError, match="being written"):
        store.delete_version(q2)  # it is below q2
    assert len(store.messages(cid)) == 4


def test_branch_from_copies_the_path_into_a_new_conversation(store):
    cid, (q1, a1, q2, a2) = _dialogue(store)
    store.add_version(a1, "a1 again")
    store.show_version(a1)
    branch = store.branch_from(q2)
    assert store.get_conversation(branch).title == "d (branch)"
    assert [(m.content, m.versions) for m in store.messages(branch)] == [("q1", 1), ("a1", 1), ("q2", 1)]
    assert [m.content for m in store.messages(cid)] == ["q1", "a1", "q2", "a2"]


def test_everything_survives_reopening(store, db_path):
    cid = store.create_conversation(title="persist", system_prompt="sp")
    store.add_message(cid, "user", "hello", params={"top_k": 3})
    before = (store.get_conversation(cid), store.messages(cid))
    store.close()
    with ConversationStore(db_path) as reopened:
        assert (reopened.get_conversation(cid), reopened.messages(cid)) == before


def test_reply_left_streaming_is_marked_interrupted_on_open(store, db_path):
    cid = store.create_conversation(title="t")
    mid = store.add_message(cid, "assistant", "", status="streaming")
    store.update_partial(mid, "half a rep")
    store.close()
    with ConversationStore(db_path) as reopened:
        (reply,) = reopened.messages(cid)
    assert (reply.content, reply.status, reply.stats) == (
        "half a rep", "cancelled", ReplyStats(completion_tokens=None, stop_reason=StopReason.INTERRUPTED))


@pytest.mark.parametrize("stored", [
    {"completion_tokens": 10**400, "tokens_per_s": 10**400},  # float(10**400) overflows
    {"tokens_per_s": float("nan"), "ttft_s": float("inf"), "prompt_tokens": True},
    {"stop_reason": ["length"], "seed": "7", "error": 5},
    {"stop_reason": {"x": 1}, "dropped_messages": -(10**30)},
])
def test_stored_statistics_out_of_range_or_of_the_wrong_type_read_as_not_counted(stored):
    """A hand-made record's statistics never raise, and never reach the footer as numbers."""
    assert ReplyStats.from_dict(stored) == ReplyStats(completion_tokens=None, stop_reason=None)


def test_a_version_inside_a_later_deletion_is_not_restored_on_its_own(store):
    cid, (q1, a1, q2, a2) = _dialogue(store)
    store.add_version(q1, "q1 again")
    inner = store.delete_version(q2)
    outer = store.delete_version(q1)
    with pytest.raises(StoreError, match="undo that deletion first"):
        store.restore_version(inner)
    store.restore_version(outer)
    store.restore_version(inner)
    store.show_version(q1)
    assert [m.content for m in store.messages(cid)] == ["q1", "a1", "q2", "a2"]


def test_purging_a_branch_deeper_than_sqlites_recursion_limit(store):
    """Each deletion would cascade to the next message down: 1,200 levels are past SQLite's 1,000."""
    deep = store.create_conversation()
    for number in range(1_200):
        store.add_message(deep, "user", f"m{number}")
    kept = store.create_conversation()
    first = store.add_message(kept, "user", "first")
    below = store.add_version(first, "edited")
    for number in range(1_200):
        store.add_message(kept, "user", f"k{number}")
    store.delete_version(below)  # a deleted version with 1,200 messages below it
    store.delete(deep)
    assert store.purge_deleted() == 1
    assert [m.content for m in store.messages(kept)] == ["first"]
    assert store._conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1
