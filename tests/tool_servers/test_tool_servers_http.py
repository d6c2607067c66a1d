"""A Streamable HTTP server (the SDK's, on uvicorn in this process): its headers reach it, and an
address where nothing answers, or a server that goes away, is a status and an error outcome."""

from __future__ import annotations

import json
import time

from support.mcp_servers.configs import supervised
from support.mcp_servers.over_http import http_toolbox

from app.tool_servers.types import ServerConfig, ServerState, Transport

HEADERS = (("X-Hearth-Test", "yes"), ("Authorization", "Bearer t0ken"))


def test_a_streamable_http_server_gets_its_headers_and_answers():
    with http_toolbox() as web, supervised([ServerConfig("web", Transport.HTTP, url=web.url, headers=HEADERS)]) as servers:
        [status] = servers.wait_ready(["web"], 20)
        assert status.state is ServerState.READY and "add" in {tool.name for tool in status.tools}
        assert servers.call("web", "add", {"a": 20, "b": 22}).result(20).model_text == "42"
        seen = json.loads(servers.call("web", "headers", {}).result(20).model_text)
        assert (seen["x-hearth-test"], seen["authorization"]) == ("yes", "Bearer t0ken")


def test_an_address_where_nothing_answers_says_so_at_once():
    began = time.monotonic()
    with supervised([ServerConfig("nobody", Transport.HTTP, url="http://127.0.0.1:9/mcp")]) as servers:
        [status] = servers.wait_ready(["nobody"], 20)
        outcome = servers.call("nobody", "add", {}).result(20)
    assert status.state is ServerState.FAILED
    assert status.reason.startswith("cannot connect to http://127.0.0.1:9/mcp")
    assert outcome.error and "cannot connect" in outcome.model_text
    assert time.monotonic() - began < 5


def test_a_server_that_goes_away_fails_the_call_and_its_status():
    with http_toolbox() as web, supervised([ServerConfig("web", Transport.HTTP, url=web.url)],
                                           restart_backoff_s=(0.2,)) as servers:
        assert servers.wait_ready(["web"], 20)[0].state is ServerState.READY
        web.stop()
        deadline = time.monotonic() + 5
        while servers.status("web").state is ServerState.READY:  # its listen stream is gone
            assert time.monotonic() < deadline, "a server that went away still shows as ready"
            time.sleep(0.02)
        outcome = servers.call("web", "add", {"a": 1, "b": 2}).result(20)
        assert outcome.error and "web" in outcome.model_text
        assert servers.status("web").state is ServerState.FAILED
        assert "connection" in servers.status("web").reason
