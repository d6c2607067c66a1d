"""ModelSession: loading, the newest load winning, per-model settings and reloads, on scripted
backends; remote models against the stand-in server (tests/support/remote_servers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.remote_gui import memory_keyring, mixed_opener  # noqa: F401 - a fixture
from support.remote_servers import free_port, stand_in  # noqa: F401 - a fixture
from support.settings_file import settings_at

from app.engine.sampling import SamplingParams
from app.engine.types import LocalModel, ModelSettings, RemoteModel, ServerConfig
from app.library import server_keys
from app.owners.bridge import EngineBridge
from app.owners.model_session import ModelSession

WAIT_MS = 5_000


def load(qtbot, models, name: str):
    with qtbot.waitSignal(models.loadFinished, timeout=WAIT_MS) as finished:
        models.load(Path("/models") / name)
    return finished.args[0]


def test_a_load_brings_the_models_stored_settings_and_is_remembered(qtbot, scripted_models, script):
    models = scripted_models
    assert models.current is None and models.settings == ModelSettings()
    stored = ModelSettings(SamplingParams(temperature=0.2), "Be brief.", n_ctx=2048, cpu_threads=1)
    models._store.save_model_settings("a.gguf", stored)
    with qtbot.waitSignal(models.settingsChanged, timeout=WAIT_MS) as changed:
        assert load(qtbot, models, "a.gguf") == ""
    assert changed.args[0] == stored == models.settings
    assert models.current.path == Path("/models/a.gguf") and models.current.n_ctx == 2048
    assert script.loads[-1][1] == stored.load_options()  # loaded with them: one spelling for "all layers"
    assert script.loads[-1][1].n_gpu_layers is None
    assert models._store.last_source == LocalModel(Path("/models/a.gguf")) and models.remembered() == LocalModel(Path("/models/a.gguf"))


def test_the_newest_load_wins_and_a_superseded_loads_failure_is_not_reported(qtbot, scripted_models, script):
    models = scripted_models
    load(qtbot, models, "first.gguf")
    script.slow.add("slow.gguf")
    failures = []
    models.loadFailed.connect(failures.append)
    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS) as loaded:
        models.load(Path("/models/slow.gguf"))  # waits on the worker until it is cancelled…
        models.load(Path("/models/second.gguf"))  # …which this newer load does
    assert loaded.args[0].path.name == "second.gguf" and models.current.path.name == "second.gguf"
    assert failures == [] and models.loading is None


def test_a_cancelled_load_keeps_the_current_model(qtbot, scripted_models, script):
    models = scripted_models
    load(qtbot, models, "first.gguf")
    script.slow.add("slow.gguf")
    with qtbot.waitSignal(models.loadFailed, timeout=WAIT_MS) as failed:
        models.load(Path("/models/slow.gguf"))
        models.cancel_load()
    assert "cancelled" in failed.args[0] and models.current.path.name == "first.gguf"


def test_a_broken_file_fails_with_its_reason_and_the_current_model_stays(qtbot, scripted_models, script):
    models = scripted_models
    load(qtbot, models, "first.gguf")
    script.broken.add("broken.gguf")
    assert "truncated" in load(qtbot, models, "broken.gguf")
    assert models.current.path.name == "first.gguf"


def test_settings_are_kept_per_model_and_only_load_settings_ask_for_a_reload(qtbot, scripted_models, script, tmp_path):
    models = scripted_models
    load(qtbot, models, "a.gguf")
    reloads = []
    models.reloadNeededChanged.connect(reloads.append)
    models.update_settings(models.settings.with_changes(system_prompt="Be brief.", sampling=SamplingParams(top_k=3)))
    assert reloads == [] and not models.reload_needed
    models.update_settings(models.settings.with_changes(gpu_layers=0))
    assert reloads == [True]
    models.update_settings(models.settings.with_changes(gpu_layers=None))  # back to what it was loaded with
    assert reloads == [True, False]
    models.update_settings(models.settings.with_changes(n_ctx=1024))
    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS):
        models.reload()
    assert reloads == [True, False, True, False] and models.current.n_ctx == 1024

    load(qtbot, models, "b.gguf")
    assert models.settings == ModelSettings()  # another model, its own (default) settings
    reopened = settings_at(tmp_path / "hearth.ini")
    assert reopened.model_settings("a.gguf") == ModelSettings(
        SamplingParams(top_k=3), "Be brief.", n_ctx=1024)


def test_a_template_override_applies_without_a_reload(qtbot, scripted_models, script):
    models = scripted_models
    load(qtbot, models, "a.gguf")
    with qtbot.waitSignal(models.templateChanged, timeout=WAIT_MS) as changed:
        models.update_settings(models.settings.with_changes(template_override="{{ messages }}"))
    assert changed.args[0] == "custom" and script.templates == ["{{ messages }}"]
    assert not models.reload_needed
    with qtbot.waitSignal(models.templateChanged, timeout=WAIT_MS) as changed:
        models.update_settings(models.settings.with_changes(template_override=None))
    assert changed.args[0] == "fallback:gemma" and script.templates == ["{{ messages }}", None]


def test_settings_edited_before_any_model_apply_but_are_not_kept(qtbot, scripted_models, tmp_path):
    models = scripted_models
    models.update_settings(ModelSettings(SamplingParams(temperature=1.9)))
    assert models.settings.sampling.temperature == 1.9
    load(qtbot, models, "a.gguf")
    assert models.settings == ModelSettings()


def test_a_template_edited_while_another_model_loads_stays_with_its_own_model(qtbot, scripted_models, script):
    models = scripted_models
    load(qtbot, models, "a.gguf")
    script.slow.add("slow.gguf")
    with qtbot.waitSignal(models.loadFailed, timeout=WAIT_MS):
        models.load(Path("/models/slow.gguf"))
        models.update_settings(models.settings.with_changes(template_override="{{ A }}"))  # a.gguf's
        assert script.templates == []  # not sent while the worker is busy loading another model
        models.cancel_load()
    qtbot.waitUntil(lambda: script.templates == ["{{ A }}"], timeout=WAIT_MS)  # a.gguf stayed: it gets it
    load(qtbot, models, "b.gguf")
    assert script.templates == ["{{ A }}"] and models.settings.template_override is None


def test_unload_closes_the_model_and_leaves_no_model(qtbot, scripted_models, script, monkeypatch):
    from support.scripted_backend import ScriptedBackend

    closed = []
    monkeypatch.setattr(ScriptedBackend, "close", lambda backend: closed.append(backend.describe().path.name))
    models = scripted_models
    load(qtbot, models, "a.gguf")
    models.update_settings(models.settings.with_changes(n_ctx=1024))  # asks for a reload…
    assert models.reload_needed
    settings_seen = []
    models.settingsChanged.connect(settings_seen.append)
    with qtbot.waitSignal(models.modelUnloaded, timeout=WAIT_MS):
        models.unload()
    assert closed == ["a.gguf"]  # the engine thread closed it (llama.cpp frees it there)
    assert models.current is None and not models.reload_needed  # …which no longer applies
    assert models.settings == ModelSettings() and settings_seen == [ModelSettings()]
    assert models._store.model_settings("a.gguf").n_ctx == 1024  # a.gguf's own settings are kept

    load(qtbot, models, "a.gguf")  # and it loads again, with them
    assert models.current.path.name == "a.gguf" and models.settings.n_ctx == 1024


def test_unload_during_a_load_cancels_it_and_closes_the_current_model(qtbot, scripted_models, script, monkeypatch):
    from support.scripted_backend import ScriptedBackend

    closed = []
    monkeypatch.setattr(ScriptedBackend, "close", lambda backend: closed.append(backend.describe().path.name))
    models = scripted_models
    load(qtbot, models, "a.gguf")
    script.slow.add("slow.gguf")
    failures = []
    models.loadFailed.connect(failures.append)
    with qtbot.waitSignal(models.modelUnloaded, timeout=WAIT_MS):
        models.load(Path("/models/slow.gguf"))  # waits on the worker until it is cancelled…
        models.unload()  # …which unloading does, before closing a.gguf
    assert closed == ["a.gguf"] and models.current is None and models.loading is None
    assert len(failures) == 1 and "cancelled" in failures[0]


def test_unload_with_no_model_says_nothing(qtbot, scripted_models):
    models = scripted_models
    with qtbot.assertNotEmitted(models.modelUnloaded, wait=200):
        models.unload()
    assert models.current is None


# --- remote models ------------------------------------------------------------------------------

@pytest.fixture
def mixed_models(qapp, tmp_path, script):
    """A ModelSession whose files are scripted and whose servers' models are real."""
    bridge = EngineBridge(mixed_opener(script))
    models = ModelSession(bridge, settings_at(tmp_path / "hearth.ini"))
    yield models
    bridge.shutdown()


def test_a_remote_model_uses_its_sampling_settings_but_never_a_reload_or_a_template(
        qtbot, mixed_models, script, stand_in):  # noqa: F811 - the fixture imported above
    models = mixed_models
    source = RemoteModel(ServerConfig(stand_in.url("ok"), "Lab box"), "stand-in")
    stored = ModelSettings(SamplingParams(temperature=0.3), "Be brief.", n_ctx=2048)
    models._store.save_model_settings(source.settings_key, stored)
    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS) as loaded:
        models.load(source)
    assert loaded.args[0].is_remote and models.settings == stored and script.loads == []
    assert not models.reload_needed  # a context length stored for it asks for nothing
    failures = []
    models.templateFailed.connect(failures.append)
    models.update_settings(models.settings.with_changes(n_ctx=1024, cpu_threads=1, template_override="{{ x }}"))
    assert not models.reload_needed
    qtbot.wait(100)
    assert failures == []  # never sent: the server applies its own template
    assert models._store.model_settings(source.settings_key).n_ctx == 1024  # kept as the user set it
    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS) as again:
        models.reload()
    assert again.args[0].source == source


def test_a_remembered_remote_model_comes_with_its_key_and_an_unreachable_one_fails_alone(
        qtbot, mixed_models, memory_keyring, stand_in):  # noqa: F811
    models = mixed_models
    lab = ServerConfig(stand_in.url("auth"), "Lab box")
    gone = ServerConfig(f"http://127.0.0.1:{free_port()}/v1", "Gone")
    models._store.servers = [lab, gone]
    server_keys.save_key(lab.base_url, "good-key")
    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS):
        models.load(RemoteModel(ServerConfig(lab.base_url, lab.name, api_key="good-key"), "stand-in"))
    remembered = models.remembered()
    assert remembered.settings_key == RemoteModel(lab, "stand-in").settings_key
    assert remembered.server.name == "Lab box" and remembered.server.api_key == "good-key"

    # At start-up the remembered model loads through the bridge like any other: a server that is
    # off is a failed load with its reason, the window's model (if any) stays, and files still load.
    models._store.last_source = RemoteModel(gone, "stand-in")
    with qtbot.waitSignal(models.loadFailed, timeout=WAIT_MS) as failed:
        models.load(models.remembered())
    assert failed.args[0].startswith("Gone (") and "refused the connection" in failed.args[0]
    assert models.current.source.server.name == "Lab box" and models.loading is None
    assert load(qtbot, models, "a.gguf") == "" and models.current.path == Path("/models/a.gguf")
    assert models.remembered() == LocalModel(Path("/models/a.gguf"))


def test_a_model_described_again_after_a_reply_updates_the_current_one(qtbot, mixed_models, stand_in):  # noqa: F811
    models = mixed_models
    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS):
        models.load(RemoteModel(ServerConfig(stand_in.url("strict")), "stand-in"))
    with qtbot.waitSignal(models.descriptionChanged, timeout=WAIT_MS) as changed:
        models._bridge.generate([{"role": "user", "content": "Hi"}], SamplingParams())
    assert "top_k" in changed.args[0].unsent_fields and models.current is changed.args[0]
