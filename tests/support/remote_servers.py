"""Servers for the remote-model tests: the real one, and one that misbehaves on purpose.

`LlamaServer` runs llama-cpp-python's own OpenAI-compatible server (`python -m
llama_cpp.server`, the `server` extra) on the real Gemma model, on 127.0.0.1: the other side
of every "does it really work" test, started once per test session (`llama_server`), and by
bench/remote_chat.py.

`StandIn` is a small HTTP server in a thread whose every answer is chosen by the first part of
the path, so one server serves every failure: `http://127.0.0.1:PORT/<mode>/v1`. Modes:

    ok           lists "stand-in"; streams "Hello", " there", "." with usage, then [DONE]
    auth         401 unless the key is "Bearer good-key", then as ok
    missing      lists "stand-in" but answers a chat with 404
    nothing      404 for everything (a base URL that is not a server's)
    busy         429 with Retry-After: 7
    broken       500 with an OpenAI-style error message
    strict       400 naming "top_k" while a request carries it (OpenAI's own behaviour), else ok
    stall-start  accepts any request and says nothing (until released)
    stall-mid    streams two pieces, then says nothing
    cut          streams two pieces, then drops the connection mid-body
    cut-clean    streams two pieces, then ends the body properly without finishing the reply
    garbage      streams a piece, then an event that is not JSON
    error-event  streams a piece, then an OpenAI error object as an event
    html         answers 200 with an HTML page (a captive portal, a proxy's login)
    hostile      lists ids with control characters and junk entries; errors with long text
    huge-error   500 with a 10 MB body
    moved        301 to https://elsewhere.example/v1 (a server that moved to TLS)

Each request's path, headers and JSON body are kept in `requests` for the tests to read.
A silent mode waits on `release` (set when the server stops), never on a fixed sleep.

The fixtures `llama_server` (one per test session, however many modules import it) and
`stand_in` (one per test) are imported by the test modules that use them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

SERVER_START_TIMEOUT_S = 120
STALL_LIMIT_S = 30  # a silent mode gives up after this even if nobody releases it


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LlamaServer:
    """`python -m llama_cpp.server` on `model`, on 127.0.0.1 and a free port."""

    def __init__(self, model: Path, n_ctx: int = 2048, threads: int | None = None):
        """`threads`: llama.cpp's threads (default: one per CPU)."""
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.model_id = str(model)  # llama_cpp.server names its model by the path it was given
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                   "--port", str(self.port), "--chat_format", "gemma", "--n_ctx", str(n_ctx),
                   "--n_threads", str(threads or os.cpu_count() or 1), "--verbose", "False"]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {self._process.stderr.read().decode(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {SERVER_START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process.stderr.close()


_shared_server: LlamaServer | None = None


@pytest.fixture(scope="session")
def llama_server(gemma_path) -> LlamaServer:
    """llama_cpp.server on the real Gemma, started at its first use in the session. Every
    module that imports this fixture gets the same server (pytest would make one per module)."""
    global _shared_server
    if _shared_server is None:
        _shared_server = LlamaServer(gemma_path)
    yield _shared_server
    _shared_server.stop()


@pytest.fixture
def stand_in() -> StandIn:
    server = StandIn()
    yield server
    server.stop()


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict | None


class StandIn:
    """The misbehaving server (see the module's docstring), in a thread."""

    def __init__(self):
        self.requests: list[Request] = []
        self.release = threading.Event()
        handler = type("Handler", (_Handler,), {"stand_in": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="stand-in", daemon=True)
        self._thread.start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}/v1"

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


PIECES = ["Hello", " there", "."]


def _chunk(text: str | None = None, finish: str | None = None, usage: dict | None = None) -> dict:
    choices = [] if usage else [{"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}]
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "stand-in", "choices": choices}
    if usage:
        chunk["usage"] = usage
    return chunk


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stand_in: StandIn

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # the test output is not the place

    def handle(self):
        try:
            super().handle()
        except (ConnectionError, OSError):
            pass  # a client that went away (Stop, a timeout): nothing to tell it

    def do_GET(self):
        self._record(None)
        mode, _, rest = self.path.strip("/").partition("/")
        if mode == "nothing" or rest != "v1/models":
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        if mode == "auth" and not self._authorised():
            return self._json(401, {"error": {"message": "Incorrect API key provided."}})
        if mode == "stall-start":
            return self._stall()
        if mode == "hostile":
            entries = [{"id": "evil\x1b[31m\nname"}, {"id": 42}, "junk", {"id": ""}, {"id": "x" * 5000},
                       {"id": "fine", "max_model_len": 8192}]
            return self._json(200, {"object": "list", "data": entries})
        if mode == "html":
            return self._send(200, b"<html><body>Log in to the Wi-Fi</body></html>", "text/html")
        return self._json(200, {"object": "list", "data": [{"id": "stand-in", "object": "model", "owned_by": "tests"}]})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        self._record(body)
        mode = self.path.strip("/").partition("/")[0]
        if mode == "auth" and not self._authorised():
            return self._json(401, {"error": {"message": "Incorrect API key provided."}})
        answer = {
            "missing": lambda: self._json(404, {"error": {"message": "The model `stand-in` does not exist."}}),
            "nothing": lambda: self._json(404, {"detail": "Not Found"}),
            "busy": lambda: self._json(429, {"error": {"message": "Rate limit reached."}}, {"Retry-After": "7"}),
            "broken": lambda: self._json(500, {"error": {"message": "CUDA error: out of memory"}}),
            "hostile": lambda: self._json(500, {"error": {"message": "line one\n\x1b[2J" + "spam " * 5000}}),
            "huge-error": lambda: self._send(500, b"x" * 10_000_000, "text/plain"),
            "moved": lambda: self._send(301, b"", "text/plain", {"Location": "https://elsewhere.example/v1/chat/completions"}),
            "html": lambda: self._send(200, b"<html><body>Log in to the Wi-Fi</body></html>", "text/html"),
            "stall-start": self._stall,
        }.get(mode)
        if answer is not None:
            return answer()
        if mode == "strict" and "top_k" in body:
            return self._json(400, {"error": {"message": "Unrecognized request argument supplied: top_k",
                                              "type": "invalid_request_error"}})
        self._stream(mode)

    # --- answers -------------------------------------------------------------------------------

    def _stream(self, mode: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if mode in ("stall-mid", "cut", "cut-clean", "garbage", "error-event"):
            for text in PIECES[:1 if mode in ("garbage", "error-event") else 2]:
                self._event(json.dumps(_chunk(text)))
            if mode == "stall-mid":
                return self._stall()
            if mode == "cut":
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # no last chunk: the body is incomplete
                self.close_connection = True
                return
            if mode == "garbage":
                self._event('{"choices": [{"delta": {"content": "oops"')
            if mode == "error-event":
                self._event(json.dumps({"error": {"message": "The model crashed.", "code": 500}}))
            return self._end_body()
        for text in PIECES:
            self._event(json.dumps(_chunk(text)))
        self._event(json.dumps(_chunk(finish="stop")))
        self._event(json.dumps(_chunk(usage={"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14})))
        self._event("[DONE]")
        self._end_body()

    def _event(self, data: str) -> None:
        payload = f"data: {data}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        self.wfile.flush()

    def _end_body(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _stall(self) -> None:
        self.wfile.flush()
        self.stand_in.release.wait(STALL_LIMIT_S)
        self.close_connection = True

    def _json(self, status: int, data: dict, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode(), "application/json", headers)

    def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(payload)
        except OSError:
            pass  # the client read what it wanted and left

    def _authorised(self) -> bool:
        return self.headers.get("Authorization") == "Bearer good-key"

    def _record(self, body) -> None:
        self.stand_in.requests.append(Request(self.path, dict(self.headers), body))
