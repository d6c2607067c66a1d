"""The parameters panel's "Draft from the conversation" tick box: prompt-lookup decoding, on
or off per model (SamplingParams.draft), handed to the ModelSession, which keeps it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from support.panel_helpers import load, shown_panel
from support.settings_file import settings_at

from app.engine.sampling import Drafting
from app.engine.types import DeviceInfo, ModelDescription, RemoteModel, ServerConfig
from app.ui.parameters.panel import ParametersPanel


@pytest.fixture
def panel(qtbot, scripted_models):
    return shown_panel(qtbot, scripted_models, 340)


def click(box) -> None:
    QTest.mouseClick(box, Qt.LeftButton, pos=box.rect().center())


def test_clicking_the_box_turns_drafting_off_and_on_for_the_model(panel, qtbot, scripted_models, tmp_path, gemma_info):
    models = scripted_models
    load(qtbot, models, gemma_info.path.name)
    assert panel.draft.isChecked() and models.settings.sampling.draft is Drafting.LOOKUP
    preset = panel.preset.currentText()

    with qtbot.waitSignal(models.settingsChanged, timeout=1_000):
        click(panel.draft)
    assert models.settings.sampling.draft is Drafting.NONE
    assert panel.preset.currentText() == preset  # how it decodes is no part of a preset
    stored = settings_at(tmp_path / "hearth.ini")
    assert stored.model_settings(gemma_info.path.name).sampling.draft is Drafting.NONE

    panel.draft.setFocus()
    QTest.keyClick(panel.draft, Qt.Key_Space)  # the keyboard's way
    assert models.settings.sampling.draft is Drafting.LOOKUP


def test_the_box_shows_each_models_own_setting(panel, qtbot, scripted_models, gemma_info):
    models = scripted_models
    load(qtbot, models, gemma_info.path.name)
    click(panel.draft)
    load(qtbot, models, "other.gguf")
    assert panel.draft.isChecked()  # a model never set: the default, on
    load(qtbot, models, gemma_info.path.name)
    assert not panel.draft.isChecked()


def test_the_box_is_named_explained_and_off_for_a_servers_model(panel, scripted_models, gemma_info):
    assert panel.draft.accessibleName() == "Draft from the conversation (prompt lookup)"
    assert "copying" in panel.draft.accessibleDescription() and panel.draft.toolTip()
    assert panel.draft.isEnabled()
    remote = ModelDescription(RemoteModel(ServerConfig("http://127.0.0.1:9/v1"), "m"), None,
                              DeviceInfo("remote", 0, 0, 0), None, "server")
    scripted_models.modelLoaded.emit(remote)  # what the session says once a server's model is loaded
    assert not panel.draft.isEnabled()  # a server decodes as it does


def test_the_box_fits_the_narrowest_panel(qtbot, scripted_models):
    panel = ParametersPanel(scripted_models)
    qtbot.addWidget(panel)
    panel.resize(300, 480)
    panel.show()
    qtbot.waitExposed(panel)
    assert panel.draft.sizeHint().width() <= panel.reply_box.contentsRect().width()
