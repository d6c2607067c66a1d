"""CORS of `hearth serve`, asked over real HTTP as a browser asks it: a preflight (`OPTIONS` with
`Origin` and `Access-Control-Request-Method`) before a page's cross-site request, and the
`Access-Control-Allow-Origin` header on the reply that lets the page read it.

Off by default; `--cors-origin` lists the origins, matched exactly, and `*` is every site only
when given as such. The servers are real `hearth serve` processes on the real Gemma, so the
flag is read as a user gives it and a streamed reply passes through the CORS layer.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest
from support.served import ROOT, Served

KEY = "cors-test-key"
PAGE = "http://localhost:3000"
OTHER_PAGE = "https://app.example"
# What the official JS client's preflight asks for, beside the key and the JSON body.
ASKED_HEADERS = "authorization, content-type, x-stainless-os, x-stainless-lang"


@pytest.fixture(scope="module")
def listed(gemma_path):
    """Two origins (the second as a user might type it, in capitals), and a key."""
    server = Served(gemma_path, "--ctx", "512", "--api-key", KEY, "--cors-origin", PAGE,
                    "--cors-origin", "HTTPS://App.Example")
    yield server
    assert server.stop() == 0, server.stderr


def preflight(served: Served, origin: str, path: str = "/chat/completions", method: str = "POST",
              **headers: str) -> httpx.Response:
    return httpx.options(served.base_url + path, headers={
        "Origin": origin, "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": ASKED_HEADERS, **headers})


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {name: value for name, value in response.headers.items() if name.startswith("access-control-")}


def keyed(origin: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}", **({"Origin": origin} if origin else {})}


@pytest.mark.parametrize("origin", [PAGE, OTHER_PAGE])
def test_a_listed_origins_preflight_is_allowed_without_the_key(listed, origin):
    answer = preflight(listed, origin)  # browsers never send the key with a preflight
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == origin
    assert set(answer.headers["access-control-allow-methods"].split(", ")) == {"GET", "POST"}
    assert answer.headers["access-control-allow-headers"] == ASKED_HEADERS
    assert "origin" in answer.headers["vary"].lower()
    assert "access-control-allow-credentials" not in answer.headers  # the key is a header, never a cookie


@pytest.mark.parametrize("origin", [
    "http://evil.example",
    "http://localhost:3001",  # the same host, another port: another origin
    "https://localhost:3000",  # another scheme
    "http://localhost",
    "null",  # file:// pages and sandboxed frames
])
def test_an_unlisted_origins_preflight_is_refused_with_no_cors_header(listed, origin):
    answer = preflight(listed, origin)
    assert answer.status_code == 403
    assert cors_headers(answer) == {}
    assert answer.json()["error"]["code"] == "origin_not_allowed"


def test_a_listed_public_page_may_reach_this_machine(listed):
    """Chrome's private-network preflight, for a public page calling 127.0.0.1."""
    answer = preflight(listed, OTHER_PAGE, **{"Access-Control-Request-Private-Network": "true"})
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-private-network"] == "true"


def test_replies_carry_the_header_for_listed_origins_only(listed):
    assert httpx.get(listed.base_url + "/models", headers=keyed(PAGE)).headers["access-control-allow-origin"] == PAGE
    elsewhere = httpx.get(listed.base_url + "/models", headers=keyed("http://evil.example"))
    assert elsewhere.status_code == 200 and cors_headers(elsewhere) == {}  # the browser keeps it from the page
    no_origin = httpx.get(listed.base_url + "/models", headers=keyed())
    assert cors_headers(no_origin) == {}  # not a browser: nothing to say


def test_an_error_reaches_the_page_so_it_can_say_what_went_wrong(listed):
    answer = httpx.get(listed.base_url + "/models", headers={"Origin": PAGE})  # no key
    assert answer.status_code == 401 and answer.headers["access-control-allow-origin"] == PAGE
    assert answer.json()["error"]["code"] == "invalid_api_key"


def test_a_streamed_reply_to_a_listed_page_carries_the_header(listed):
    body = {"model": listed.model_id, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
            "temperature": 0, "stream": True}
    with httpx.stream("POST", listed.base_url + "/chat/completions", json=body, headers=keyed(PAGE),
                      timeout=60) as answer:
        events = [line for line in answer.iter_lines() if line.startswith("data: ")]
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == PAGE
    assert events[-1] == "data: [DONE]"


def test_without_the_flag_no_page_may_call_it(gemma_path):
    server = Served(gemma_path, "--ctx", "512")
    try:
        answer = preflight(server, PAGE)
        assert answer.status_code == 405 and cors_headers(answer) == {}
        assert answer.json()["error"]["code"] == "method_not_allowed"
        assert cors_headers(httpx.get(server.base_url + "/models", headers={"Origin": PAGE})) == {}
    finally:
        assert server.stop() == 0, server.stderr


def test_a_star_given_as_such_lets_every_site_call_it(gemma_path):
    server = Served(gemma_path, "--ctx", "512", "--cors-origin", "*")
    try:
        answer = preflight(server, "http://any.example")
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "*"
        reply = httpx.get(server.base_url + "/models", headers={"Origin": "http://any.example"})
        assert reply.headers["access-control-allow-origin"] == "*"
        deadline = time.monotonic() + 10  # the line follows the address on stdout
        while "Ctrl+C stops" not in server.stderr and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "web pages from every site may call it" in server.stderr
    finally:
        assert server.stop() == 0, server.stderr


@pytest.mark.parametrize(("origin", "says"), [
    ("http://localhost:3000/", "not even a trailing /"),
    ("localhost:3000", "scheme://host[:port]"),
    ("http://localhost:3000/app", "no path"),
    ("null", "scheme://host[:port]"),
    ("https://app.example:443", "default port 443"),
])
def test_an_origin_no_browser_sends_is_refused_before_loading(gemma_path, origin, says):
    result = subprocess.run([sys.executable, "-m", "app", "serve", str(gemma_path), "--cors-origin", PAGE,
                             "--cors-origin", origin], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert "--cors-origin" in result.stderr and says in result.stderr
