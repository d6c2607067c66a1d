"""ToolServers against real MCP servers: one written with the SDK (toolbox.py) and the published
mcp-server-time, each a child process spoken to over stdio, as the window and the command line
use them. Every method the window calls returns at once; calls resolve to outcomes, never errors."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from support.mcp_servers.configs import supervised, time_server, toolbox

from app.tool_servers.types import PartKind, ServerState

ALLOWED_ENV = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}  # the SDK's allow-list on POSIX
PYTHON_SETS = {"LC_CTYPE"}  # the child's own interpreter coerces the C locale (PEP 538)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    seen = []
    logs = tmp_path_factory.mktemp("logs")
    with supervised([toolbox(env=(("GIVEN", "by the user"),)), time_server()], log_dir=logs,
                    on_status=seen.append) as servers:
        servers.seen, servers.logs = seen, logs
        ready = servers.wait_ready(["box", "time"], 30)
        assert [status.state for status in ready] == [ServerState.READY] * 2, ready
        yield servers


def call(servers, *args, **kwargs):
    return servers.call(*args, **kwargs).result(30)


def test_nothing_starts_when_it_is_made():
    before = {thread.name for thread in threading.enumerate()}
    began = time.perf_counter()
    with supervised([toolbox(), toolbox("off", enabled=False)]) as servers:
        assert time.perf_counter() - began < 0.05
        assert [(s.name, s.state) for s in servers.statuses()] == [("box", ServerState.IDLE), ("off", ServerState.OFF)]
        assert {thread.name for thread in threading.enumerate()} == before


def test_the_toolbox_lists_its_tools_and_answers(servers):
    box = servers.status("box")
    assert {"add", "echo", "slow", "image", "structured", "grow", "env_dump"} <= {tool.name for tool in box.tools}
    assert next(tool for tool in box.tools if tool.name == "add").input_schema["required"] == ["a", "b"]
    outcome = call(servers, "box", "add", {"a": 2, "b": 3})
    assert (outcome.model_text, outcome.error) == ("5", False) and outcome.elapsed_s > 0


def test_images_and_structured_content_come_back_as_parts(servers):
    image = call(servers, "box", "image", {})
    assert [part.kind for part in image.parts] == [PartKind.TEXT, PartKind.IMAGE]
    assert image.parts[1].data.startswith(b"\x89PNG")
    structured = call(servers, "box", "structured", {"terms": [1, 2, 3]})
    assert json.loads(structured.parts[-1].text) == {"total": 6, "terms": [1, 2, 3]}


def test_a_tool_that_fails_is_an_error_outcome(servers):
    failed = call(servers, "box", "fail", {"why": "no"})
    assert failed.error and "fail" in failed.model_text


def test_the_published_time_server_answers(servers):
    assert {tool.name for tool in servers.status("time").tools} == {"get_current_time", "convert_time"}
    outcome = call(servers, "time", "get_current_time", {"timezone": "Europe/Paris"})
    assert not outcome.error and json.loads(outcome.model_text)["timezone"] == "Europe/Paris"
    wrong = call(servers, "time", "get_current_time", {"timezone": "Mars/Olympus"})
    assert wrong.error and "Mars/Olympus" in wrong.model_text


def test_calls_that_cannot_be_made_say_why(servers):
    assert "No tool server is named nope" in call(servers, "nope", "add", {}).model_text
    assert "offers no tool named subtract" in call(servers, "box", "subtract", {}).model_text
    assert "not a JSON object" in servers.call("box", "add", [1, 2]).result(1).model_text  # type: ignore[arg-type]


def test_a_changed_tool_list_is_read_again(servers):
    assert call(servers, "box", "grow", {"name": "newt"}).model_text == "added newt"
    deadline = time.monotonic() + 5
    while "newt" not in {tool.name for tool in servers.status("box").tools}:
        assert time.monotonic() < deadline, "the list_changed notification was not followed"
        time.sleep(0.02)
    assert any("newt" in {tool.name for tool in status.tools} for status in servers.seen)


def test_a_call_times_out_with_a_message_and_the_server_goes_on(servers):
    began = time.monotonic()
    outcome = call(servers, "box", "slow", {"seconds": 30}, timeout_s=0.5)
    assert outcome.error and "did not answer within 0.5 s" in outcome.model_text
    assert time.monotonic() - began < 2
    assert call(servers, "box", "echo", {"text": "still here"}).model_text == "still here"


def test_stop_cancels_the_call_in_flight(servers):
    future = servers.call("box", "slow", {"seconds": 30})
    time.sleep(0.3)
    began = time.monotonic()
    assert future.cancel() and future.cancelled()
    assert time.monotonic() - began < 0.05
    assert call(servers, "box", "echo", {"text": "after"}).model_text == "after"


def test_the_child_gets_no_variable_the_user_did_not_give_it(servers, monkeypatch):
    monkeypatch.setenv("HEARTH_TEST_SECRET", "s3cret-token")
    servers.configure([toolbox("fresh", env=(("GIVEN", "by the user"),))])  # a new child, started now
    try:
        env = json.loads(call(servers, "fresh", "env_dump", {}).model_text)
    finally:
        servers.configure([toolbox(env=(("GIVEN", "by the user"),)), time_server()])
    assert "HEARTH_TEST_SECRET" not in env and "s3cret-token" not in json.dumps(env)
    assert env["GIVEN"] == "by the user"
    assert set(env) <= ALLOWED_ENV | PYTHON_SETS | {"GIVEN"}, set(env) - ALLOWED_ENV
    assert "HEARTH_HOME" in os.environ and "HEARTH_HOME" not in env


def test_the_childs_stderr_goes_to_its_log(servers):
    log = (servers.logs / "box.log").read_text()
    assert "starting" in log and "toolbox: starting" in log


def test_configure_keeps_what_did_not_change_and_stops_the_rest(servers):
    servers.wait_ready(["box", "time"], 30)
    servers.configure([toolbox(env=(("GIVEN", "by the user"),)), time_server(), toolbox("later", enabled=False)])
    assert servers.status("box").state is ServerState.READY  # unchanged: still running
    assert servers.status("later").state is ServerState.OFF
    assert "is switched off" in call(servers, "later", "add", {"a": 1, "b": 1}).model_text
    servers.configure([toolbox(env=(("GIVEN", "by the user"),))])
    assert [status.name for status in servers.statuses()] == ["box"]
    assert "No tool server is named time" in call(servers, "time", "get_current_time", {}).model_text
    servers.configure([toolbox(env=(("GIVEN", "by the user"),)), time_server()])
    assert servers.status("time").state is ServerState.IDLE
    assert not call(servers, "time", "get_current_time", {"timezone": "UTC"}).error  # started on first use


def test_close_is_quick_idempotent_and_later_calls_are_refused():
    with supervised([toolbox()]) as servers:
        servers.wait_ready(["box"], 30)
        future = servers.call("box", "slow", {"seconds": 30})
        time.sleep(0.2)
        began = time.monotonic()
        servers.close()
        assert time.monotonic() - began < 3
        servers.close()
        assert future.done()
        assert future.cancelled() or future.result().error
        assert servers.call("box", "add", {"a": 1, "b": 1}).result(1).error


def test_an_sdk_that_does_not_load_is_said_as_that(monkeypatch):
    """A damaged install or bundle: each server says the client library did not load, at once,
    instead of waiting out its start timeout as if the server had never answered."""
    from app.tool_servers import supervisor

    def broken():
        raise ImportError("No module named 'pydantic_core._pydantic_core'")

    monkeypatch.setattr(supervisor, "_import_runner", broken)
    with supervised([toolbox()]) as servers:
        began = time.monotonic()
        [status] = servers.wait_ready(["box"], 10)
        assert time.monotonic() - began < 3
        assert status.state is ServerState.FAILED and "client library could not be loaded" in status.reason
        outcome = servers.call("box", "echo", {"text": "x"}).result(10)
        assert outcome.error
