"""A load that does not fit asks first (ModelSession decides, the window asks), and what a load
had to give up (ModelDescription.load_notes) is said in the status bar.

Scripted backends load the real default model's path, so its memory plan is the real one.
This machine's free RAM cannot be changed from a test: where a load must not fit,
machine.free_ram is replaced by a figure smaller than the model's plan.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtWidgets import QMessageBox
from support.modal_answers import answering
from support.scripted_backend import ScriptedBackend
from support.scripted_window import ScriptedWindow
from support.settings_file import settings_at

from app.engine import machine
from app.engine.memory_plan import Fit
from app.engine.types import LocalModel
from app.owners.bridge import EngineBridge
from app.owners.model_session import ModelSession

MIB = 1024**2
TOO_LITTLE = 100 * MIB  # Gemma 3 270M's weights alone are ~250 MB
MLOCK_NOTE = "Could not lock the model in RAM (mlock): this user may lock 8 MiB (RLIMIT_MEMLOCK)."


@pytest.fixture
def window(qtbot, scripted_models, tmp_path, gemma_info):
    opened = ScriptedWindow(qtbot, scripted_models, tmp_path, gemma_info.path)
    yield opened.window
    opened.close()


def test_the_first_load_of_a_model_that_fits_never_asks(qtbot, scripted_models, gemma_info):
    asked = []
    scripted_models.loadNeedsConfirmation.connect(lambda *args: asked.append(args))
    assert scripted_models.memory_plan(LocalModel(gemma_info.path)).fit is Fit.FITS  # 22 GB free here
    with qtbot.waitSignal(scripted_models.modelLoaded, timeout=5_000):
        scripted_models.load(gemma_info.path)
    assert asked == []


def test_a_reload_that_does_not_fit_asks_and_cancel_keeps_the_model(window, qtbot, script, monkeypatch):
    models = window.models
    loaded = models.current
    loads = len(script.loads)
    window.parameters.n_ctx.setValue(8192)  # a setting that applies on reload
    assert not window.parameters.reload_notice.isHidden()
    monkeypatch.setattr(machine, "free_ram", lambda: TOO_LITTLE)  # the machine's RAM can't be changed here
    seen = []
    with answering(lambda box: seen.append((box.text(), box.informativeText(),
                                            [b.text() for b in box.buttons()]))) as answered:
        window.parameters.reload_button.click()
        qtbot.waitUntil(lambda: bool(answered.titles), timeout=5_000)
    assert answered.titles == ["QMessageBox: Not enough memory"]
    text, details, buttons = seen[0]
    assert "needs more memory than is free" in text and "of 100 MiB free" in details and "weights" in details
    assert sorted(buttons) == ["Cancel", "Load anyway"]
    assert models.current is loaded and models.loading is None and len(script.loads) == loads
    assert "does not fit" in window.statusBar().currentMessage()


def test_load_anyway_loads_it(window, qtbot, script, monkeypatch):
    models = window.models
    loads = len(script.loads)
    window.parameters.n_ctx.setValue(8192)
    monkeypatch.setattr(machine, "free_ram", lambda: TOO_LITTLE)  # the machine's RAM can't be changed here

    def load_anyway(box: QMessageBox) -> None:
        next(b for b in box.buttons() if b.text() == "Load anyway").click()

    with answering(answer=load_anyway) as answered, qtbot.waitSignal(models.modelLoaded, timeout=5_000):
        window.parameters.reload_button.click()
    assert len(answered.titles) == 1 and len(script.loads) == loads + 1
    assert script.loads[-1][1].n_ctx == 8192 and window.parameters.reload_notice.isHidden()


def test_load_notes_are_said_in_the_status_bar(qtbot, qapp, tmp_path, script, gemma_info):
    def opener(source, options, progress=None, cancel=None):
        backend = script.open(source, options, progress, cancel)
        return ScriptedBackend(script, replace(backend.describe(), load_notes=(MLOCK_NOTE,)))

    bridge = EngineBridge(opener)
    models = ModelSession(bridge, settings_at(tmp_path / "hearth.ini"))
    opened = ScriptedWindow(qtbot, models, tmp_path, gemma_info.path)  # the window shows the loaded model
    try:
        message = opened.window.statusBar().currentMessage()
        assert message.startswith("Loaded ") and MLOCK_NOTE in message
        assert "RLIMIT_MEMLOCK" in opened.window.model_label.toolTip()
    finally:
        opened.close()
        bridge.shutdown()
