"""The test servers as ServerConfigs, and a ToolServers that is always closed after its test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.tool_servers.supervisor import ToolServers
from app.tool_servers.types import ServerConfig, Transport

HERE = Path(__file__).resolve().parent
TOOLBOX = HERE / "toolbox.py"
MISBEHAVING = HERE / "misbehaving.py"


def toolbox(name: str = "box", **fields) -> ServerConfig:
    return ServerConfig(name, Transport.STDIO, command=sys.executable, args=(str(TOOLBOX),), **fields)


def misbehaving(mode: str, name: str | None = None, **fields) -> ServerConfig:
    return ServerConfig(name or mode, Transport.STDIO, command=sys.executable, args=(str(MISBEHAVING), mode), **fields)


def time_server(name: str = "time") -> ServerConfig:
    """The published reference server from PyPI (mcp-server-time), as its README runs it."""
    return ServerConfig(name, Transport.STDIO, command=sys.executable,
                        args=("-m", "mcp_server_time", "--local-timezone", "UTC"))


def exits_at_once(name: str = "exits", code: int = 3) -> ServerConfig:
    script = f"import sys; sys.stderr.write('fatal: no API key given\\n'); sys.exit({code})"
    return ServerConfig(name, Transport.STDIO, command=sys.executable, args=("-c", script))


def not_found(name: str = "missing") -> ServerConfig:
    return ServerConfig(name, Transport.STDIO, command="hearth-test-no-such-command")


@contextmanager
def supervised(configs, **options) -> Iterator[ToolServers]:
    servers = ToolServers(configs, **options)
    try:
        yield servers
    finally:
        servers.close()
