"""Tool servers in the settings file: their secrets (environment values, header values) go to the
keyring, never into the file; what is read back is what was kept; an mcp.json import adds its
servers switched off, under names of their own."""

from __future__ import annotations

import json

import keyring
from support.settings_file import settings_at

from app.owners.tool_servers import ToolServerManager
from app.tool_servers.types import ServerConfig, Transport

SECRET = "sk-very-secret-value"




def test_secrets_go_to_the_keyring_and_come_back(tmp_path):
    path = tmp_path / "hearth.ini"
    servers = [
        ServerConfig("files", Transport.STDIO, "npx", ("-y", "files-server"), env=(("TOKEN", SECRET),), cwd="/tmp",
                     enabled=True, call_timeout_s=12.5),
        ServerConfig("search", Transport.HTTP, url="https://example.test/mcp",
                     headers=(("Authorization", f"Bearer {SECRET}"),)),
    ]
    settings_at(path).tools.set_servers(servers)
    assert SECRET not in path.read_text()
    assert settings_at(path).tools.servers() == servers
    settings_at(path).tools.set_servers(servers[:1])  # the removed server's secrets go too
    assert keyring.get_password("Hearth", "tool-server:search") is None


def test_limits_and_approvals_read_back_within_bounds(tmp_path):
    tools = settings_at(tmp_path / "hearth.ini").tools
    tools.step_limit = 1000
    tools.result_cap_bytes = 8 * 1024
    tools.always_allowed = frozenset({("stdio:[\"x\"]", "read")})
    again = settings_at(tmp_path / "hearth.ini").tools
    assert (again.step_limit, again.result_cap_bytes, again.always_allowed) == (100, 8192, tools.always_allowed)


def test_an_import_adds_servers_switched_off_under_names_of_their_own(qapp, tmp_path):
    settings = settings_at(tmp_path / "hearth.ini")
    manager = ToolServerManager(settings.tools)
    manager.set_servers([ServerConfig("time", Transport.STDIO, "uvx", ("mcp-server-time",), enabled=True)])
    file = tmp_path / "claude_desktop_config.json"
    file.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["other"]},
                                               "web": {"url": "https://example.test/mcp"}}}))
    added = manager.import_file(file)
    assert [(config.name, config.enabled) for config in added] == [("time 2", False), ("web", False)]
    assert [config.name for config in settings.tools.servers()] == ["time", "time 2", "web"]
    manager.close()


def test_a_locked_keyring_never_gets_its_secrets_overwritten_with_blanks(tmp_path, memory_keyring, monkeypatch):
    """The keyring gave nothing at start-up (locked): the servers read with empty values, and
    switching one on in Settings writes its settings back without blanking the real secrets."""
    path = tmp_path / "hearth.ini"
    server = ServerConfig("files", Transport.STDIO, "npx", env=(("TOKEN", SECRET),))
    settings_at(path).tools.set_servers([server])
    from app.library import secrets

    monkeypatch.setattr(secrets, "read", lambda account: None)
    tools = settings_at(path).tools
    [read] = tools.servers()
    assert read.env == (("TOKEN", ""),)
    tools.set_servers([ServerConfig(**{**read.__dict__, "enabled": True})])
    monkeypatch.undo()
    assert settings_at(path).tools.servers()[0].env == (("TOKEN", SECRET),)


def test_always_allow_is_kept_against_the_program_not_its_command_alone():
    here = ServerConfig("a", Transport.STDIO, "node", ("index.js",), cwd="/proj/a")
    there = ServerConfig("b", Transport.STDIO, "node", ("index.js",), cwd="/proj/b")
    other_env = ServerConfig("a", Transport.STDIO, "node", ("index.js",), cwd="/proj/a", env=(("ROOT", "/"),))
    renamed = ServerConfig("renamed", Transport.STDIO, "node", ("index.js",), cwd="/proj/a")
    assert len({here.identity, there.identity, other_env.identity}) == 3
    assert renamed.identity == here.identity
    assert "/" not in here.identity.split("#")[1]  # the environment enters as a digest, never its values


def test_without_a_keyring_the_secrets_are_kept_for_the_session_and_that_is_said(qapp, tmp_path):
    import keyring.backends.fail

    keyring.set_keyring(keyring.backends.fail.Keyring())
    settings = settings_at(tmp_path / "hearth.ini")
    manager = ToolServerManager(settings.tools)
    assert manager.set_servers([ServerConfig("files", Transport.STDIO, "npx", env=(("TOKEN", SECRET),))]) is False
    settings.sync()
    assert manager.secrets_kept is False and SECRET not in (tmp_path / "hearth.ini").read_text()
    assert settings.tools.servers()[0].env == (("TOKEN", SECRET),)  # this session's memory
    manager.set_servers([])  # forgotten, from this session's memory too
    manager.close()
