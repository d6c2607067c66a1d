"""The tools a reply is offered, from the servers chosen: the names the model sees, the way back
from a name to its server, the command line's names for tools, and schemas the grammar cannot
hold offered loosened rather than breaking the request."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from app.engine.tools.schema import check_schema
from app.engine.tools.types import ToolChoice, ToolChoiceMode, ToolUse
from app.engine.tools.wire import NAME, call_problem, tool_use_from_openai
from app.tool_servers.catalog import ToolCatalog, UnknownTool
from app.tool_servers.listing import MAX_DESCRIPTION_CHARS, listed_tools
from app.tool_servers.types import ListedTool, ServerState, ServerStatus

ARGS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def status(server: str, *names: str, schema: dict = ARGS, state=ServerState.READY) -> ServerStatus:
    return ServerStatus(server, state, tuple(ListedTool(server, name, f"{name} of {server}", schema) for name in names))


def test_tools_keep_their_own_names_and_go_back_to_their_server():
    catalog = ToolCatalog([status("files", "read", "write"), status("time", "now")])
    assert [tool.name for tool in catalog.tools] == ["read", "write", "now"]
    assert catalog.lookup("now") == ListedTool("time", "now", "now of time", ARGS)
    assert catalog.lookup("nope") is None
    assert catalog.tools[0].parameters == ARGS and catalog.tools[0].description == "read of files"


def test_only_the_servers_chosen_are_offered():
    statuses = [status("files", "read"), status("time", "now")]
    assert [tool.name for tool in ToolCatalog.build(statuses, {"time"}).tools] == ["now"]
    assert len(ToolCatalog(statuses, ())) == 0


def test_a_name_two_servers_offer_is_prefixed_with_each_server():
    catalog = ToolCatalog([status("files", "read", "list"), status("notes", "read"), status("x", "files_read")])
    assert [tool.name for tool in catalog.tools] == ["files_read_2", "list", "notes_read", "files_read"]
    assert catalog.lookup("notes_read").server == "notes"
    assert catalog.lookup("files_read_2") == catalog.listed[0]
    assert catalog.model_name(catalog.listed[2]) == "notes_read"


def test_model_names_are_always_function_names():
    long = "a." * 60  # 120 characters of an MCP name, '.' included
    catalog = ToolCatalog([status("my server", "get.item", long, "x"), status("другой", "x")])
    names = [tool.name for tool in catalog.tools]
    assert names[:2] == ["get_item", ("a_" * 32)[:64]]
    assert all(NAME.fullmatch(name) for name in names) and len(set(names)) == 4
    assert catalog.lookup(names[0]).name == "get.item"


def test_the_command_line_names_a_tool_by_its_own_name_or_server_and_tool():
    catalog = ToolCatalog([status("files", "read", "stat"), status("notes", "read"), status("a/b", "c")])
    assert catalog.find("stat").server == "files"
    assert catalog.find("notes/read").server == "notes"
    assert catalog.find("a/b/c").server == "a/b"  # a server's name may hold '/'; a tool's never does
    assert catalog.find("notes_read").server == "notes"  # the model's name, too
    with pytest.raises(UnknownTool, match="more than one server: write one of files/read, notes/read"):
        catalog.find("read")
    with pytest.raises(UnknownTool, match="no tool is named nope; the tools are: read, stat"):
        catalog.find("nope")
    with pytest.raises(UnknownTool, match="no server named web"):
        catalog.find("web/read")
    with pytest.raises(UnknownTool, match="files offers no tool named write"):
        catalog.find("files/write")


def test_a_schema_the_grammar_cannot_hold_is_offered_loosened_and_the_request_still_works():
    strict = {"type": "object", "$schema": "http://json-schema.org/draft-07/schema#",
              "properties": {"n": {"type": "integer", "minimum": 1, "title": "N"},
                             "url": {"type": "string", "format": "uri"},
                             "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True}},
              "required": ["n", "url"], "additionalProperties": False}
    weird = {"type": "object", "properties": {"when": {"not": {"type": "null"}}}, "patternProperties": {"^x": {}}}
    catalog = ToolCatalog([status("s", "fine"), status("t", "strict", schema=strict), status("u", "weird", schema=weird)])
    fine, loosened, weird_tool = catalog.tools
    assert fine.parameters == ARGS
    assert loosened.parameters["properties"]["n"] == {"type": "integer", "title": "N"}
    assert loosened.parameters["required"] == ["n", "url"] and loosened.parameters["additionalProperties"] is False
    assert weird_tool.parameters["properties"]["when"] == {}
    assert [note.split(":")[0] for note in catalog.notes] == ["t/strict", "u/weird"]
    for tool in catalog.tools:
        check_schema(tool.parameters, "p")
    # The whole set goes through the same reading a request's tools do, as the engine gets them.
    use = tool_use_from_openai(tools=[tool.to_openai() for tool in catalog.tools], tool_choice="auto")
    assert call_problem(use, "strict", json.dumps({"n": 0, "url": "x"})) is None  # the server checks the rest
    assert "n" in call_problem(use, "strict", json.dumps({"url": "x"}))
    ToolUse(catalog.tools, ToolChoice(ToolChoiceMode.FUNCTION, "strict"))


def test_a_schema_that_cannot_even_be_loosened_is_any_object_with_its_properties_described():
    deep: dict = {"type": "string"}
    for _ in range(80):
        deep = {"type": "object", "properties": {"d": deep}}
    [tool] = ToolCatalog([status("s", "deep", schema=deep)]).tools
    assert tool.parameters == {"type": "object"}
    assert "Arguments (JSON schema of its properties)" in tool.description or len(json.dumps(deep)) > 2000


def test_listing_refuses_names_that_are_not_mcp_names_and_says_why():
    def tool(name, schema=ARGS, description=""):
        return SimpleNamespace(name=name, input_schema=schema, description=description, title=None, annotations=None)

    offered, skipped = listed_tools("s", [
        tool("ok.name-1"), tool("<b>x</b>"), tool("evil\u202etxt"), tool("bell\x07"), tool("two words"), tool(""),
        tool("y" * 129), tool("ok.name-1"), tool("arr", {"type": "array"}), tool("long", description="d" * 10_000)])
    assert [t.name for t in offered] == ["ok.name-1", "long"]
    assert len(offered[1].description) == MAX_DESCRIPTION_CHARS
    assert skipped[0] == '<b>x</b>: its name holds "<", which tool names may not'
    assert skipped[1] == "evil\ufffdtxt: its name holds an invisible or control character (U+202E), which tool names may not"
    assert "U+0007" in skipped[2] and "a space" in skipped[3] and "without a name" in skipped[4]
    assert "longer than 128" in skipped[5] and "second tool of this name" in skipped[6]
    assert "not a JSON object schema" in skipped[7]
    assert all(char.isprintable() for line in skipped for char in line)
