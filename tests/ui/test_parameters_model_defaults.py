"""A model's own sampling defaults in the parameters panel: a GGUF with `general.sampling.*` keys
starts with them, shown as the "Model's defaults" preset, with each value's source beside it;
one without starts with Hearth's (Balanced); the user's edits are theirs and are kept.

The models load on scripted backends (tests/support/scripted_backend.py) described by a tiny GGUF
written here with the keys, read by the real inspect_model."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QComboBox, QScrollArea, QStyleFactory
from support.model_files import gguf_corpus as g
from support.panel_helpers import load, shown_panel
from support.settings_file import settings_at

from app.engine.gguf.reading import inspect_model
from app.engine.sampling import PRESETS, ModelDefaults, model_params
from app.engine.types import ModelSettings
from app.ui.parameters.panel import CUSTOM
from app.ui.parameters.sampling_sources import MODEL_DEFAULTS
from app.ui.widgets.colors import contrast
from app.ui.window.appearance import dark_palette

AUTHORS = ModelDefaults(temperature=1.0, top_k=64, top_p=0.95)


@pytest.fixture(scope="module")
def author_info(tmp_path_factory):
    """A model whose file carries its author's temperature, top-k and top-p (and one value out
    of range, which is dropped)."""
    model = g.tiny_llama(name="Tiny Author")
    for key, value in (("general.sampling.temp", g.f32(1.0)), ("general.sampling.top_k", g.scalar(g.I32, 64)),
                       ("general.sampling.top_p", g.f32(0.95)), ("general.sampling.min_p", g.f32(7.0))):
        model = model.set(key, value)
    info = inspect_model(model.write(tmp_path_factory.mktemp("author") / "author.gguf"))
    assert info.sampling_defaults == AUTHORS
    return info


@pytest.fixture
def script(author_info):
    """What the scripted backends describe every model as: the author's model, until a test
    changes `info` (the conftest's scripted_models fixture opens models with this script)."""
    from support.scripted_backend import Script

    return Script(author_info)


@pytest.fixture
def panel(qtbot, scripted_models):
    return shown_panel(qtbot, scripted_models, 300)


def shown_sources(panel) -> dict[str, str]:
    return {field: label.text() for field, label in panel.sources.labels.items()}


def test_a_model_with_defaults_starts_from_them(panel, qtbot, scripted_models):
    load(qtbot, scripted_models, "author.gguf")
    assert scripted_models.settings.sampling == model_params(AUTHORS)
    assert panel.preset.currentText() == MODEL_DEFAULTS and panel.preset.currentIndex() == 0
    assert (panel.temperature.value(), panel.top_k.value(), panel.top_p.value()) == (1.0, 64, 0.95)
    assert panel.min_p.value() == PRESETS["Balanced"].min_p  # the file's 7.0 was dropped: Hearth's
    assert shown_sources(panel) == {
        "temperature": "model", "top_k": "model", "top_p": "model", "min_p": "default", "repeat_penalty": "default",
        "repeat_last_n": "default", "presence_penalty": "default", "frequency_penalty": "default"}
    tip = panel.preset.itemData(0, Qt.ToolTipRole)
    assert "Temperature 1, Top-k 64, Top-p 0.95" in tip
    assert panel.preset.accessibleDescription() == tip  # a screen reader hears the values too
    assert "model's defaults" in panel.temperature.accessibleDescription()
    assert "model's defaults" in panel.temperature.toolTip() and "adventurous" in panel.temperature.toolTip()
    assert "Hearth's default" in panel.min_p.accessibleDescription()


def test_a_model_without_defaults_gets_hearths(panel, qtbot, scripted_models, script, gemma_info):
    load(qtbot, scripted_models, "author.gguf")
    script.info = gemma_info  # no general.sampling keys
    load(qtbot, scripted_models, "gemma.gguf")
    assert scripted_models.settings.sampling == PRESETS["Balanced"]
    assert panel.preset.currentText() == "Balanced"
    assert panel.preset.findText(MODEL_DEFAULTS) == -1  # offered only for a model that has them
    assert set(shown_sources(panel).values()) == {"preset"}
    assert panel.temperature.accessibleDescription() == "Value from the Balanced preset."


def test_changing_a_value_marks_it_as_the_users_and_keeps_it(panel, qtbot, scripted_models, tmp_path):
    load(qtbot, scripted_models, "author.gguf")
    panel.temperature.setFocus()
    with qtbot.waitSignal(scripted_models.settingsChanged, timeout=1_000):
        QTest.keyClick(panel.temperature, Qt.Key_Up)  # as a user steps it: 1.00 -> 1.05
    assert panel.temperature.value() == 1.05
    assert shown_sources(panel)["temperature"] == "yours" and shown_sources(panel)["top_k"] == "model"
    assert panel.temperature.accessibleDescription() == "Your own value."
    assert panel.preset.currentText() == CUSTOM

    load(qtbot, scripted_models, "author.gguf")  # loaded again: the user's value, not the model's
    assert panel.temperature.value() == 1.05 and panel.preset.currentText() == CUSTOM
    stored = settings_at(tmp_path / "hearth.ini")
    assert stored.model_settings("author.gguf").sampling == model_params(AUTHORS).with_changes(temperature=1.05)

    panel.preset.setFocus()
    with qtbot.waitSignal(scripted_models.settingsChanged, timeout=1_000):
        QTest.keyClick(panel.preset, Qt.Key_Home)  # back to the first entry, the model's own
    assert panel.preset.currentText() == MODEL_DEFAULTS and panel.temperature.value() == 1.0
    assert shown_sources(panel)["temperature"] == "model"


def test_a_preset_chosen_says_so_beside_every_value(panel, qtbot, scripted_models):
    load(qtbot, scripted_models, "author.gguf")
    panel.preset.setFocus()
    with qtbot.waitSignal(scripted_models.settingsChanged, timeout=1_000):
        QTest.keyClick(panel.preset, Qt.Key_End)  # Custom, the last entry, changes nothing
        QTest.keyClick(panel.preset, Qt.Key_Up)  # Creative
    assert panel.preset.currentText() == "Creative"
    assert set(shown_sources(panel).values()) == {"preset"}
    assert panel.top_k.accessibleDescription() == "Value from the Creative preset."
    panel.top_k.setFocus()
    QTest.keyClick(panel.top_k, Qt.Key_Down)
    assert shown_sources(panel)["top_k"] == "yours" and shown_sources(panel)["temperature"] == "preset"


def test_stored_settings_are_the_users_even_for_a_model_with_defaults(qtbot, scripted_models, tmp_path):
    stored = settings_at(tmp_path / "hearth.ini")
    stored.save_model_settings("author.gguf", ModelSettings(sampling=PRESETS["Precise"]))
    stored.sync()
    load(qtbot, scripted_models, "author.gguf")
    assert scripted_models.settings.sampling == PRESETS["Precise"]


def test_the_sources_read_at_4_5_to_1_and_fit_the_side_panel(panel, qtbot, scripted_models, qapp):
    load(qtbot, scripted_models, "author.gguf")
    panel.resize(285, 640)  # the side panel's width in a 1024 × 640 window
    qtbot.wait(20)
    content = panel.findChild(QScrollArea).widget()
    assert content.width() <= panel.findChild(QScrollArea).viewport().width()  # nothing cut off at the right
    whole = QComboBox()  # what a box needs to show "Model's defaults" whole
    whole.addItem(MODEL_DEFAULTS)
    assert panel.preset.width() >= whole.sizeHint().width()
    previous = qapp.palette()
    try:
        for palette in (QStyleFactory.create("Fusion").standardPalette(), dark_palette()):
            qapp.setPalette(palette)
            qtbot.wait(10)
            for label in panel.sources.labels.values():
                text = label.palette().color(QPalette.WindowText)
                assert contrast(text, palette.color(QPalette.Window)) >= 4.5, label.text()
                assert text != palette.color(QPalette.WindowText)  # muted: quieter than the names
    finally:
        qapp.setPalette(previous)
    interface = QAccessible.queryAccessibleInterface(panel.temperature)
    assert "model's defaults" in interface.text(QAccessible.Text.Description)


def test_hearths_defaults_chosen_for_a_model_with_its_own_are_kept(panel, qtbot, scripted_models):
    load(qtbot, scripted_models, "author.gguf")
    panel.preset.setFocus()
    with qtbot.waitSignal(scripted_models.settingsChanged, timeout=1_000):
        QTest.keyClick(panel.preset, Qt.Key_Down)  # Precise
    with qtbot.waitSignal(scripted_models.settingsChanged, timeout=1_000):
        QTest.keyClick(panel.preset, Qt.Key_Down)  # Balanced: stored, though all Hearth's defaults
    load(qtbot, scripted_models, "author.gguf")
    assert panel.preset.currentText() == "Balanced" and scripted_models.settings.sampling == PRESETS["Balanced"]
