"""A question's sources (the passages of the user's documents its reply read) in the exports:
JSON version 4 carries them and imports them back, older files import without them, a hostile
file's sources end in one short StoreError with nothing imported, and the Markdown export lists
them under the question."""

from __future__ import annotations

import pytest

from app.conversation.exchange import begin_reply
from app.engine.sampling import SamplingParams
from app.engine.types import ReplyStats, StopReason
from app.store import Source, StoreError
from app.store.exchange import VERSION

TS = "2024-01-01T00:00:00Z"
SOURCES = (Source("/home/me/roses.pdf", "Prune in late winter.", 3, "Roses"), Source("/home/me/notes.md", "Water daily."))


def asked(store) -> int:
    cid = store.create_conversation(title="Garden")
    question = store.add_message(cid, "user", "When do I prune roses?")
    store.set_sources(question, SOURCES)
    begin_reply(store, cid, "", "m.gguf", SamplingParams()).finish(
        "In late winter [1].", ReplyStats(prompt_tokens=9, completion_tokens=5, stop_reason=StopReason.END_OF_TURN))
    return cid


def test_sources_go_out_and_come_back_with_the_question(store):
    exported = store.export_json(asked(store))
    assert exported["version"] == VERSION and exported["messages"][0]["sources"][0] == {
        "path": "/home/me/roses.pdf", "page": 3, "heading": "Roses", "text": "Prune in late winter."}
    assert "sources" not in exported["messages"][1]
    question, reply = store.messages(store.import_json(exported))
    assert question.sources == SOURCES and reply.sources == ()


def test_the_markdown_export_lists_them_under_the_question(store):
    text = store.export_markdown(asked(store))
    assert "When do I prune roses?\n\nSources:\n\n1. `/home/me/roses.pdf`, page 3\n2. `/home/me/notes.md`" in text


def export(sources, role: str = "user", version: int = 4) -> dict:
    return {"format": "hearth.conversation", "version": version,
            "conversation": {"title": "t", "created_at": TS, "updated_at": TS, "current": 0},
            "messages": [{"role": role, "content": "Q", "parent": None, "created_at": TS, "updated_at": TS,
                          "sources": sources}]}


def test_a_version_3_file_has_no_sources_to_read(store):
    (question,) = store.messages(store.import_json(export([{"path": "/a", "text": "x"}], version=3)))
    assert question.sources == ()


HOSTILE = {
    "sources on a reply": (export([{"path": "/a", "text": "x"}], role="assistant"), "only a user message"),
    "sources as an object": (export({"path": "/a"}), "sources has the wrong type"),
    "a source that is text": (export(["/a"]), r"sources\[0\] must be an object"),
    "a source without a path": (export([{"text": "x"}]), 'missing "path"'),
    "a page of 0": (export([{"path": "/a", "text": "x", "page": 0}]), "page number from 1"),
    "a page that is true": (export([{"path": "/a", "text": "x", "page": True}]), "page number from 1"),
    "a page as text": (export([{"path": "/a", "text": "x", "page": "3"}]), "page has the wrong type"),
    "a lone surrogate": (export([{"path": "/a", "text": "\ud800"}]), "not valid Unicode"),
    "a million sources": (export([{"path": "/a", "text": "x"}] * 1_001), "up to 1,000"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_sources_are_refused_and_nothing_is_imported(store, name):
    data, said = HOSTILE[name]
    with pytest.raises(StoreError, match=said):
        store.import_json(data)
    assert store.list_conversations() == []


def test_a_branch_keeps_the_sources_and_the_choices(store):
    cid = asked(store)
    store.set_collections(cid, ("garden",))
    store.set_tool_servers(cid, ("weather",))
    reply = store.messages(cid)[-1]
    branch = store.branch_from(reply.id)
    assert store.messages(branch)[0].sources == SOURCES
    assert (store.get_conversation(branch).collections, store.get_conversation(branch).tool_servers) == (
        ("garden",), ("weather",))
