"""`hearth tools list [--mcp FILE]`: every tool server's tools, as JSON, for scripts and for
checking a server before the window uses it.

The servers are those of `--mcp FILE` (a mcp.json or claude_desktop_config.json, all of its
servers used), else those enabled in Settings → Tools. Each is started, listed and stopped, as
the window would; stdout gets one JSON array:

    [{"server", "name", "description", "input_schema"}...,   a tool of a server that started
     {"server", "error"}...]                                   a server that did not, and why

and the exit status is 0 whenever the listing ran, however many servers failed: the rows say
which. A tool a server offers under a name Hearth refuses is noted on stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..common.text import printable
from ..tool_servers.limits import START_TIMEOUT_S
from ..tool_servers.types import ServerConfig, ServerState
from .args import UsageError


def add_tools_parser(subparsers) -> None:
    tools = subparsers.add_parser("tools", help="the tool servers (MCP): list their tools")
    commands = tools.add_subparsers(dest="tools_command", metavar="COMMAND", required=True)
    listing = commands.add_parser("list", help="every server's tools as a JSON array (and a row for each that failed)")
    listing.add_argument("--mcp", type=Path, metavar="MCP.json",
                         help='servers as mcp.json writes them ({"mcpServers": {NAME: {"command", "args", "env"} | '
                              '{"url", "headers"}}}); without it, those enabled in Settings → Tools')
    listing.add_argument("--timeout", type=float, default=START_TIMEOUT_S, metavar="S",
                         help=f"seconds the servers have to start (default {START_TIMEOUT_S:g})")
    listing.set_defaults(run=run_tools_list)


def run_tools_list(args, configs: list[ServerConfig] | None = None) -> int:
    """`configs`: the servers to list, instead of reading them (for a caller that has them)."""
    if not args.timeout > 0:
        raise UsageError("--timeout must be a number of seconds above 0")
    if configs is None:
        configs = _configs(args.mcp)
    if not configs:
        print("hearth: no tool servers: give --mcp FILE, or add one in Settings → Tools", file=sys.stderr)
    from ..tool_servers.supervisor import ToolServers  # the servers' thread and, on it, the MCP SDK

    enabled = [config for config in configs if config.enabled]
    servers = ToolServers(enabled)
    try:
        statuses = {status.name: status for status in servers.wait_ready([c.name for c in enabled], args.timeout)}
    finally:
        servers.close()
    rows: list[dict] = []
    for config in configs:
        status = statuses.get(config.name)
        if not config.enabled:
            rows.append({"server": config.name, "error": "switched off in Settings → Tools"})
        elif status is None or status.state is not ServerState.READY:
            reason = status.reason if status is not None and status.reason else f"it did not start within {args.timeout:g} s"
            rows.append({"server": config.name, "error": reason})
        else:
            rows += [{"server": tool.server, "name": tool.name, "description": tool.description,
                      "input_schema": tool.input_schema} for tool in status.tools]
            if status.skipped:
                print(f"hearth: note: {printable(config.name)}: {len(status.skipped)} tools not offered: "
                      + "; ".join(status.skipped[:10]) + ("; …" if len(status.skipped) > 10 else ""), file=sys.stderr)
    # ASCII escapes: names and descriptions are the servers' text, and may hold what a terminal
    # should not get (a right-to-left override, an escape sequence).
    print(json.dumps(rows, indent=2), flush=True)
    return 0


def _configs(mcp: Path | None) -> list[ServerConfig]:
    if mcp is not None:
        from ..tool_servers.config import ConfigError, read_mcp_json

        try:
            return read_mcp_json(mcp, enabled=True)
        except ConfigError as exc:
            raise UsageError(f"--mcp: {exc}") from None
    from ..owners.settings import Settings

    return Settings.for_profile().tools.servers()
