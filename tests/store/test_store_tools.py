"""Tool calls and their results in the store: a reply's calls kept with it, each result a
message of the tree that answers one of them, read back typed, found by search, written to
Markdown and JSON; all on a real SQLite file."""

from __future__ import annotations

import json

import pytest

from app.conversation.exchange import begin_reply
from app.engine.sampling import SamplingParams
from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store import ConversationStore, DatabaseDamaged, StoreError, ToolResult
from app.store.exchange import VERSION

CALLED = ReplyStats(prompt_tokens=40, completion_tokens=12, stop_reason=StopReason.TOOL_CALLS)
ENDED = ReplyStats(prompt_tokens=80, completion_tokens=9, stop_reason=StopReason.END_OF_TURN)
WEATHER = ToolCall(0, "call_w", "get_weather", '{"city": "Zürich", "unit": "celsius"}')
TIME = ToolCall(1, "call_t", "local_time", '{"zone": "Europe/Zurich"}')


def headings(markdown: str) -> list[str]:
    """The headings a CommonMark reader sees: lines starting with "#" outside fenced blocks (a
    fence closes at a line of at least as many backticks as opened it)."""
    found, fence = [], 0
    for line in markdown.splitlines():
        ticks = len(line) - len(line.lstrip("`"))
        if fence and ticks >= fence and not line.strip("`").strip():
            fence = 0
        elif not fence and ticks >= 3:
            fence = ticks
        elif not fence and line.startswith("#"):
            found.append(line)
    return found


def called(store, cid, calls=(WEATHER, TIME), text="Let me look that up.") -> int:
    """A reply that ended with calls, through the exchange path the window and CLI use."""
    reply = begin_reply(store, cid, "", "tiny.gguf", SamplingParams())
    reply.save_partial(text)
    reply.finish(text, CALLED, tool_calls=calls)
    return reply.message_id


@pytest.fixture
def exchange(store):
    """A question, a reply with two calls, both results (the second an error), the last reply."""
    cid = store.create_conversation(title="Weather")
    user = store.add_message(cid, "user", "Weather and time in Zürich?")
    reply = called(store, cid)
    weather = store.add_tool_result(cid, ToolResult("call_w", "get_weather", '{"temp": 21, "sky": "sunny"}'))
    clock = store.add_tool_result(cid, ToolResult("call_t", "local_time", "The clock service is down.", error=True))
    final = begin_reply(store, cid, "", "tiny.gguf", SamplingParams())
    final.finish("21 °C and sunny; I could not get the time.", ENDED)
    return cid, {"user": user, "reply": reply, "weather": weather, "clock": clock, "final": final.message_id}


def test_calls_and_results_come_back_typed(store, exchange):
    cid, ids = exchange
    user, reply, weather, clock, final = store.messages(cid)
    assert (reply.role, reply.content, reply.status) == ("assistant", "Let me look that up.", ReplyStatus.COMPLETE)
    assert reply.tool_calls == (WEATHER, TIME) and reply.tool_result is None
    assert reply.stats.stop_reason is StopReason.TOOL_CALLS
    assert weather.role == "tool" and weather.tool_calls == ()
    assert weather.tool_result == ToolResult("call_w", "get_weather", '{"temp": 21, "sky": "sunny"}')
    assert weather.content == weather.tool_result.content and weather.parent_id == reply.id
    assert clock.tool_result.error and clock.parent_id == weather.id
    assert (final.parent_id, final.tool_calls, final.tool_result) == (clock.id, (), None)
    assert user.tool_calls == () and user.tool_result is None
    assert store.get_conversation(cid).title == "Weather"  # a tool message titles nothing


def test_the_next_reply_reads_the_calls_and_results_in_openai_form(store, exchange):
    cid, _ = exchange
    reply = begin_reply(store, cid, "Be brief.", "tiny.gguf", SamplingParams(), replacing=store.leaf_message(cid))
    assert reply.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather and time in Zürich?"},
        {"role": "assistant", "content": "Let me look that up.", "tool_calls": [
            {"id": "call_w", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Zürich", "unit": "celsius"}'}},
            {"id": "call_t", "type": "function",
             "function": {"name": "local_time", "arguments": '{"zone": "Europe/Zurich"}'}}]},
        {"role": "tool", "tool_call_id": "call_w", "name": "get_weather", "content": '{"temp": 21, "sky": "sunny"}'},
        {"role": "tool", "tool_call_id": "call_t", "name": "local_time", "content": "The clock service is down."},
    ]


def test_a_result_must_answer_a_call_of_the_reply_above_it(store, exchange):
    cid, ids = exchange
    with pytest.raises(StoreError, match="did not make"):  # the branch ends with a reply that made no call
        store.add_tool_result(cid, ToolResult("call_w", "get_weather", "again"))
    other = store.create_conversation()
    with pytest.raises(StoreError, match="did not make"):
        store.add_tool_result(other, ToolResult("call_w", "get_weather", "to nothing"))
    store.add_message(other, "user", "hi")
    with pytest.raises(StoreError, match="did not make"):
        store.add_tool_result(other, ToolResult("call_w", "get_weather", "to a question"))
    called(store, other, (WEATHER,))
    with pytest.raises(StoreError, match="called 'get_weather'"):
        store.add_tool_result(other, ToolResult("call_w", "rm_rf", "wrong tool"))
    with pytest.raises(StoreError, match="add_tool_result"):
        store.add_message(other, "tool", "a result without its call")
    with pytest.raises(StoreError, match="no conversation"):
        store.add_tool_result(12345, ToolResult("call_w", "get_weather", "x"))
    assert [m.role for m in store.messages(other)] == ["user", "assistant"]


def test_a_reply_cut_off_while_it_called_keeps_what_it_said(store):
    cid = store.create_conversation()
    store.add_message(cid, "user", "Weather?")
    reply = begin_reply(store, cid, "", None, SamplingParams())
    reply.save_partial("<tool_call>{\"name\": \"get_wea")
    store.close()
    with ConversationStore(store.path) as reopened:  # as after a crash: no calls, the text kept
        (_, cut) = reopened.messages(cid)
        assert (cut.status, cut.tool_calls, cut.content) == (ReplyStatus.CANCELLED, (), "<tool_call>{\"name\": \"get_wea")
        with pytest.raises(StoreError, match="not a streaming reply"):
            reopened.finish_message(cut.id, "late", CALLED, tool_calls=(WEATHER,))


def test_versions_branches_and_deletion_treat_tool_messages_like_any_other(store, exchange):
    cid, ids = exchange
    before = [m.id for m in store.messages(cid)]
    again = store.add_version(ids["final"], "", status=ReplyStatus.STREAMING)  # Regenerate the last reply
    store.finish_message(again, "Sunny, 21 °C.", ENDED)
    assert [m.id for m in store.messages(cid)] == [*before[:-1], again]

    edited = store.add_version(ids["clock"], "14:05 (read by hand)")  # the user corrects a result
    assert store.message(edited).tool_result == ToolResult("call_t", "local_time", "14:05 (read by hand)", True)
    assert (store.message(edited).version, store.message(edited).versions) == (2, 2)
    store.add_message(cid, "user", "Thanks!")

    deleted = store.delete_version(ids["weather"])  # the result and everything below it
    assert deleted.messages == 6 and store.leaf_message(cid).id == ids["reply"]
    store.add_tool_result(cid, ToolResult("call_w", "get_weather", "rain"))  # answered anew
    store.restore_version(deleted)
    store.show_version(ids["weather"])
    assert [m.role for m in store.messages(cid)] == ["user", "assistant", "tool", "tool", "user"]

    copy = store.branch_from(ids["clock"])
    assert [(m.role, m.tool_calls, m.tool_result) for m in store.messages(copy)] == [
        (m.role, m.tool_calls, m.tool_result) for m in map(store.message, (ids["user"], ids["reply"], ids["weather"],
                                                                           ids["clock"]))]
    store.add_message(copy, "user", "and tomorrow?")
    reply = called(store, copy, (WEATHER,))
    store.add_tool_result(copy, ToolResult("call_w", "get_weather", "tomorrow: snow"))
    assert store.message(reply).tool_calls == (WEATHER,)


def test_search_finds_tool_names_arguments_and_results(store, exchange):
    cid, _ = exchange
    for words in ("zurich celsius", "get_weather", "local_time europe", "sunny temp", "clock service down"):
        assert [c.id for c in store.search(words)] == [cid], words
    snippets = store.search_snippets("celsius", [cid])
    assert "celsius" in snippets[cid] and "get_weather" in snippets[cid]
    assert store.search_hit("service", cid) == store.messages(cid)[3].id


def test_search_without_full_text_finds_them_too(db_path):
    with ConversationStore(db_path, full_text_search=False) as store:
        cid = store.create_conversation()
        store.add_message(cid, "user", "Weather?")
        called(store, cid)
        store.add_tool_result(cid, ToolResult("call_w", "get_weather", "sunny"))
        for words in ("Zürich celsius", "local_time", "get_weather sunny"):
            assert [c.id for c in store.search(words)] == [cid], words
        assert "celsius" in store.search_snippets("celsius", [cid])[cid]
    with ConversationStore(db_path) as store:  # the index is built with the tools' columns
        assert [c.id for c in store.search("celsius")] == [cid]


def test_deleted_calls_are_not_found(store, exchange):
    cid, ids = exchange
    store.delete_version(ids["reply"])
    assert store.search("celsius") == []


def test_markdown_shows_calls_and_results_readably(store, exchange):
    cid, _ = exchange
    text = store.export_markdown(cid)
    assert ("## Assistant\n\nLet me look that up.\n\n**Tool call** `get_weather` · `call_w`\n\n"
            '```json\n{"city": "Zürich", "unit": "celsius"}\n```\n\n**Tool call** `local_time` · `call_t`') in text
    assert '## Tool result: `get_weather`\n\n```\n{"temp": 21, "sky": "sunny"}\n```\n\n*answers `call_w`*' in text
    assert "## Tool result: `local_time` (error)\n\n```\nThe clock service is down.\n```" in text
    assert text.index("local_time` (error)") < text.index("## Assistant\n\n21 °C")


def test_markdown_keeps_tool_text_from_breaking_the_page(store):
    cid = store.create_conversation()
    store.add_message(cid, "user", "go")
    name = "evil`name\n## User\n<script>"
    call = ToolCall(0, "id ``x``", name, '{"md": "```\\n## User\\n```"}', problem="arguments fail\n# the schema")
    called(store, cid, (call,), text="")
    store.add_tool_result(cid, ToolResult("id ``x``", name, "````\n## User\nfake turn\n````"))
    text = store.export_markdown(cid)
    assert headings(text) == ["# go", "## User", "## Assistant", "## Tool result: ``evil`name ## User <script>``"]
    assert '```json\n{"md": "```\\n## User\\n```"}\n```' in text  # its arguments hold no run of three backticks
    assert "`````\n````\n## User\nfake turn\n````\n`````" in text  # a fence longer than any inside
    assert "**Tool call** ``evil`name ## User <script>`` · ``` id ``x`` ```" in text
    assert "*Not run as written:* arguments fail # the schema" in text
    assert "## Assistant\n\n**Tool call**" in text  # a reply that only called says nothing empty


def test_json_export_carries_calls_and_results_and_imports_back(store, exchange):
    cid, _ = exchange
    data = json.loads(json.dumps(store.export_json(cid)))
    assert data["version"] == VERSION
    user, reply, weather, clock, final = data["messages"]
    assert "tool_calls" not in user and "tool_call_id" not in final
    assert reply["tool_calls"] == [
        {"id": "call_w", "name": "get_weather", "arguments": '{"city": "Zürich", "unit": "celsius"}', "problem": None},
        {"id": "call_t", "name": "local_time", "arguments": '{"zone": "Europe/Zurich"}', "problem": None}]
    assert (weather["role"], weather["tool_call_id"], weather["tool_name"], weather["tool_error"]) == (
        "tool", "call_w", "get_weather", False)
    assert (clock["parent"], clock["tool_error"]) == (2, True)
    copy = store.import_json(json.dumps(data))
    assert store.export_json(copy) == data
    assert [(m.tool_calls, m.tool_result) for m in store.messages(copy)] == [
        (m.tool_calls, m.tool_result) for m in store.messages(cid)]
    assert copy in {c.id for c in store.search("celsius")}


@pytest.mark.parametrize("stored", ['{"id": "c"}', '[{"id": 1, "name": "n", "arguments": "{}", "problem": null}]',
                                    '[{"id": "c", "name": "n"}]', "[[1]]", "not json"])
def test_calls_that_no_store_wrote_are_a_damaged_database(store, exchange, stored):
    cid, ids = exchange
    store._conn.execute("UPDATE messages SET tool_calls_json = ? WHERE id = ?", (stored, ids["reply"]))
    with pytest.raises(DatabaseDamaged, match=f"Message {ids['reply']} in the conversation database cannot be read"):
        store.message(ids["reply"])


def test_a_conversation_keeps_the_tool_servers_chosen_for_it(tmp_path):
    """Schema 4: None until the user chooses (the window's default applies), then the names as
    chosen, in order, across a reopen; a hand-damaged value reads as never chosen."""
    path = tmp_path / "c.sqlite3"
    with ConversationStore(path) as store:
        cid = store.create_conversation()
        assert store.get_conversation(cid).tool_servers is None
        store.set_tool_servers(cid, ("time", "files <b>"))
    with ConversationStore(path) as store:
        assert store.get_conversation(cid).tool_servers == ("time", "files <b>")
        store.set_tool_servers(cid, ())
        assert store.get_conversation(cid).tool_servers == ()
        store._conn.execute("UPDATE conversations SET tool_servers_json = '{not json' WHERE id = ?", (cid,))
        assert store.get_conversation(cid).tool_servers is None
