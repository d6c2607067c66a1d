"""Servers read from, and written to, the `mcp.json` form other clients share: Claude Desktop's
claude_desktop_config.json, Cursor's and LM Studio's mcp.json, KoboldCpp's --mcpfile:

    {"mcpServers": {"NAME": {"command": "npx", "args": [...], "env": {...}, "cwd": "..."},
                    "OTHER": {"url": "https://…/mcp", "headers": {"Authorization": "…"}}}}

`"type"` may say which ("stdio", or "http"/"streamable-http" for Streamable HTTP); without it a
`url` means HTTP and a `command` stdio. VS Code's form (`"servers"` in place of `"mcpServers"`) is
read too. A file someone hands over is foreign: every field is checked, and a ConfigError names the
server and the field, so the user can fix the file rather than guess.

Imported servers come back disabled unless the caller asks otherwise (`enabled=True`, for the
command line's `--mcp FILE`): a file may start programs, and the user switches each one on.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from urllib.parse import urlsplit

from ..common.text import printable
from .limits import CALL_TIMEOUT_S
from .types import ServerConfig, Transport

_HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamablehttp"}
_STDIO_TYPES = {"stdio"}
_SSE_TYPES = {"sse"}


class ConfigError(ValueError):
    """A server list that cannot be used; the message names the server and the field."""


def read_mcp_json(source: str | Path, *, enabled: bool = False) -> list[ServerConfig]:
    """The servers of a mcp.json: `source` a Path to read, or the file's text itself."""
    if isinstance(source, Path):
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {printable(str(source))}: {exc}") from None
    else:
        text = source
    try:
        document = json.loads(text, object_pairs_hook=_refusing_duplicates)
    except _DuplicateKey as exc:
        raise ConfigError(f"{json.dumps(printable(exc.key, limit=60))} appears twice in one object: "
                          "one of the two would be lost") from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError('not a server list: expected a JSON object {"mcpServers": {...}}')
    key = "mcpServers" if "mcpServers" in document else "servers" if "servers" in document else None
    if key is None:
        raise ConfigError('no "mcpServers" object: expected {"mcpServers": {"NAME": {...}}}')
    servers = document[key]
    if not isinstance(servers, dict):
        raise ConfigError(f'"{key}" must be an object of named servers')
    return [_server(key, name, entry, enabled) for name, entry in servers.items()]


def to_mcp_json(configs: list[ServerConfig] | tuple[ServerConfig, ...]) -> dict:
    """The servers in the same form, for export. Values are written as they are held, secrets
    included: whoever writes the file decides what goes into it."""
    servers: dict[str, dict] = {}
    for config in configs:
        if config.transport is Transport.STDIO:
            entry: dict = {"command": config.command, "args": list(config.args)}
            if config.env:
                entry["env"] = dict(config.env)
            if config.cwd:
                entry["cwd"] = config.cwd
        else:
            entry = {"type": "http", "url": config.url}
            if config.headers:
                entry["headers"] = dict(config.headers)
        servers[config.name] = entry
    return {"mcpServers": servers}


def _server(key: str, name: str, entry: object, enabled: bool) -> ServerConfig:
    where = f"{key}[{json.dumps(printable(name, limit=60), ensure_ascii=False)}]"
    if not name.strip():
        raise ConfigError(f"{where}: a server needs a name")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: must be an object with a command or a url")
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and not isinstance(kind, str):
        raise ConfigError(f"{where}.type: must be text")
    kind = kind.lower() if kind else ("http" if "url" in entry and "command" not in entry else "stdio")
    if kind in _SSE_TYPES:
        raise ConfigError(f"{where}.type: SSE servers are not supported; use the server's Streamable HTTP "
                          "address (often the same URL ending in /mcp)")
    if kind not in _HTTP_TYPES | _STDIO_TYPES:
        raise ConfigError(f'{where}.type: "{printable(kind, limit=40)}" is not "stdio" or "http"')
    enabled = enabled and entry.get("disabled") is not True and entry.get("enabled") is not False
    timeout = _timeout(entry, where)
    if kind in _HTTP_TYPES:
        url = entry.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ConfigError(f"{where}.url: a Streamable HTTP server needs a url")
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"{where}.url: {printable(url, limit=80)} is not an http:// or https:// address")
        return ServerConfig(name, Transport.HTTP, url=url.strip(), headers=_strings(entry, "headers", where),
                            enabled=enabled, call_timeout_s=timeout)
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}.command: a stdio server needs a command")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise ConfigError(f"{where}.args: must be a list of strings")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{where}.cwd: must be a folder's path, as text")
    return ServerConfig(name, Transport.STDIO, command=command, args=tuple(args), env=_strings(entry, "env", where),
                        cwd=cwd or None, enabled=enabled, call_timeout_s=timeout)


def _strings(entry: dict, field: str, where: str) -> tuple[tuple[str, str], ...]:
    """`env` or `headers`: an object of text values (a number is refused, not guessed at)."""
    value = entry.get(field, {})
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ConfigError(f"{where}.{field}: must be an object of names and text values")
    for item, text in value.items():
        if not item or not isinstance(text, str):
            raise ConfigError(f"{where}.{field}[{json.dumps(printable(item, limit=40))}]: must be text")
    return tuple(value.items())


def _timeout(entry: dict, where: str) -> float:
    """A call's timeout in seconds (Cline's and Roo's `"timeout"`), else the default."""
    value = entry.get("timeout")
    if value is None:
        return CALL_TIMEOUT_S
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{where}.timeout: must be a number of seconds above 0")
    return float(value)


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _refusing_duplicates(pairs: list[tuple[str, object]]) -> dict:
    """json.loads keeps the last of two equal keys without a word; two servers of one name would
    be one server lost."""
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen
