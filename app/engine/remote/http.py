"""The HTTP client for one OpenAI-compatible server: its timeouts, its key, and JSON requests
whose failures come back as RemoteError.

One synchronous httpx.Client per server and thread (the engine thread, or the CLI): it keeps
the connection open between replies, and a blocking client on a thread of its own is simpler
than an event loop for one request at a time. The timeouts are what turn a server that stops
answering into a message instead of a wait without end: `connect` for a host that does not
answer, `read` for a server that goes quiet in the middle of a reply (a first token that takes
longer than this, say a long prompt on a slow machine, also counts as silence).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx

from ...common.text import printable
from ..types import ServerConfig
from .errors import bad_response, status_error, transport_error

USER_AGENT = "Hearth (OpenAI-compatible client)"
MAX_ERROR_BODY = 64 * 1024  # bytes of an error answer read for its message
MAX_JSON_BODY = 16 * 1024 * 1024  # a model list larger than this is not a model list


@dataclass(frozen=True)
class RemoteTimeouts:
    """Seconds to wait; the defaults suit a server on a network, tests use shorter ones."""

    connect: float = 10.0
    read: float = 120.0  # silence between two pieces of an answer, the first one included
    write: float = 30.0

    def for_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.connect)


def open_client(server: ServerConfig, timeouts: RemoteTimeouts = RemoteTimeouts()) -> httpx.Client:
    """A client for `server`: requests take paths relative to its base URL ("chat/completions"),
    and carry its key as `Authorization: Bearer`. Proxies and SSL_CERT_FILE come from the
    environment, as for any HTTP client."""
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if server.api_key:
        headers["Authorization"] = f"Bearer {server.api_key}"
    return httpx.Client(base_url=server.base_url + "/", headers=headers, timeout=timeouts.for_httpx())


def where(server: ServerConfig) -> str:
    """How messages name the server: its name and, if that is not already the address, the
    address (`Lab box (http://gpu:8000/v1)`)."""
    address = printable(server.base_url, limit=120)
    if server.name == server.host:  # no name of its own
        return address
    return f"{printable(server.name)} ({address})"


def get_json(client: httpx.Client, server: ServerConfig, path: str):
    """GET `path` under the server's base URL and return its JSON; raises RemoteError."""
    try:
        with client.stream("GET", path) as response:
            limit = MAX_JSON_BODY if response.status_code == 200 else MAX_ERROR_BODY
            body = read_limited(response, limit)
    except httpx.HTTPError as exc:
        raise transport_error(exc, where(server)) from None
    if response.status_code != 200:
        raise status_error(response, where(server), body)
    try:
        return json.loads(body)
    except ValueError:
        raise bad_response(where(server), f"GET {path} did not return JSON") from None


def read_limited(response: httpx.Response, limit: int) -> str:
    """The start of a streamed response's body, at most `limit` bytes, as text: a server
    cannot make Hearth read a gigabyte to show one line of it."""
    data = bytearray()
    for part in response.iter_bytes():
        data += part
        if len(data) >= limit:
            break
    return bytes(data[:limit]).decode(response.encoding or "utf-8", errors="replace")

