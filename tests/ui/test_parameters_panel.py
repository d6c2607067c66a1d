"""The parameters panel: every control round-trips, presets, ranges, reload notice, per-model memory.

The panel is a view of a ModelSession; its models load on scripted backends (the panel's job is
showing and editing settings, not generating)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QScrollArea, QStyleFactory
from support.settings_file import ini_file, settings_at
from support.widget_walk import accessible_name, interactive_widgets, unnamed_widgets

from app.engine.options import MIN_CONTEXT
from app.engine.sampling import PRESETS, Drafting, SamplingParams
from app.engine.types import ModelSettings, OffloadSupport
from app.owners.bridge import EngineBridge
from app.owners.model_session import ModelSession
from app.owners.settings import Settings
from app.ui.parameters.panel import CUSTOM, NO_GPU_REASON, PRESET_FIELDS, ParametersPanel
from app.ui.parameters.stop_strings import format_stop_strings, parse_stop_strings
from app.ui.widgets.colors import contrast
from app.ui.window.appearance import dark_palette

EVERY_FIELD_CHANGED = SamplingParams(
    temperature=1.35, top_k=7, top_p=0.81, min_p=0.12, repeat_penalty=1.25, repeat_last_n=300,
    presence_penalty=-0.4, frequency_penalty=1.5, max_tokens=777, seed=4_000_000_000,
    stop=("\n\nUser:", "a, b", " padded ", "back\\slash", "\t", "###"), logit_bias={5: -100.0},
    draft=Drafting.NONE,
)


@pytest.fixture
def panel(qtbot, scripted_models):
    widget = ParametersPanel(scripted_models)
    qtbot.addWidget(widget)
    return widget


@pytest.fixture
def settings(tmp_path):
    """The settings file the scripted_models fixture keeps its models' settings in."""
    return ini_file(tmp_path / "hearth.ini")


def read_model_settings(settings: QSettings, key: str) -> ModelSettings:
    settings.sync()
    return settings_at(settings.fileName()).model_settings(key)


def load_model(qtbot, models: ModelSession, name: str) -> None:
    with qtbot.waitSignal(models.modelLoaded, timeout=5_000):
        models.load(Path("/models") / name)


def test_every_parameter_round_trips(panel, qtbot):
    assert all(getattr(EVERY_FIELD_CHANGED, f) != getattr(SamplingParams(), f)
               for f in SamplingParams.__dataclass_fields__), "the sample must change every field"
    with qtbot.assertNotEmitted(panel._models.settingsChanged):  # set by code, not by the user
        panel.set_params(EVERY_FIELD_CHANGED)
    assert panel.params() == EVERY_FIELD_CHANGED
    panel.set_params(SamplingParams())
    assert panel.params() == SamplingParams()


def test_the_seed_is_random_unless_fixed(panel):
    panel.set_params(SamplingParams(seed=42))
    assert panel.seed.isEnabled() and panel.params().seed == 42
    panel.fixed_seed.setChecked(False)
    assert not panel.seed.isEnabled() and panel.params().seed is None


@pytest.mark.parametrize("stops", [
    (), ("###",), ("\n\nUser:", "###"), ("a, b",), (" leading", "trailing ", "  "), ("C:\\path\\n",),
    ("tab\there", "line\nbreak", "\\,"),
])
def test_stop_strings_round_trip_through_the_text_field(stops):
    assert parse_stop_strings(format_stop_strings(stops)) == stops


def test_stop_string_text_as_a_user_types_it():
    assert parse_stop_strings("\\n\\nUser:, ###") == ("\n\nUser:", "###")
    assert parse_stop_strings(" a ,  , b,") == ("a", "b")  # padding trimmed, empties dropped
    assert parse_stop_strings("1\\,000") == ("1,000",)
    assert parse_stop_strings("end\\") == ("end\\",)  # a lone backslash is just a backslash
    assert format_stop_strings(("\n\nUser:", "###")) == "\\n\\nUser:, ###"


def test_choosing_a_preset_applies_it_and_keeps_the_users_own_fields(panel, qtbot):
    panel.set_params(SamplingParams(max_tokens=300, stop=("###",), seed=9))
    for name, preset in PRESETS.items():
        index = panel.preset.findText(name)
        with qtbot.waitSignal(panel._models.settingsChanged) as changed:
            panel.preset.setCurrentIndex(index)
            panel.preset.activated.emit(index)
        params = changed.args[0].sampling
        assert params == panel.params()
        assert all(getattr(params, f) == getattr(preset, f) for f in PRESET_FIELDS), name
        assert (params.max_tokens, params.stop, params.seed) == (300, ("###",), 9)
        assert panel.preset.currentText() == name


def test_editing_a_value_switches_to_custom_and_back(panel, qtbot):
    panel.set_params(PRESETS["Creative"])
    assert panel.preset.currentText() == "Creative"
    with qtbot.waitSignal(panel._models.settingsChanged) as changed:
        panel.temperature.setValue(0.33)
    assert changed.args[0].sampling.temperature == 0.33
    assert panel.preset.currentText() == CUSTOM
    panel.temperature.setValue(PRESETS["Creative"].temperature)
    assert panel.preset.currentText() == "Creative"
    panel.set_params(SamplingParams())
    assert panel.preset.currentText() == "Balanced"


def test_the_controls_cannot_leave_the_valid_ranges(panel):
    spins = [panel.temperature, panel.top_k, panel.top_p, panel.min_p, panel.repeat_penalty,
             panel.repeat_last_n, panel.presence_penalty, panel.frequency_penalty, panel.max_tokens]
    panel.fixed_seed.setChecked(True)
    for end in ("minimum", "maximum"):
        for spin in [*spins, panel.seed]:
            spin.setValue(getattr(spin, end)())
        panel.params()  # SamplingParams validates: this raises if any extreme were invalid
    panel.top_p.setValue(0.0)
    panel.repeat_penalty.setValue(-3.0)
    panel.temperature.setValue(99.0)
    params = panel.params()
    assert params.top_p > 0 and params.repeat_penalty > 0 and params.temperature == 5.0
    assert panel.seed.maximum() == 2**32 - 1


def test_every_control_explains_itself(panel):
    controls = [panel.preset, panel.temperature, panel.top_k, panel.top_p, panel.min_p, panel.repeat_penalty,
                panel.repeat_last_n, panel.presence_penalty, panel.frequency_penalty, panel.max_tokens,
                panel.stop, panel.system_prompt_edit, panel.n_ctx, panel.gpu_layers, panel.cpu_threads]
    for control in controls:
        assert len(control.toolTip()) > 40, control
    assert "comma" in panel.stop.toolTip() and "\\n" in panel.stop.toolTip()


def test_gpu_layers_are_disabled_with_the_reason_without_offload(panel, qtbot, gemma_info):
    load_model(qtbot, panel._models, gemma_info.path.name)
    panel.set_offload_support(OffloadSupport("CPU", False))
    assert not panel.gpu_layers.isEnabled()
    assert not panel.gpu_reason.isHidden() and panel.gpu_reason.text() == NO_GPU_REASON
    assert "no GPU offload" in NO_GPU_REASON
    panel.set_offload_support(OffloadSupport("CUDA", False, "CUDA build; no NVIDIA driver found"))
    assert not panel.gpu_layers.isEnabled()
    assert panel.gpu_reason.text() == "The model runs on the CPU (CUDA build; no NVIDIA driver found)."
    assert not panel.gpu_reason.isHidden()
    panel.set_offload_support(OffloadSupport("CUDA", True))
    assert panel.gpu_layers.isEnabled() and panel.gpu_reason.isHidden()
    assert panel.gpu_layers.maximum() == gemma_info.block_count + 1
    assert panel.n_ctx.maximum() == gemma_info.context_length


def test_reload_notice_only_for_context_length_gpu_layers_and_threads(panel, qtbot, gemma_info):
    models = panel._models
    load_model(qtbot, models, gemma_info.path.name)
    assert panel.reload_notice.isHidden()

    with qtbot.waitSignal(models.settingsChanged) as changed:
        panel.system_prompt_edit.setPlainText("Be brief.")
    assert changed.args[0].system_prompt == "Be brief."
    panel.temperature.setValue(1.2)
    assert panel.reload_notice.isHidden()

    with qtbot.waitSignal(models.settingsChanged) as changed:
        panel.n_ctx.setValue(8192)
    assert changed.args[0].n_ctx == 8192
    assert not panel.reload_notice.isHidden()
    with qtbot.waitSignal(models.loadStarted):
        panel.reload_button.click()
    qtbot.waitUntil(lambda: models.loading is None)

    panel.n_ctx.setValue(0)  # not what the model was reloaded with
    assert not panel.reload_notice.isHidden()
    panel.n_ctx.setValue(8192)  # back to what it was reloaded with
    assert panel.reload_notice.isHidden()
    panel.gpu_layers.setValue(4)
    assert not panel.reload_notice.isHidden()

    load_model(qtbot, models, gemma_info.path.name)  # reloaded with the new values
    assert panel.reload_notice.isHidden() and panel.gpu_layers.value() == 4

    assert panel.cpu_threads.value() == 0 and panel.cpu_threads.text() == "Automatic"
    with qtbot.waitSignal(models.settingsChanged) as changed:
        panel.cpu_threads.setValue(1)
    assert changed.args[0].cpu_threads == 1 and not panel.reload_notice.isHidden()


def test_the_context_length_refuses_under_64_tokens_as_the_command_line_does(panel, qtbot, gemma_info):
    models = panel._models
    load_model(qtbot, models, gemma_info.path.name)
    panel.show()
    panel.n_ctx.setValue(2048)
    panel.n_ctx.setFocus()
    for typed, kept in (("10", 2048), ("63", 2048), (str(MIN_CONTEXT), MIN_CONTEXT), ("0", 0)):
        panel.n_ctx.lineEdit().selectAll()
        QTest.keyClicks(panel.n_ctx, typed)
        QTest.keyClick(panel.n_ctx, Qt.Key.Key_Return)
        assert panel.n_ctx.value() == kept, typed
        assert models.settings.n_ctx == (kept or None), typed
    assert panel.n_ctx.text() == "Automatic"

    panel.n_ctx.setValue(1050)  # a step down would land on 26 tokens: Automatic instead
    panel.n_ctx.stepBy(-1)
    assert panel.n_ctx.value() == 0 and models.settings.n_ctx is None


def test_model_settings_are_remembered_per_model(qtbot, panel, script, tmp_path, gemma_info):
    first, models = panel, panel._models
    load_model(qtbot, models, "gemma.gguf")
    first.set_params(EVERY_FIELD_CHANGED)
    first.temperature.setValue(0.4)  # a user edit saves everything
    first.system_prompt_edit.setPlainText("You are a pirate.\nSpeak like one.")
    first.n_ctx.setValue(2048)
    first.gpu_layers.setValue(0)
    first.cpu_threads.setValue(1)
    load_model(qtbot, models, "other.gguf")  # other models keep their own
    first.top_k.setValue(3)

    reopened = ini_file(tmp_path / "hearth.ini")
    bridge = EngineBridge(script.open)
    try:
        second = ParametersPanel(ModelSession(bridge, Settings(reopened)))
        qtbot.addWidget(second)
        load_model(qtbot, second._models, "gemma.gguf")
        assert second.params() == EVERY_FIELD_CHANGED.with_changes(temperature=0.4)
        assert second.system_prompt() == "You are a pirate.\nSpeak like one."
        assert second.model_settings() == ModelSettings(
            sampling=EVERY_FIELD_CHANGED.with_changes(temperature=0.4),
            system_prompt="You are a pirate.\nSpeak like one.", n_ctx=2048, gpu_layers=0,
            cpu_threads=1, template_override=None,
        )
        assert read_model_settings(reopened, "gemma.gguf").n_ctx == 2048

        load_model(qtbot, second._models, "other.gguf")
        assert second.params() == SamplingParams(top_k=3)
        assert second.system_prompt() == "" and second.model_settings().n_ctx is None

        load_model(qtbot, second._models, "never-seen.gguf")
        assert second.params() == SamplingParams() and second.model_settings().gpu_layers is None
        assert second.gpu_layers.text() == "Auto"
        assert second.model_settings().cpu_threads is None
    finally:
        bridge.shutdown()


def test_sampling_works_before_any_model_is_loaded(panel, qtbot):
    assert not any(field.isEnabled() for field in (panel.system_prompt_edit, panel.n_ctx, panel.gpu_layers,
                                                   panel.cpu_threads, panel.template_button))
    assert panel.model_name.isEnabled() and panel.model_name.text() == "No model loaded"  # readable, not greyed
    assert panel.edit_template() is None
    with qtbot.waitSignal(panel._models.settingsChanged) as changed:
        panel.temperature.setValue(1.9)
    assert changed.args[0].sampling.temperature == 1.9


def test_a_damaged_stored_entry_falls_back_to_defaults(settings):
    settings.setValue("model_settings/x.gguf/sampling", json.dumps({"temperature": 99}))
    settings.setValue("model_settings/y.gguf/sampling", "{not json")
    assert read_model_settings(settings, "x.gguf").sampling == SamplingParams()
    assert read_model_settings(settings, "y.gguf").sampling == SamplingParams()


def test_the_template_editor_sets_the_models_override(panel, qtbot, settings, gemma_info):
    load_model(qtbot, panel._models, gemma_info.path.name)
    assert "gemma" in panel.template_label.text()
    editor = panel.edit_template()
    custom = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
    editor.source_edit.setPlainText(custom)
    qtbot.waitUntil(lambda: editor.rendered_prompt() is not None and "[user]" in editor.rendered_prompt())
    with qtbot.waitSignal(panel._models.settingsChanged) as changed:
        editor.save_button.click()
    assert changed.args[0].template_override == custom
    assert panel.template_label.text() == "Your edited one"
    assert panel.reload_notice.isHidden()
    assert read_model_settings(settings, gemma_info.path.name).template_override == custom

    editor = panel.edit_template()
    assert editor.source() == custom
    editor.reset_button.click()
    with qtbot.waitSignal(panel._models.settingsChanged) as changed:
        editor.save_button.click()
    assert changed.args[0].template_override is None
    assert read_model_settings(settings, gemma_info.path.name).template_override is None


def settle(qtbot) -> None:
    """Let the layouts run (they are posted) before sizes are read."""
    qtbot.wait(20)


def label_fits(label) -> bool:
    return label.isVisible() and label.heightForWidth(label.width()) <= label.height()


@pytest.mark.parametrize("width", [300, 340, 380, 440, 520])
def test_the_gpu_note_and_the_reload_notice_are_never_cut_off(panel, qtbot, gemma_info, width):
    load_model(qtbot, panel._models, gemma_info.path.name)
    panel.set_offload_support(OffloadSupport("CPU", False))
    panel.resize(width, 480)  # short enough that the panel scrolls: the note was cut off in there
    panel.show()
    qtbot.waitExposed(panel)
    # The scroll area lays out in passes (a scroll bar appears, the text wraps again): wait for
    # them, then check; a label that stays cut off fails here.
    qtbot.waitUntil(lambda: label_fits(panel.gpu_reason) and label_fits(panel.template_label), timeout=2_000)

    qtbot.keyClick(panel.cpu_threads, Qt.Key_Up)  # Automatic -> 1 thread, as a user does: the notice appears
    assert not panel.reload_notice.isHidden()
    settle(qtbot)
    qtbot.waitUntil(lambda: all(label_fits(label) for label in (panel.gpu_reason, panel.reload_label,
                                                                panel.template_label)), timeout=2_000)
    for label in (panel.gpu_reason, panel.reload_label, panel.template_label):
        assert label_fits(label), (label.text(), label.width(), label.height(), label.heightForWidth(label.width()))
    content = panel.findChild(QScrollArea).widget()
    assert content.width() <= panel.width()  # nothing cut off at the right edge either


def test_every_field_has_a_name_a_screen_reader_says(panel, qtbot, gemma_info):
    load_model(qtbot, panel._models, gemma_info.path.name)
    panel.show()
    panel.cpu_threads.setValue(3)  # the reload notice and its button shown too
    assert unnamed_widgets(panel) == []
    named = {accessible_name(w) for w in interactive_widgets(panel)}
    assert panel.preset.accessibleName() == "Preset"  # Qt reads a combo box by its current text on Linux
    assert {"Temperature", "Frequency penalty", "Max length", "Stop at", "Fixed seed", "System prompt",
            "Context length", "GPU layers", "CPU threads", "Edit chat template", "Reload now"} <= named
    panel.fixed_seed.click()
    assert accessible_name(panel.seed) == "Seed"  # no longer read as the group's title
    assert accessible_name(panel.system_prompt_edit) == "System prompt"  # not the box's title, "Model"


def test_muted_notes_read_at_4_5_to_1_in_light_and_dark(panel, qtbot, gemma_info, qapp):
    load_model(qtbot, panel._models, gemma_info.path.name)
    panel.set_offload_support(OffloadSupport("CPU", False))
    panel.show()
    previous = qapp.palette()
    try:
        for palette in (QStyleFactory.create("Fusion").standardPalette(), dark_palette()):
            qapp.setPalette(palette)
            settle(qtbot)
            for label in (panel.gpu_reason, panel.model_name):
                text = label.palette().color(QPalette.WindowText)
                assert contrast(text, palette.color(QPalette.Window)) >= 4.5, label.text()  # "gray" was 3.4:1
                assert text != palette.color(QPalette.WindowText)  # still muted
    finally:
        qapp.setPalette(previous)


def test_unloading_shows_no_model_and_waits_for_one(panel, qtbot, gemma_info):
    models = panel._models
    load_model(qtbot, models, gemma_info.path.name)
    assert panel.n_ctx.isEnabled() and panel.model_name.text() != "No model loaded"
    with qtbot.waitSignal(models.modelUnloaded, timeout=5_000):
        models.unload()
    assert panel.model_name.text() == "No model loaded"
    assert not panel.n_ctx.isEnabled() and not panel.template_button.isEnabled()
    assert panel.temperature.isEnabled()  # sampling still works before the next model
