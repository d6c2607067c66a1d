"""Servers that misbehave, each a real child process: every failure ends, in bounded time, with
a message that says which failure it was; the methods the window calls never wait on it; and
the other servers go on answering."""

from __future__ import annotations

import threading
import time

import pytest
from support.mcp_servers.configs import exits_at_once, misbehaving, not_found, supervised, toolbox

from app.tool_servers.catalog import ToolCatalog
from app.tool_servers.limits import RESULT_CAP_BYTES
from app.tool_servers.listing import MAX_DESCRIPTION_CHARS, TOOL_NAME
from app.tool_servers.types import ServerState

START_S = 20.0  # nine children start at once on two cores
BACKOFF_S = (0.3,)
# The longest one of the window's calls may take while servers misbehave. Each is a few
# microseconds of work; one that waited on the loop (the SDK's import) or on a server would
# take a second or more. Up to a few tenths is this machine's scheduling and Python's lock: nine
# interpreters starting on two cores, or the SDK parsing a 12 MB line in one call, while a
# second test process runs beside it. The window's own stall (≤ 100 ms) is measured on its
# event loop: tests/ui_tools/test_misbehaving_servers_window.py.
STALL_S = 0.5


class Stalls:
    """The longest any of the window's calls (statuses, start, call) took while it ran."""

    def __init__(self, servers):
        self.longest = 0.0
        self._servers = servers
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.is_set():
            for ask in (self._servers.statuses, lambda: self._servers.start("box"),
                        lambda: self._servers.call("box", "echo", {"text": "x"})):
                began = time.perf_counter()
                ask()
                self.longest = max(self.longest, time.perf_counter() - began)
            time.sleep(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    configs = [toolbox(), misbehaving("crash"), misbehaving("hang"), misbehaving("huge"), misbehaving("many"),
               misbehaving("garbage"), exits_at_once(), not_found()]
    logs = tmp_path_factory.mktemp("logs")
    with supervised(configs, log_dir=logs, start_timeout_s=START_S, restart_backoff_s=BACKOFF_S) as servers:
        servers.logs = logs
        with Stalls(servers) as stalls:
            began = time.monotonic()
            servers.statuses_at_start = servers.wait_ready([config.name for config in configs], 20)
            servers.start_took = time.monotonic() - began
        servers.start_stall = stalls.longest
        yield servers


def reason(servers, name):
    return next(status for status in servers.statuses_at_start if status.name == name).reason


def test_each_broken_start_says_which_it_was_within_the_start_timeout(servers):
    states = {status.name: status.state for status in servers.statuses_at_start}
    assert states == {"box": ServerState.READY, "crash": ServerState.READY, "hang": ServerState.READY,
                      "huge": ServerState.READY, "many": ServerState.READY, "garbage": ServerState.FAILED,
                      "exits": ServerState.FAILED, "missing": ServerState.FAILED}
    assert reason(servers, "missing") == "command not found: hearth-test-no-such-command"
    assert reason(servers, "exits") == "it exited at once; it said: fatal: no API key given"
    assert reason(servers, "garbage") == ("it speaks garbage: it wrote a line on its output that is not MCP "
                                          "(JSON-RPC): 'hello, I am not JSON-RPC'")
    assert servers.start_took < 15  # the garbage one failed 2 s after its first bad line, not after START_S (20)
    assert servers.start_stall < STALL_S, servers.start_stall  # the window's calls never waited on a server


def test_a_server_that_never_answers_initialize_times_out():
    began = time.monotonic()
    with supervised([misbehaving("mute")], start_timeout_s=1.5) as servers:
        [status] = servers.wait_ready(["mute"], 10)
    assert status.reason == "it did not answer initialize within 1.5 s"
    assert time.monotonic() - began < 5


def test_a_server_that_failed_to_start_is_tried_again_only_when_used(servers):
    time.sleep(0.5)
    log = servers.logs / "exits.log"
    assert log.read_text().count("starting") == 1  # no retries in a loop
    outcome = servers.call("exits", "anything", {}).result(10)
    assert outcome.error and "exited at once; it said: fatal: no API key given" in outcome.model_text
    assert log.read_text().count("starting") == 2


def test_a_crash_mid_call_is_an_error_outcome_and_the_server_comes_back(servers):
    began = time.monotonic()
    outcome = servers.call("crash", "crash", {}).result(10)
    assert time.monotonic() - began < 2
    assert outcome.error and outcome.model_text == ("The tool server crash stopped during the call; it said: "
                                                    "crash: giving up on purpose")
    assert servers.call("box", "echo", {"text": "unaffected"}).result(10).model_text == "unaffected"
    deadline = time.monotonic() + 10
    while servers.status("crash").state is not ServerState.READY:
        assert time.monotonic() < deadline, servers.status("crash")
        time.sleep(0.05)
    assert servers.call("crash", "ok", {}).result(10).model_text == "ok"


def test_a_call_that_is_never_answered_times_out_while_others_answer(servers):
    hanging = servers.call("hang", "hang", {}, timeout_s=1.5)
    began = time.monotonic()
    assert servers.call("box", "echo", {"text": "meanwhile"}).result(10).model_text == "meanwhile"
    assert time.monotonic() - began < 1
    outcome = hanging.result(10)
    assert outcome.error and "did not answer within 1.5 s" in outcome.model_text
    assert servers.call("hang", "ok", {}).result(10).model_text == "ok"


@pytest.mark.parametrize("tool", ["huge", "huge_accents"])
def test_twelve_megabytes_reach_the_model_cut_to_the_cap(servers, tool):
    with Stalls(servers) as stalls:
        outcome = servers.call("huge", tool, {}).result(30)
    assert outcome.cut and not outcome.error
    assert len(outcome.model_text.encode()) <= RESULT_CAP_BYTES
    assert outcome.model_text.endswith("[… result cut: 12.0 MB more were left out]")
    assert sum(len(part.text) for part in outcome.parts) <= RESULT_CAP_BYTES
    assert outcome.elapsed_s < 10
    assert stalls.longest < STALL_S, stalls.longest


def test_four_hundred_tools_with_hostile_names_offer_only_the_good_ones(servers):
    status = servers.status("many")
    names = [tool.name for tool in status.tools]
    assert len(names) == 391 and all(TOOL_NAME.fullmatch(name) for name in names)
    skipped = "\n".join(status.skipped)
    for shown in ("<b>bold</b>: its name holds \"<\"", "evil\ufffdtxt.exe: its name holds an invisible or control "
                  "character (U+202E)", "bell\ufffd:", "has space: its name holds a space", "longer than 128"):
        assert shown in skipped
    assert all(char.isprintable() for line in status.skipped for char in line)
    assert status.reason == f"{len(status.skipped)} of its tools are not offered"
    assert max(len(tool.description) for tool in status.tools) == MAX_DESCRIPTION_CHARS
    catalog = ToolCatalog([status])
    assert len(catalog.tools) == 391
    refused = servers.call("many", "<b>bold</b>", {}).result(10)
    assert refused.error and refused.model_text == ('Hearth does not offer the tool <b>bold</b> of many: its name '
                                                    'holds "<", which tool names may not.')
