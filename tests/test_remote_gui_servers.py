"""The saved servers: kept in the settings file by name and address only, their keys in the
keyring (or this session's memory where there is none), listed off the GUI thread by
RemoteServers, against the stand-in server (tests/support/remote_servers.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.remote_gui import memory_keyring, no_keyring  # noqa: F401 - fixtures
from support.remote_servers import free_port, stand_in  # noqa: F401 - a fixture
from support.settings_file import settings_at

from app.engine.remote.errors import RemoteFailure
from app.engine.types import RemoteModel, ServerConfig
from app.library import secrets, server_keys
from app.owners.remote_servers import RemoteServers
from app.owners.settings import Settings

WAIT_MS = 5_000
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ini(tmp_path):
    return tmp_path / "hearth.ini"


@pytest.fixture
def settings(ini) -> Settings:
    return settings_at(ini)


def reopened(ini) -> Settings:
    return settings_at(ini)


def test_servers_are_kept_by_name_and_address_and_the_key_only_in_the_keyring(
        qapp, qtbot, settings, ini, memory_keyring, stand_in):  # noqa: F811 - fixtures
    servers = RemoteServers(settings)
    with qtbot.waitSignal(servers.listed, timeout=WAIT_MS) as listed:
        kept = servers.add(ServerConfig(stand_in.url("auth") + "/", " Lab box ", api_key=" good-key "))
    assert kept.persistent and "keyring" in kept.message
    assert listed.args[0].reachable and [m.model_id for m in listed.args[0].models] == ["stand-in"]
    assert stand_in.requests[-1].headers["Authorization"] == "Bearer good-key"  # listed with its key
    settings.sync()
    assert "good-key" not in ini.read_text(encoding="utf-8")
    assert memory_keyring.secrets == {("Hearth", f"server:{stand_in.url('auth')}"): "good-key"}
    assert reopened(ini).servers == [ServerConfig(stand_in.url("auth"), "Lab box")]
    assert servers.source(reopened(ini).servers[0], "stand-in").server.api_key == "good-key"

    servers.add(ServerConfig(stand_in.url("auth"), "Renamed"))  # saved again without a key: it has none now
    assert [s.name for s in reopened(ini).servers] == ["Renamed"] and memory_keyring.secrets == {}
    servers.remove(stand_in.url("auth"))
    assert reopened(ini).servers == [] and servers.listings() == []


def test_without_a_keyring_a_key_lasts_for_this_session(qapp, settings, no_keyring, monkeypatch):  # noqa: F811
    saved = server_keys.save_key("http://gpu:8000/v1", "sk-1")
    assert not saved.persistent and "until Hearth quits" in saved.message
    assert server_keys.load_key("http://gpu:8000/v1") == "sk-1"
    monkeypatch.setattr(secrets, "_session", {})  # as after a restart
    assert server_keys.load_key("http://gpu:8000/v1") is None


def test_a_hand_edited_server_list_keeps_what_it_can(settings, ini):
    settings._store.setValue("servers/saved", '[{"name": "ok", "base_url": "http://gpu:8000/v1"}, '
                             '{"base_url": "ftp://x"}, "junk", {"name": "dup", "base_url": "http://gpu:8000/v1/"}]')
    assert settings.servers == [ServerConfig("http://gpu:8000/v1", "ok")]
    settings._store.setValue("servers/saved", "not json")
    assert settings.servers == []


def test_the_last_model_is_remembered_as_a_source(settings):
    server = ServerConfig("http://gpu:8000/v1", "Lab box")
    settings.servers = [server]
    settings.last_source = RemoteModel(ServerConfig(server.base_url, "Lab box", api_key="secret"), "org/model#q4")
    assert settings.last_source == RemoteModel(server, "org/model#q4")
    assert "secret" not in str(settings._store.value("models/last"))
    settings.servers = []  # the server was removed since
    assert settings.last_source is None


def test_an_unreachable_server_is_a_listing_with_its_reason_and_the_gui_thread_never_waits(
        qapp, qtbot, settings, memory_keyring, stand_in):  # noqa: F811
    gone = ServerConfig(f"http://127.0.0.1:{free_port()}/v1", "Gone")
    silent = ServerConfig(stand_in.url("stall-start"), "Silent")
    settings.servers = [silent, gone, ServerConfig(stand_in.url("ok"), "Fine")]
    servers = RemoteServers(settings)
    answers = []
    servers.listed.connect(answers.append)
    started = threading.get_ident()
    servers.refresh()  # returns at once: the silent server is waited for on its own thread
    assert servers.listing_count == 3 and answers == []
    qtbot.waitUntil(lambda: len(answers) == 2, timeout=WAIT_MS)
    by_name = {listing.server.name: listing for listing in answers}
    assert by_name["Gone"].failure is RemoteFailure.REFUSED and "refused the connection" in by_name["Gone"].error
    assert by_name["Fine"].reachable and by_name["Fine"].models[0].model_id == "stand-in"
    assert [listing.server.name for listing in servers.listings()] == ["Gone", "Fine"]  # in the saved order
    assert servers.listing_count == 1 and threading.get_ident() == started
    servers.remove(silent.base_url)  # its answer, when the server lets go, is dropped
    stand_in.release.set()
    qtbot.wait(100)
    assert len(answers) == 2 and servers.listing_count == 0


def test_checking_a_server_that_is_not_saved_answers_by_number(qapp, qtbot, settings, stand_in):  # noqa: F811
    servers = RemoteServers(settings)
    with qtbot.waitSignal(servers.checked, timeout=WAIT_MS) as checked:
        number = servers.check(ServerConfig(stand_in.url("auth"), api_key="wrong"))
    assert checked.args[0] == number
    assert checked.args[1].failure is RemoteFailure.AUTH and "(401)" in checked.args[1].error
    assert settings.servers == []


def test_the_window_starts_without_the_http_client():
    """httpx is imported by the first listing or remote load, on its thread: a window with no
    servers pays nothing for them at start-up."""
    code = "import sys, app.ui.window.main_window; print('httpx' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_start_up_opens_the_last_model_a_remote_one_with_its_key_and_a_gone_file_gives_way(
        qapp, settings, memory_keyring, tmp_path, gemma_path):  # noqa: F811
    """application.first_model, which runs off the GUI thread before the first load."""
    from argparse import Namespace

    from app.engine.types import LocalModel
    from app.owners.bridge import EngineBridge
    from app.owners.model_session import ModelSession
    from app.ui.app.application import first_model

    bridge = EngineBridge()
    models = ModelSession(bridge, settings)
    try:
        server = ServerConfig("http://gpu:8000/v1", "Lab box")
        settings.servers = [server]
        server_keys.save_key(server.base_url, "sk-lab")
        settings.last_source = RemoteModel(server, "org/model")
        chosen = first_model(Namespace(model=None), models)
        assert chosen == RemoteModel(ServerConfig(server.base_url, "Lab box", api_key="sk-lab"), "org/model")
        named = tmp_path / "named.gguf"
        assert first_model(Namespace(model=str(named)), models) == named  # --model wins
        settings.last_source = LocalModel(tmp_path / "deleted.gguf")
        assert first_model(Namespace(model=None), models) == gemma_path  # gone: the default model
    finally:
        bridge.shutdown()
