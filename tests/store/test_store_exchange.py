import json

import pytest

from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store import StoreError
from app.store.exchange import VERSION

STATS = ReplyStats(prompt_tokens=12, completion_tokens=34, ttft_s=0.25, tokens_per_s=41.26, stop_reason=StopReason.END_OF_TURN)
PARAMS = {"temperature": 0.7, "top_k": 40, "stop": ["</s>"], "seed": None}


@pytest.fixture
def chat(store):
    cid = store.create_conversation(title="Tea", model="tiny-q4.gguf", system_prompt="Answer briefly.")
    store.add_message(cid, "user", "Green or black?")
    mid = store.add_message(cid, "assistant", "", model="tiny-q4.gguf", params=PARAMS, status="streaming")
    store.finish_message(mid, "Green, *gently* brewed.", STATS)
    cut = store.add_message(cid, "assistant", "", model="tiny-q4.gguf", status="streaming")
    store.finish_message(cut, "Black tea is", ReplyStats(completion_tokens=None, stop_reason=StopReason.CANCELLED), ReplyStatus.CANCELLED)
    return cid


def test_markdown_export(store, chat):
    text = store.export_markdown(chat)
    assert text.startswith("# Tea\n")
    assert "## System prompt\n\nAnswer briefly." in text
    assert text.index("## User\n\nGreen or black?") < text.index("## Assistant\n\nGreen, *gently* brewed.")
    assert "*tiny-q4.gguf · 34 tokens · 41.3 tokens/s · first token after 0.25 s*" in text
    assert "Black tea is\n\n*tiny-q4.gguf · cancelled*" in text
    assert "## User\n\nGreen or black?\n\n## Assistant" in text  # no metadata line for plain messages


def test_markdown_export_of_untitled_conversation(store):
    cid = store.create_conversation()
    assert store.export_markdown(cid).startswith("# Untitled conversation\n")


def test_json_export(store, chat):
    data = store.export_json(chat)
    assert (data["format"], data["version"]) == ("hearth.conversation", VERSION)
    assert data["conversation"]["title"] == "Tea"
    assert data["conversation"]["system_prompt"] == "Answer briefly."
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "assistant"]
    reply = data["messages"][1]
    assert (reply["params"], reply["stats"], reply["status"]) == (PARAMS, STATS.to_dict(), "complete")
    assert data["messages"][2]["status"] == "cancelled"
    json.dumps(data)  # ready to write to a file


def test_round_trip_through_a_file_keeps_everything(store, chat):
    exported = store.export_json(chat)
    new_id = store.import_json(json.dumps(exported))
    assert new_id != chat
    assert store.export_json(new_id) == exported
    original, imported = store.get_conversation(chat), store.get_conversation(new_id)
    assert (imported.created_at, imported.updated_at) == (original.created_at, original.updated_at)
    assert [m.created_at for m in store.messages(new_id)] == [m.created_at for m in store.messages(chat)]
    assert store.import_json(exported) not in (chat, new_id)  # the dict itself imports too


def test_import_normalises_timestamps_and_unfinished_replies(store):
    data = {
        "format": "hearth.conversation",
        "version": 1,
        "conversation": {
            "title": "External",
            "created_at": "2024-03-01T10:00:00Z",
            "updated_at": "2024-03-01T12:30:00+02:00",
        },
        "messages": [
            {"role": "user", "content": "hi", "created_at": "2024-03-01T10:00:00",
             "updated_at": "2024-03-01T10:00:00"},
            {"role": "assistant", "content": "hel", "status": "streaming", "created_at": "2024-03-01T10:00:01Z",
             "updated_at": "2024-03-01T10:00:02Z"},
        ],
    }
    conversation = store.get_conversation(store.import_json(data))
    assert conversation.created_at == "2024-03-01T10:00:00.000000+00:00"
    assert conversation.updated_at == "2024-03-01T10:30:00.000000+00:00"
    assert (conversation.model, conversation.system_prompt) == (None, "")
    user, reply = store.messages(conversation.id)
    assert user.created_at == "2024-03-01T10:00:00.000000+00:00"
    assert (user.params, user.stats, user.status) == ({}, None, "complete")
    assert reply.status == "cancelled"


def _valid():
    return {
        "format": "hearth.conversation",
        "version": 1,
        "conversation": {"title": "x", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"},
        "messages": [{"role": "user", "content": "hi", "created_at": "2024-01-01T00:00:00Z",
                      "updated_at": "2024-01-01T00:00:00Z"}],
    }


def _with(change):
    data = _valid()
    change(data)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"format": "hearth.conversation", ', "malformed"),
        (b"\xff\xfe not json", "malformed"),
        ("[1, 2]", "not a Hearth conversation export"),
        (_with(lambda d: d.update(format="other.app")), "not a Hearth conversation export"),
        (_with(lambda d: d.update(version=VERSION + 1)), "newer Hearth"),
        (_with(lambda d: d.update(version=2) or d["messages"][0].update(parent=0)),
         r"messages\[0\].parent must be the index of an earlier"),
        (_with(lambda d: d.update(version=2) or d["conversation"].update(current=7)), "conversation.current must be"),
        (_with(lambda d: d.update(version="1")), "version"),
        (_with(lambda d: d.pop("messages")), 'missing "messages"'),
        (_with(lambda d: d.update(messages={})), "messages has the wrong type"),
        (_with(lambda d: d["conversation"].update(title=None)), "conversation.title"),
        (_with(lambda d: d["conversation"].update(created_at="yesterday")), "ISO-8601"),
        (_with(lambda d: d["messages"].append("hello")), r"messages\[1\] must be an object"),
        (_with(lambda d: d["messages"][0].update(role="robot")), r"messages\[0\].role must be one of"),
        (_with(lambda d: d["messages"][0].update(status="done")), r"messages\[0\].status"),
        (_with(lambda d: d["messages"][0].update(content=5)), r"messages\[0\].content"),
        (_with(lambda d: d["messages"][0].update(params=[1])), r"messages\[0\].params"),
        (_with(lambda d: d["messages"][0].pop("updated_at")), r'messages\[0\] is missing "updated_at"'),
    ],
)
def test_bad_imports_are_rejected_and_add_nothing(store, data, message):
    with pytest.raises(StoreError, match=message):
        store.import_json(data)
    assert store.list_conversations() == []


def test_the_valid_base_of_the_bad_imports_imports(store):
    assert store.get_conversation(store.import_json(_valid())).title == "x"


@pytest.fixture
def tree(store):
    """Q1 with two replies (the second shown), and Q1 edited with its own reply."""
    cid = store.create_conversation(title="Tree")
    q1 = store.add_message(cid, "user", "Q1")
    first = store.add_message(cid, "assistant", "first reply")
    second = store.add_version(first, "second reply")
    edited = store.add_version(q1, "Q1 edited")
    store.add_message(cid, "assistant", "reply to the edit")
    store.show_version(second)
    return cid, {"q1": q1, "first": first, "second": second, "edited": edited}


def test_json_export_carries_the_whole_tree_and_the_branch_shown(store, tree):
    cid, ids = tree
    data = store.export_json(cid)
    messages = data["messages"]
    assert [(m["content"], m["parent"]) for m in messages] == [
        ("Q1", None), ("Q1 edited", None), ("first reply", 0), ("second reply", 0), ("reply to the edit", 1)]
    assert messages[data["conversation"]["current"]]["content"] == "second reply"

    copy = store.import_json(json.dumps(data))
    assert [(m.content, m.version, m.versions) for m in store.messages(copy)] == [("Q1", 1, 2), ("second reply", 2, 2)]
    assert store.export_json(copy)["messages"] == messages
    assert [m.content for m in store.messages(store.import_json(data | {"conversation": data["conversation"] | {
        "current": 4}}))] == ["Q1 edited", "reply to the edit"]


def test_deleted_versions_are_not_exported(store, tree):
    cid, ids = tree
    store.delete_version(ids["edited"])
    assert [m["content"] for m in store.export_json(cid)["messages"]] == ["Q1", "first reply", "second reply"]


def test_a_version_1_file_imports_as_one_branch(store):
    data = _valid() | {"messages": [
        {"role": role, "content": f"m{index}", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"}
        for index, role in enumerate(["user", "assistant", "user"])]}
    cid = store.import_json(data)
    messages = store.messages(cid)
    assert [(m.content, m.position, m.versions) for m in messages] == [("m0", 0, 1), ("m1", 1, 1), ("m2", 2, 1)]
    assert [m.parent_id for m in messages] == [None, messages[0].id, messages[1].id]


def test_markdown_writes_the_branch_shown_and_says_what_else_exists(store, tree):
    cid, ids = tree
    text = store.export_markdown(cid)
    assert "second reply\n\n*version 2 of 2*" in text and "first reply" not in text and "Q1 edited" not in text
    assert "3 messages on other branches" in text  # "first reply", "Q1 edited" and its reply
