"""Importing tool calls and results: files of every older version still import, version 3
carries tools, and a hostile file's tools end in one short StoreError with nothing imported
(or, where nothing is wrong but size, import in bounded time)."""

from __future__ import annotations

import json
import time

import pytest

from app.engine.tools.types import ToolCall
from app.store import StoreError, ToolResult, import_file
from app.store.exchange import MAX_TOOL_CALLS, VERSION

TS = "2024-01-01T00:00:00Z"


def message(role: str, content: str = "", parent: int | None = None, **fields) -> dict:
    return {"role": role, "content": content, "parent": parent, "created_at": TS, "updated_at": TS, **fields}


def call(id_: str = "c1", name: str = "lookup", arguments: str = '{"q": "tea"}', problem: str | None = None) -> dict:
    return {"id": id_, "name": name, "arguments": arguments, "problem": problem}


def export(*messages: dict, version: int = 3) -> dict:
    return {"format": "hearth.conversation", "version": version,
            "conversation": {"title": "t", "created_at": TS, "updated_at": TS, "current": len(messages) - 1},
            "messages": list(messages)}


def tool_exchange() -> list[dict]:
    return [message("user", "tea?"), message("assistant", "", 0, tool_calls=[call(), call("c2", "brew")]),
            message("tool", "green", 1, tool_call_id="c1", tool_name="lookup"),
            message("tool", "kettle broken", 2, tool_call_id="c2", tool_name="brew", tool_error=True),
            message("assistant", "Green, but the kettle is broken.", 3)]


def test_a_version_3_file_imports_with_its_calls_and_results(store):
    cid = store.import_json(export(*tool_exchange()))
    user, reply, first, second, final = store.messages(cid)
    assert reply.tool_calls == (ToolCall(0, "c1", "lookup", '{"q": "tea"}'), ToolCall(1, "c2", "brew", '{"q": "tea"}'))
    assert (first.tool_result, second.tool_result) == (
        ToolResult("c1", "lookup", "green"), ToolResult("c2", "brew", "kettle broken", error=True))
    assert final.tool_result is None and store.search("kettle broken")[0].id == cid


@pytest.mark.parametrize("version", [1, 2])
def test_files_of_older_versions_still_import(store, version):
    plain = [message("user", "Q"), message("assistant", "A", 0), message("user", "Q2", 1)]
    if version == 1:
        for item in plain:
            del item["parent"]
    cid = store.import_json(json.dumps(export(*plain, version=version)))
    assert [(m.role, m.content, m.tool_calls, m.tool_result) for m in store.messages(cid)] == [
        ("user", "Q", (), None), ("assistant", "A", (), None), ("user", "Q2", (), None)]


def test_tool_fields_in_an_older_file_are_unknown_keys(store):
    """Version 2 never wrote them; a file that says version 2 is read as version 2 reads it."""
    items = [message("user", "Q"), message("assistant", "A", 0, tool_calls=[call()], tool_error=True)]
    (_, reply) = store.messages(store.import_json(export(*items, version=2)))
    assert reply.tool_calls == ()


def test_a_newer_version_is_refused_clearly(store):
    newer = VERSION + 1
    with pytest.raises(StoreError, match=f"format version {newer}, from a newer Hearth; this one reads version {VERSION}"):
        store.import_json(export(message("user", "Q"), version=newer))


def _with(change) -> dict:
    items = tool_exchange()
    change(items)
    return export(*items)


def _set(index: int, **fields):
    return lambda items: items[index].update(fields)


def _drop(index: int, name: str):
    return lambda items: items[index].pop(name)


HOSTILE = {
    "a tool role in a version-2 file": (export(message("user"), message("tool", "", 0, tool_call_id="c",
                                                                         tool_name="n"), version=2), "role must be one of"),
    "a tool message first": (export(message("tool", "x", tool_call_id="c1", tool_name="lookup")), "did not make"),
    "a tool message under a question": (_with(_set(2, parent=0)), "did not make"),
    "a result for a call never made": (_with(_set(2, tool_call_id="c9")), "'c9', which the reply above it did not make"),
    "a result naming another tool": (_with(_set(3, tool_name="rm")), "called 'brew'"),
    "a result under another reply's result": (
        _with(lambda items: items.append(message("tool", "late", 4, tool_call_id="c1", tool_name="lookup"))),
        "did not make"),
    "a tool message naming no call": (_with(_drop(2, "tool_call_id")), 'missing "tool_call_id"'),
    "a tool message naming no tool": (_with(_drop(2, "tool_name")), 'missing "tool_name"'),
    "an empty call id": (_with(_set(2, tool_call_id="")), "1 to 1,000 characters"),
    "a megabyte tool name": (_with(_set(2, tool_name="n" * 1_000_000)), "1 to 1,000 characters"),
    "a call id that is a number": (_with(_set(2, tool_call_id=7)), "tool_call_id has the wrong type"),
    "an error flag that is text": (_with(_set(3, tool_error="yes")), "tool_error has the wrong type"),
    "an error flag on a question": (_with(_set(0, tool_error=False)), "belongs to a tool result"),
    "a call id on a reply": (_with(_set(4, tool_call_id="c1")), "belongs to a tool result"),
    "calls made by the user": (_with(_set(0, tool_calls=[call()])), "only an assistant message makes"),
    "calls made by a tool": (_with(_set(2, tool_calls=[call()])), "only an assistant message makes"),
    "calls that are an object": (_with(_set(1, tool_calls={"id": "c1"})), "tool_calls has the wrong type"),
    "a call that is a string": (_with(_set(1, tool_calls=["lookup()"])), r"tool_calls\[0\] must be an object"),
    "arguments as an object": (_with(_set(1, tool_calls=[call() | {"arguments": {"q": "tea"}}])), "arguments has the wrong type"),
    "a call without a name": (_with(_set(1, tool_calls=[{"id": "c1", "arguments": "{}"}])), 'missing "name"'),
    "a problem that is a list": (_with(_set(1, tool_calls=[call(problem=["bad"])])), "problem has the wrong type"),
    "a lone surrogate in arguments": (_with(_set(1, tool_calls=[call(arguments='{"q": "\ud800"}')])), "not valid Unicode"),
    "too many calls": (_with(_set(1, tool_calls=[call(f"c{n}") for n in range(MAX_TOOL_CALLS + 1)])),
                       f"{MAX_TOOL_CALLS + 1:,} tool calls"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_each_hostile_tool_file_is_one_clear_message_and_imports_nothing(store, tmp_path, name):
    data, words = HOSTILE[name]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))
    started = time.monotonic()
    with pytest.raises(StoreError, match=words) as raised:
        import_file(store.path, path)
    assert time.monotonic() - started < 2
    text = str(raised.value)
    assert len(text) < 400 and "\n" not in text and "Traceback" not in text, text[:500]
    with pytest.raises(StoreError, match=words):
        store.import_json(data)
    assert store._conn.execute("SELECT (SELECT COUNT(*) FROM conversations) + (SELECT COUNT(*) FROM messages)").fetchone()[0] == 0


def test_huge_and_deeply_nested_arguments_are_text_and_import_in_bounded_time(store, tmp_path):
    """Arguments are the model's JSON text, never parsed on import or export: 6 MB of them, or
    JSON nested 200,000 deep, import, export and search like any text."""
    huge = '{"text": "' + "tea " * 1_500_000 + '"}'
    deep = "[" * 200_000
    items = tool_exchange()
    items[1]["tool_calls"] = [call(arguments=huge), call("c2", "brew", deep)]
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(export(*items)))
    started = time.monotonic()
    cid = import_file(store.path, path)
    (_, reply, *_) = store.messages(cid)
    assert [c.arguments for c in reply.tool_calls] == [huge, deep]
    assert deep in store.export_markdown(cid) and store.export_json(cid)["messages"][1]["tool_calls"][1]["arguments"] == deep
    assert store.search("brew")[0].id == cid
    assert time.monotonic() - started < 30


def test_a_long_chain_of_results_is_checked_in_one_pass(store):
    """A result answers the reply above the results before it: a file of 10,000 results under
    one reply is checked without walking up from each."""
    calls = [call(f"c{n}") for n in range(MAX_TOOL_CALLS)]
    items = [message("user", "go"), message("assistant", "", 0, tool_calls=calls)]
    items += [message("tool", "ok", n + 1, tool_call_id=f"c{n % MAX_TOOL_CALLS}", tool_name="lookup")
              for n in range(10_000)]
    started = time.monotonic()
    cid = store.import_json(export(*items))
    assert time.monotonic() - started < 10
    assert store.recent_messages(cid, 1).earlier == 10_001
