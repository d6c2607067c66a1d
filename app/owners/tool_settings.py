"""Tool servers in the settings file, their secrets in the keyring (library/secrets.py).

A server's environment and headers hold secrets (API keys, tokens): their names are kept in
the settings file, their values in the keyring under one account per server, never in the
file. The command line reads the same servers (`hearth tools list`, `hearth chat` without --mcp).
"""

from __future__ import annotations

import json
import logging

from PySide6.QtCore import QSettings

from ..library import secrets
from ..tool_servers.limits import (
    CALL_TIMEOUT_S,
    MAX_CALL_TIMEOUT_S,
    MAX_RESULT_CAP_KB,
    MAX_STEP_LIMIT,
    RESULT_CAP_BYTES,
    STEP_LIMIT,
)
from ..tool_servers.types import ServerConfig, Transport

log = logging.getLogger(__name__)

TOOL_SERVERS = "tools/servers"  # JSON: [{name, transport, command, args, cwd, url, enabled, timeout, env, headers}]
STEP_LIMIT_KEY = "tools/step_limit"
RESULT_CAP_KEY = "tools/result_cap_kb"  # kilobytes of a result's text the model reads
ALWAYS_ALLOWED = "tools/always_allowed"  # JSON: [[server identity, tool name]]
DEFAULT_CHOICE = "tools/default_servers"  # JSON: the servers a new conversation starts with


def _account(name: str) -> str:
    return f"tool-server:{name}"


class ToolSettings:
    """The tool servers, the step limit, the tools always allowed and the default choice."""

    def __init__(self, store: QSettings):
        self._store = store
        self._unreadable: set[str] = set()  # servers whose secrets the keyring did not give (locked)

    def servers(self) -> list[ServerConfig]:
        """The configured servers, secrets read back from the keyring. An entry that does not
        read (a hand edit) is skipped and logged."""
        servers: list[ServerConfig] = []
        unreadable = self._unreadable
        for entry in self._json(TOOL_SERVERS, []):
            try:
                name = str(entry["name"])
                stored = secrets.read(_account(name))
                if stored is None and (entry.get("env") or entry.get("headers")):
                    log.warning("the keyring did not give tool server %r's secrets: its values are empty", name)
                    unreadable.add(name)
                kept = json.loads(stored or "{}")
                servers.append(ServerConfig(
                    name=name, transport=Transport(entry.get("transport", "stdio")),
                    command=str(entry.get("command", "")), args=tuple(str(a) for a in entry.get("args", [])),
                    env=tuple((str(k), str(kept.get("env", {}).get(k, ""))) for k in entry.get("env", [])),
                    cwd=entry.get("cwd") or None, url=str(entry.get("url", "")),
                    headers=tuple((str(k), str(kept.get("headers", {}).get(k, ""))) for k in entry.get("headers", [])),
                    enabled=bool(entry.get("enabled", False)),
                    call_timeout_s=min(max(float(entry.get("timeout", CALL_TIMEOUT_S)), 1.0), MAX_CALL_TIMEOUT_S)))
            except (TypeError, KeyError, AttributeError, ValueError) as exc:
                log.warning("ignoring a stored tool server: %s", exc)
        return servers

    def set_servers(self, servers: list[ServerConfig]) -> bool:
        """Keep the servers: names in the file, values of environment and headers in the keyring
        (those of a server no longer here are forgotten). False when the keyring could not keep
        some secrets: they are kept for this session only (library/secrets.py)."""
        kept = True
        before = {entry.get("name") for entry in self._json(TOOL_SERVERS, []) if isinstance(entry, dict)}
        entries = []
        for server in servers:
            entries.append({"name": server.name, "transport": server.transport.value, "command": server.command,
                            "args": list(server.args), "cwd": server.cwd, "url": server.url, "enabled": server.enabled,
                            "timeout": server.call_timeout_s, "env": [k for k, _ in server.env],
                            "headers": [k for k, _ in server.headers]})
            values = [value for _, value in (*server.env, *server.headers)]
            if server.name in self._unreadable and not any(values):
                continue  # the keyring was locked when they were read: never overwrite them with blanks
            self._unreadable.discard(server.name)
            if server.env or server.headers:
                kept &= secrets.keep(_account(server.name),
                                     json.dumps({"env": dict(server.env), "headers": dict(server.headers)}))
            else:
                secrets.forget(_account(server.name))
        for gone in before - {server.name for server in servers}:
            if isinstance(gone, str):
                secrets.forget(_account(gone))
        self._store.setValue(TOOL_SERVERS, json.dumps(entries))
        return kept

    @property
    def step_limit(self) -> int:
        value = self._store.value(STEP_LIMIT_KEY, STEP_LIMIT)
        try:
            return max(1, min(MAX_STEP_LIMIT, int(value)))
        except (TypeError, ValueError):
            return STEP_LIMIT

    @step_limit.setter
    def step_limit(self, limit: int) -> None:
        self._store.setValue(STEP_LIMIT_KEY, max(1, min(MAX_STEP_LIMIT, int(limit))))

    @property
    def result_cap_bytes(self) -> int:
        """How much of a result's text the model reads (and the conversation keeps)."""
        try:
            kilobytes = int(self._store.value(RESULT_CAP_KEY, RESULT_CAP_BYTES // 1024))
        except (TypeError, ValueError):
            return RESULT_CAP_BYTES
        return max(1, min(MAX_RESULT_CAP_KB, kilobytes)) * 1024

    @result_cap_bytes.setter
    def result_cap_bytes(self, size: int) -> None:
        self._store.setValue(RESULT_CAP_KEY, max(1, min(MAX_RESULT_CAP_KB, size // 1024)))

    @property
    def always_allowed(self) -> frozenset[tuple[str, str]]:
        return frozenset((str(pair[0]), str(pair[1])) for pair in self._json(ALWAYS_ALLOWED, [])
                         if isinstance(pair, list) and len(pair) == 2)

    @always_allowed.setter
    def always_allowed(self, pairs: frozenset[tuple[str, str]]) -> None:
        self._store.setValue(ALWAYS_ALLOWED, json.dumps(sorted([list(pair) for pair in pairs])))

    @property
    def default_choice(self) -> tuple[str, ...]:
        return tuple(str(name) for name in self._json(DEFAULT_CHOICE, []))

    @default_choice.setter
    def default_choice(self, names: tuple[str, ...]) -> None:
        self._store.setValue(DEFAULT_CHOICE, json.dumps(list(names)))

    def _json(self, key: str, default: list) -> list:
        stored = self._store.value(key)
        try:
            value = json.loads(stored) if stored else default
        except (TypeError, ValueError) as exc:
            log.warning("ignoring the stored %s: %s", key, exc)
            return default
        return value if isinstance(value, list) else default
