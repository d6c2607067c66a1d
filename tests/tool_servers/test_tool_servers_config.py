"""mcp.json and claude_desktop_config.json read into ServerConfigs, and what a bad file is told."""

from __future__ import annotations

import json

import pytest

from app.tool_servers.config import ConfigError, read_mcp_json, to_mcp_json
from app.tool_servers.types import ServerConfig, Transport

CLAUDE_DESKTOP = {"mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
    "github": {"command": "docker", "args": ["run", "-i", "ghcr.io/github/github-mcp-server"],
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret"}, "cwd": "/srv"},
    "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t0ken"}},
    "typed": {"type": "streamable-http", "url": "http://127.0.0.1:8000/mcp"},
}}


def test_a_claude_desktop_file_is_read_with_every_server_switched_off():
    configs = read_mcp_json(json.dumps(CLAUDE_DESKTOP))
    assert [c.name for c in configs] == ["filesystem", "github", "remote", "typed"]
    assert not any(c.enabled for c in configs)
    github = configs[1]
    assert (github.transport, github.command, github.args[0], github.env, github.cwd) == (
        Transport.STDIO, "docker", "run", (("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_secret"),), "/srv")
    assert configs[2] == ServerConfig("remote", Transport.HTTP, url="https://example.com/mcp",
                                      headers=(("Authorization", "Bearer t0ken"),), enabled=False)
    assert configs[3].transport is Transport.HTTP


def test_the_command_line_reads_them_switched_on(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(CLAUDE_DESKTOP))
    assert all(config.enabled for config in read_mcp_json(path, enabled=True))
    disabled = {"mcpServers": {"x": {"command": "x", "disabled": True}}}
    assert not read_mcp_json(json.dumps(disabled), enabled=True)[0].enabled  # Cline's own switch is kept


def test_vs_codes_servers_key_and_a_timeout_are_read():
    [config] = read_mcp_json('{"servers": {"s": {"type": "stdio", "command": "s", "timeout": 5}}}')
    assert (config.name, config.call_timeout_s) == ("s", 5.0)


@pytest.mark.parametrize(("text", "said"), [
    ("{not json", "not JSON"),
    ("[1, 2]", "not a server list"),
    ('{"other": {}}', 'no "mcpServers"'),
    ('{"mcpServers": []}', "must be an object of named servers"),
    ('{"mcpServers": {"a": "npx"}}', 'mcpServers["a"]: must be an object'),
    ('{"mcpServers": {"a": {"args": ["x"]}}}', 'mcpServers["a"].command: a stdio server needs a command'),
    ('{"mcpServers": {"a": {"type": "http"}}}', 'mcpServers["a"].url: a Streamable HTTP server needs a url'),
    ('{"mcpServers": {"a": {"command": "x", "args": ["ok", 3]}}}', 'mcpServers["a"].args: must be a list of strings'),
    ('{"mcpServers": {"a": {"command": "x", "args": "one two"}}}', 'mcpServers["a"].args'),
    ('{"mcpServers": {"a": {"command": "x", "env": {"PORT": 80}}}}', 'mcpServers["a"].env["PORT"]: must be text'),
    ('{"mcpServers": {"a": {"url": "file:///etc/passwd"}}}', "is not an http:// or https:// address"),
    ('{"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}', "SSE servers are not supported; use"),
    ('{"mcpServers": {"a": {"type": "websocket", "url": "ws://h"}}}', '"websocket" is not "stdio" or "http"'),
    ('{"mcpServers": {" ": {"command": "x"}}}', "a server needs a name"),
    ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', '"a" appears twice'),
    ('{"mcpServers": {"a": {"command": "x", "timeout": -1}}}', 'mcpServers["a"].timeout'),
])
def test_a_bad_file_is_refused_naming_the_server_and_the_field(text, said):
    with pytest.raises(ConfigError) as raised:
        read_mcp_json(text)
    assert said in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_a_file_that_cannot_be_read_says_so(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_mcp_json(tmp_path / "absent.json")


def test_a_name_with_control_characters_is_kept_but_shown_printable():
    [config] = read_mcp_json('{"mcpServers": {"odd\\u0007name": {"command": "x"}}}')
    assert config.name == "odd\x07name"
    with pytest.raises(ConfigError) as raised:
        read_mcp_json('{"mcpServers": {"odd\\u0007name": {"command": 1}}}')
    assert "\x07" not in str(raised.value)


def test_export_reads_back_as_the_same_servers():
    configs = read_mcp_json(json.dumps(CLAUDE_DESKTOP), enabled=True)
    assert read_mcp_json(json.dumps(to_mcp_json(configs)), enabled=True) == configs
