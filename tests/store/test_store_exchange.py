import json

import pytest

from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store import StoreError

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
    assert (data["format"], data["version"]) == ("hearth.conversation", 2)
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
        (_with(lambda d: d.update(version=3)), "newer Hearth"),
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
