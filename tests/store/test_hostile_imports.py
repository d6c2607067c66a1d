"""A corpus of hostile import files, generated here: each ends in one short StoreError, quickly,
with nothing imported (the real store, real files, a real SQLite database)."""

from __future__ import annotations

import json
import time

import pytest

from app.engine.sampling import SamplingParams
from app.store import ConversationStore, StoreError, import_file
from app.store.exchange import MAX_IMPORT_BYTES, MAX_IMPORT_MESSAGES

TS = "2024-01-01T00:00:00Z"


def _valid(messages: int = 1) -> dict:
    return {
        "format": "hearth.conversation",
        "version": 1,
        "conversation": {"title": "x", "created_at": TS, "updated_at": TS},
        "messages": [{"role": "user", "content": "hi", "created_at": TS, "updated_at": TS} for _ in range(messages)],
    }


def _json(change) -> bytes:
    data = _valid()
    change(data)
    return json.dumps(data).encode()


def _message(**values):
    return lambda d: d["messages"][0].update(values)


def _conversation(**values):
    return lambda d: d["conversation"].update(values)


def _drop(*keys):
    def change(data):
        target = data
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]
    return change


# name -> (file bytes, a word the message must hold)
CORPUS: dict[str, tuple[bytes, str]] = {
    # Timestamps
    "year 9999 with a negative offset": (_json(_conversation(created_at="9999-12-31T23:59:59-23:59")), "out of range"),
    "year 1 with a positive offset": (_json(_message(updated_at="0001-01-01T00:00:00+23:59")), "out of range"),
    "timestamp that is a word": (_json(_conversation(updated_at="yesterday")), "ISO-8601"),
    "megabyte timestamp": (_json(_conversation(created_at="9" * 1_000_000)), "ISO-8601"),
    "timestamp that is a number": (_json(_message(created_at=1700000000)), "wrong type"),
    # Unicode
    "lone surrogate in content": (_json(_message(content="\ud800")), "not valid Unicode"),
    "lone surrogate in title": (_json(_conversation(title="a\udfffb")), "not valid Unicode"),
    "lone surrogate in a model name": (_json(_message(model="\udc00")), "not valid Unicode"),
    "lone surrogate in the system prompt": (_json(_conversation(system_prompt="\ud83d")), "not valid Unicode"),
    "lone surrogate in a stop string": (_json(_message(params={"stop": ["\ud800"]})), "not valid Unicode"),
    "lone surrogate in a stats error": (_json(_message(stats={"error": "\ud800"})), "not valid Unicode"),
    "invalid UTF-8": (b'{"format": "hearth.conversation", "x": "\xff\xfe\xfd"}', "malformed"),
    # Nesting and size
    "100,000 nested arrays": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "100,000 nested objects in the conversation": (
        b'{"format": "hearth.conversation", "version": 1, "conversation": ' + b'{"a": ' * 100_000 + b"1"
        + b"}" * 100_001, "nested too deeply"),
    "nested params": (_json(_message(params={"a": [[["deep"]]]})), "must be a number, text"),
    "params nested in an object": (_json(_message(params={"logit_bias": {"1": {"2": 3}}})), "must be a number, text"),
    "lone surrogate in a logit_bias key": (_json(_message(params={"logit_bias": {"\udc00": 1}})), "not valid Unicode"),
    "a 5,000-digit version": (b'{"format": "hearth.conversation", "version": ' + b"9" * 5_000 + b"}", "malformed"),
    "a 40-digit version": (_json(lambda d: d.update(version=10**40)), "newer Hearth"),
    "a number too large for stats": (_json(_message(stats={"ttft_s": 10**400})), "out of range"),
    "an infinite float in stats": (_json(_message(stats={"tokens_per_s": float("inf")})), "not a finite number"),
    "NaN in params": (_json(_message(params={"temperature": float("nan")})), "not a finite number"),
    "1e999 in params": (
        json.dumps(_valid()).replace('"content": "hi"', '"content": "hi", "params": {"top_p": 1e999}').encode(),
        "not a finite number"),
    "a megabyte role": (_json(_message(role="r" * 1_000_000)), "role must be one of"),
    "a megabyte status": (_json(_message(status="s" * 1_000_000)), "status must be one of"),
    # Wrong types
    "a list at the top": (b"[1, 2, 3]", "not a Hearth conversation export"),
    "a string at the top": (b'"hearth.conversation"', "not a Hearth conversation export"),
    "format of another app": (_json(lambda d: d.update(format="other.app")), "not a Hearth conversation export"),
    "version true": (_json(lambda d: d.update(version=True)), "version"),
    "version 1.0": (_json(lambda d: d.update(version=1.0)), "version"),
    "conversation is a list": (_json(lambda d: d.update(conversation=[])), "conversation has the wrong type"),
    "messages is an object": (_json(lambda d: d.update(messages={})), "messages has the wrong type"),
    "a message that is a string": (_json(lambda d: d["messages"].append("hello")), "must be an object"),
    "title is a number": (_json(_conversation(title=5)), "conversation.title has the wrong type"),
    "title is null": (_json(_conversation(title=None)), "conversation.title has the wrong type"),
    "content is a list": (_json(_message(content=["hi"])), "content has the wrong type"),
    "role is null": (_json(_message(role=None)), "role has the wrong type"),
    "params is a list": (_json(_message(params=[1])), "params has the wrong type"),
    "stats is a string": (_json(_message(stats="fast")), "stats has the wrong type"),
    "stop reason is a list": (_json(_message(stats={"stop_reason": [1]})), "not valid reply statistics"),
    # Missing keys
    "no format": (_json(_drop("format")), "not a Hearth conversation export"),
    "no version": (_json(_drop("version")), "version"),
    "no conversation": (_json(_drop("conversation")), 'missing "conversation"'),
    "no messages": (_json(_drop("messages")), 'missing "messages"'),
    "no title": (_json(_drop("conversation", "title")), 'missing "title"'),
    "no created_at": (_json(_drop("conversation", "created_at")), 'missing "created_at"'),
    "no role": (_json(lambda d: d["messages"][0].pop("role")), 'missing "role"'),
    "no content": (_json(lambda d: d["messages"][0].pop("content")), 'missing "content"'),
    # Not JSON at all
    "empty file": (b"", "malformed"),
    "NUL bytes": (b"\x00" * 4096, "malformed"),
    "random binary": (bytes(range(256)) * 64, "malformed"),
    "truncated export": (json.dumps(_valid()).encode()[:-10], "malformed"),
    "a Markdown export": (b"# Tea\n\n*Created 2024-01-01 00:00 UTC*\n\n## User\n\nGreen or black?\n", "malformed"),
    "Markdown with a JSON code block": (b"```json\n" + json.dumps(_valid()).encode() + b"\n```\n", "malformed"),
    "JSON lines": (json.dumps(_valid()).encode() + b"\n" + json.dumps(_valid()).encode(), "malformed"),
}


def _assert_clear(message: str, word: str) -> None:
    assert word in message
    assert len(message) < 400 and message.count("\n") <= 1, message[:500]
    assert "Traceback" not in message


@pytest.fixture
def store(tmp_path):
    with ConversationStore(tmp_path / "conversations.sqlite3") as opened:
        yield opened


def _nothing_imported(store: ConversationStore) -> bool:
    counts = store._conn.execute("SELECT (SELECT COUNT(*) FROM conversations), (SELECT COUNT(*) FROM messages)")
    return tuple(counts.fetchone()) == (0, 0)


def test_the_corpus_is_large_and_its_valid_base_imports(store):
    assert len(CORPUS) >= 50
    assert store.import_json(json.dumps(_valid()).encode()) > 0


@pytest.mark.parametrize("name", CORPUS)
def test_each_hostile_file_is_one_clear_message_and_imports_nothing(store, tmp_path, name):
    content, word = CORPUS[name]
    path = tmp_path / "hostile.json"
    path.write_bytes(content)
    started = time.monotonic()
    with pytest.raises(StoreError) as raised:
        import_file(store.path, path)
    assert time.monotonic() - started < 2
    _assert_clear(str(raised.value), word)
    with pytest.raises(StoreError):  # the GUI thread's own import path says the same
        store.import_json(content)
    assert _nothing_imported(store)


def test_a_bad_last_message_imports_none_of_the_good_ones(store, tmp_path):
    data = _valid(messages=2_000)
    data["messages"][-1]["created_at"] = "9999-12-31T23:59:59-23:59"
    path = tmp_path / "almost.json"
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError, match=r"messages\[1999\].created_at is out of range"):
        import_file(store.path, path)
    assert _nothing_imported(store)


def test_files_that_cannot_be_read_name_the_file(store, tmp_path):
    with pytest.raises(StoreError, match="Can't read missing.json"):
        import_file(store.path, tmp_path / "missing.json")
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(StoreError, match="Can't read folder.json"):
        import_file(store.path, tmp_path / "folder.json")
    assert _nothing_imported(store)


def test_a_file_larger_than_any_export_is_refused_without_reading_it_all(store, tmp_path):
    huge = tmp_path / "huge.json"
    with huge.open("wb") as file:
        file.truncate(4 * MAX_IMPORT_BYTES)  # sparse: costs no disk
    started = time.monotonic()
    with pytest.raises(StoreError, match=f"huge.json is larger than {MAX_IMPORT_BYTES // 2**20} MB"):
        import_file(store.path, huge)
    assert time.monotonic() - started < 2
    assert _nothing_imported(store)


def test_more_messages_than_a_conversation_holds_are_refused(store, tmp_path):
    tiny = {"role": "user", "content": "", "created_at": TS, "updated_at": TS}
    data = _valid()
    data["messages"] = [tiny] * (MAX_IMPORT_MESSAGES + 1)
    path = tmp_path / "million.json"
    path.write_text(json.dumps(data))
    started = time.monotonic()
    with pytest.raises(StoreError, match="100,001 messages"):
        import_file(store.path, path)
    assert time.monotonic() - started < 2
    assert _nothing_imported(store)


def test_the_parameters_hearth_writes_import(store):
    data = _valid()
    data["messages"][0]["params"] = SamplingParams(stop=["</s>"], logit_bias={"42": -100.0}).to_dict()
    (message,) = store.messages(store.import_json(data))
    assert message.params == data["messages"][0]["params"]


def test_statistics_are_stored_as_this_version_reads_them(store):
    data = _valid()
    data["messages"][0]["stats"] = {"completion_tokens": 5, "ttft_s": 1, "unknown": {"x": 1}, "stop_reason": "nonsense"}
    (message,) = store.messages(store.import_json(data))
    assert (message.stats.completion_tokens, message.stats.ttft_s, message.stats.stop_reason) == (5, 1.0, None)
