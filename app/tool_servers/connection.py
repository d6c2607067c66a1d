"""One connection to one server, made with the official `mcp` SDK: the transport (a stdio child,
or Streamable HTTP with the configured headers), its stderr kept in a log of its own, and a watch
on what arrives besides answers, so that a failure can be told apart from another and said in
words (command not found, exits at once, speaks garbage, never answers).

Imported on the tool servers' thread only, the first time a server starts: the SDK takes most
of a second to import, and the window should not wait for it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ..common.text import printable, shorten
from .types import ServerConfig, Transport

log = logging.getLogger(__name__)

LOG_CAP_BYTES = 2_000_000  # a server's stderr log is moved aside to NAME.log.1 past this, at a start
TAIL_CHARS = 400  # of stderr, in a failure's reason
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's own: a server may hold a stream open


class _QuietParseErrors(logging.Filter):
    """The SDK logs each line a server writes on stdout that is not JSON-RPC, with a traceback:
    a server that prints its own chatter there would fill Hearth's log. Watch keeps the first
    such line for the server's reason and logs it once, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to parse JSONRPC message")


logging.getLogger("mcp.client.stdio").addFilter(_QuietParseErrors())


class StderrLog:
    """Where a stdio server's stderr goes (`log_dir/NAME.log`, appended to; a temporary file
    without a log folder), and the end of what this run wrote, for a failure's reason."""

    def __init__(self, log_dir: Path | None, name: str):
        self.path = log_dir / f"{log_file_name(name)}.log" if log_dir else None
        self._file: IO[bytes] | None = None
        self._start = 0

    def open(self, config: ServerConfig) -> IO[bytes]:
        self.close()
        if self.path is None:
            self._file = tempfile.TemporaryFile()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size > LOG_CAP_BYTES:
                self.path.replace(self.path.with_suffix(".log.1"))
            self._file = self.path.open("ab")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._file.write(f"--- {stamp} starting {config.command} {' '.join(config.args)}\n".encode(errors="replace"))
        self._file.flush()
        self._start = self._file.tell()
        return self._file

    def tail(self) -> str:
        """The last lines this run wrote to stderr, on one line ("" if none)."""
        if self._file is None:
            return ""
        try:
            self._file.flush()
            # The log is open for appending only; a temporary file can be read through its own.
            source = self.path if self.path is not None else self._file.fileno()
            with open(source, "rb", closefd=self.path is not None) as reader:
                end = reader.seek(0, 2)
                reader.seek(max(self._start, end - 4 * TAIL_CHARS))
                text = reader.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return shorten(" | ".join(lines[-3:]), TAIL_CHARS)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def log_file_name(name: str) -> str:
    """A server's name as a file name: its safe characters, and a hash where some were not, so
    "my server" and "my_server" keep logs of their own."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60].strip(".") or "server"
    return safe if safe == name else f"{safe}-{hashlib.sha256(name.encode(errors='replace')).hexdigest()[:8]}"


class Watch:
    """What a connection shows besides its answers: that it ended, the first line on stdout that
    was not JSON-RPC, and that the server's tool list changed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ended = anyio.Event()
        self.garbage: str | None = None
        self.on_garbage: Callable[[], None] | None = None  # called once, at the first bad line
        self._changed = anyio.Event()

    async def handle(self, message: Any) -> None:
        """The SDK's message_handler: notifications, and the transport's own faults."""
        if isinstance(message, Exception):
            if self.garbage is None:
                self.garbage = _bad_line(message)
                log.warning("tool server %s wrote something that is not JSON-RPC: %r", printable(self.name),
                            self.garbage)
                if self.on_garbage is not None:
                    self.on_garbage()
        elif _method(message) == "notifications/tools/list_changed":
            self._changed.set()

    def changed(self) -> None:
        self._changed.set()

    async def wait_changed(self) -> None:
        await self._changed.wait()
        self._changed = anyio.Event()


def _method(notification: Any) -> str | None:
    return getattr(getattr(notification, "root", notification), "method", None)


def _bad_line(exc: Exception) -> str:
    """The text of a line that was not JSON-RPC, as the SDK's parse error holds it."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            found = errors()
            if found and isinstance(found[0].get("input"), str):
                return shorten(found[0]["input"], 80)
        except Exception:  # a parse error's own shape is not ours to rely on
            pass
    return shorten(str(exc), 80)


class _WatchedStream:
    """The transport's read stream, passed through; its end sets `watch.ended`, which is how a
    server that dies while nobody is calling it is noticed."""

    def __init__(self, stream: Any, watch: Watch):
        self._stream = stream
        self._watch = watch

    def __getattr__(self, name: str) -> Any:  # last_context, and whatever else the SDK reads
        return getattr(self._stream, name)

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._watch.ended.set()
            raise

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _WatchedStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._stream.__aexit__(*exc)


@asynccontextmanager
async def _transport(config: ServerConfig, stderr: StderrLog, watch: Watch) -> AsyncIterator[tuple[Any, Any]]:
    if config.transport is Transport.STDIO:
        # The SDK gives the child its allow-list of the environment (HOME, LOGNAME, PATH, SHELL,
        # TERM, USER; their Windows counterparts) merged with what the user configured: never the
        # whole of Hearth's, which may hold keys and tokens.
        params = StdioServerParameters(command=config.command, args=list(config.args),
                                       env=dict(config.env) or None, cwd=config.cwd or None)
        async with stdio_client(params, errlog=stderr.open(config)) as (read, write):  # type: ignore[arg-type]
            yield _WatchedStream(read, watch), write
    else:
        async with httpx2.AsyncClient(headers=dict(config.headers), timeout=HTTP_TIMEOUT) as http:
            async with streamable_http_client(config.url, http_client=http) as (read, write):
                yield _WatchedStream(read, watch), write


def new_client(config: ServerConfig, stderr: StderrLog, watch: Watch) -> Client:
    """An SDK Client for `config`, not yet entered: the caller enters and leaves it in one task."""
    return Client(_transport(config, stderr, watch), message_handler=watch.handle,
                  client_info=mcp_types.Implementation(name="Hearth", version=_version()))


def is_modern(client: Client) -> bool:
    """Whether the connection speaks 2026-07-28 or later, where list changes come through
    `subscriptions/listen` rather than notifications sent at will."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


def is_connection_lost(exc: BaseException) -> bool:
    """A call's error that means the connection is gone, not that the call was refused."""
    return (isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED) or isinstance(
        exc, (httpx2.TransportError, anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError))


def start_failure(config: ServerConfig, exc: BaseException | None, watch: Watch, stderr: StderrLog,
                  timed_out_s: float | None = None) -> str:
    """Why a server did not start, in words: `exc` what starting raised (None: the connection
    ended first), `timed_out_s` the start's time limit where it ran out."""
    exc = leaf(exc) if exc is not None else None
    tail = stderr.tail()
    said = f"; it said: {tail}" if tail else ""
    if watch.garbage is not None:
        return f"it speaks garbage: it wrote a line on its output that is not MCP (JSON-RPC): {watch.garbage!r}"
    if isinstance(exc, FileNotFoundError) and config.transport is Transport.STDIO:
        if config.cwd and not Path(config.cwd).is_dir():
            return f"its working folder was not found: {printable(config.cwd)}"
        return f"command not found: {printable(config.command)}"
    if isinstance(exc, PermissionError) and config.transport is Transport.STDIO:
        return f"the command cannot be run (permission denied): {printable(config.command)}"
    if timed_out_s is not None:
        return f"it did not answer initialize within {timed_out_s:g} s{said}"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect to {printable(config.url)}: {shorten(str(exc) or type(exc).__name__, 160)}"
    if isinstance(exc, httpx2.TransportError):
        return f"the connection to {printable(config.url)} failed: {shorten(str(exc) or type(exc).__name__, 160)}"
    if exc is None or is_connection_lost(exc):
        if config.transport is Transport.STDIO:
            return f"it exited at once{said}" if tail else "it exited at once, without a word on stderr"
        return f"{printable(config.url)} closed the connection{said}"
    if isinstance(exc, MCPError):
        return f"it refused to start: {shorten(exc.message, 200)}{said}"
    return f"it could not be started: {type(exc).__name__}: {shorten(str(exc), 200)}{said}"


def stopped_reason(config: ServerConfig, watch: Watch, stderr: StderrLog) -> str:
    """Why a server that was running stopped."""
    tail = stderr.tail()
    if config.transport is Transport.HTTP:
        return f"the connection to {printable(config.url)} was lost"
    return f"it stopped; it said: {tail}" if tail else "it stopped without a word on stderr"


def leaf(exc: BaseException) -> BaseException:
    """The first exception inside task groups' exception groups: what really happened."""
    while getattr(exc, "exceptions", None):  # BaseExceptionGroup, or its backport on Python 3.10
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("hearth")
    except Exception:  # running from a checkout that was never installed
        return "0"
