"""`hearth tools list`, run as a user runs it: every server's tools as one JSON array, a row with
the reason for each server that failed, and exit 0 whenever the listing ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import keyring
import keyring.backends.fail
from support.mcp_servers.configs import exits_at_once, not_found, time_server, toolbox
from support.settings_file import settings_at

from app.tool_servers.config import to_mcp_json

ROOT = Path(__file__).resolve().parents[2]


def hearth(*args, home: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    if home is not None:
        env["HEARTH_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, cwd=ROOT, env=env,
                          timeout=120)


def test_every_servers_tools_and_a_row_for_each_that_failed(tmp_path):
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps(to_mcp_json([toolbox(), time_server(), not_found(), exits_at_once()])))
    out = hearth("tools", "list", "--mcp", mcp)
    assert out.returncode == 0, out.stderr.decode()
    rows = json.loads(out.stdout)
    tools = {(row["server"], row["name"]): row for row in rows if "name" in row}
    assert {("box", "add"), ("box", "echo"), ("time", "get_current_time"), ("time", "convert_time")} <= set(tools)
    add = tools[("box", "add")]
    assert add["description"] == "Add two whole numbers." and add["input_schema"]["required"] == ["a", "b"]
    errors = {row["server"]: row["error"] for row in rows if "error" in row}
    assert errors == {"missing": "command not found: hearth-test-no-such-command",
                      "exits": "it exited at once; it said: fatal: no API key given"}


def test_a_bad_file_is_refused_naming_what_is_wrong(tmp_path):
    mcp = tmp_path / "mcp.json"
    mcp.write_text('{"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}}')
    out = hearth("tools", "list", "--mcp", mcp)
    assert out.returncode == 2 and out.stdout == b""
    assert 'hearth: error: --mcp: mcpServers["old"].type: SSE servers are not supported' in out.stderr.decode()


def test_without_a_file_the_servers_of_settings_are_listed(tmp_path):
    home = tmp_path / "home"
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        settings_at(home / "config" / "hearth.ini").tools.set_servers([toolbox(), toolbox("off", enabled=False)])
    finally:
        keyring.set_keyring(previous)
    out = hearth("tools", "list", home=home)
    assert out.returncode == 0, out.stderr.decode()
    rows = json.loads(out.stdout)
    assert {"server": "off", "error": "switched off in Settings → Tools"} in rows
    assert {row["name"] for row in rows if row["server"] == "box"} >= {"add", "echo"}
