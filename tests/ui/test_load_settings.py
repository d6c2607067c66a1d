"""The Model section's load options and live memory plan (load_settings.py in the parameters
panel): the options reach the model's settings and ask for a reload, a combination llama.cpp
refuses is explained and not applied, the plan follows the context length the user types and
offers the largest one that fits.

Models load on scripted backends, from the real default model's path: the plan reads that
file's header (the panel's job here is showing and editing, not generating). This machine's
free RAM cannot be changed from a test, so where a verdict must change, machine.free_ram is
replaced by a smaller figure.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.engine import machine
from app.engine.load_checks import load_options_problem
from app.engine.types import FlashAttention, KvCacheType, LoadOptions
from app.ui.parameters.panel import ParametersPanel
from app.ui.widgets.colors import Tone, tone_of

MIB = 1024**2
FREE_RAM = 600 * MIB  # Gemma 3 270M plans ~0.4 GB at 2k tokens and ~0.75 GB at 32k


@pytest.fixture
def panel(qtbot, scripted_models, gemma_info):
    widget = ParametersPanel(scripted_models)
    qtbot.addWidget(widget)
    widget.resize(360, 900)
    widget.show()
    with qtbot.waitSignal(scripted_models.modelLoaded, timeout=5_000):
        scripted_models.load(gemma_info.path)
    return widget


def test_the_load_options_change_the_models_settings_and_apply_on_reload(panel, qtbot, script):
    models, options = panel._models, panel.load_settings
    assert panel.reload_notice.isHidden()
    assert options.flash_attn.currentText() == "Auto" and options.kv_type.currentText() == "f16"

    QTest.keyClick(options.flash_attn, Qt.Key.Key_Down)  # Auto → On
    assert models.settings.flash_attn is FlashAttention.ON
    assert not panel.reload_notice.isHidden()
    QTest.keyClick(options.kv_type, Qt.Key.Key_Down)  # f16 → q8_0, for K and V
    assert (models.settings.kv_type_k, models.settings.kv_type_v) == (KvCacheType.Q8_0, KvCacheType.Q8_0)
    QTest.keyClick(options.use_mmap, Qt.Key.Key_Space)
    QTest.keyClick(options.use_mlock, Qt.Key.Key_Space)
    assert not models.settings.use_mmap and models.settings.use_mlock

    with qtbot.waitSignal(models.modelLoaded, timeout=5_000):
        panel.reload_button.click()
    loaded_with = script.loads[-1][1]
    assert (loaded_with.flash_attn, loaded_with.kv_type_k, loaded_with.kv_type_v) == (
        FlashAttention.ON, KvCacheType.Q8_0, KvCacheType.Q8_0)
    assert not loaded_with.use_mmap and loaded_with.use_mlock
    assert panel.reload_notice.isHidden()
    assert options.flash_attn.currentText() == "On" and options.kv_type.currentText() == "q8_0"


def test_a_quantized_cache_without_flash_attention_is_explained_and_not_applied(panel, qtbot):
    models, options = panel._models, panel.load_settings
    kept = []
    models.settingsChanged.connect(kept.append)
    QTest.keyClick(options.kv_type, Qt.Key.Key_Down)  # q8_0: loads with Auto
    QTest.keyClick(options.flash_attn, Qt.Key.Key_End)  # Off: llama.cpp would refuse it
    problem = load_options_problem(LoadOptions(flash_attn=FlashAttention.OFF, kv_type_k=KvCacheType.Q8_0,
                                               kv_type_v=KvCacheType.Q8_0))
    assert problem and not options.problem.isHidden() and problem in options.problem.text()
    assert tone_of(options.problem) is Tone.ERROR
    assert problem in options.flash_attn.accessibleDescription()
    assert models.settings.flash_attn is FlashAttention.AUTO, "the refused combination is not kept"
    assert all(load_options_problem(settings.load_options()) is None for settings in kept)

    QTest.keyClick(options.flash_attn, Qt.Key.Key_Home)  # Auto again: loadable
    assert options.problem.isHidden() and models.settings.flash_attn is FlashAttention.AUTO
    assert models.settings.kv_type_v is KvCacheType.Q8_0


def test_the_plan_follows_the_context_length_the_user_types(panel, qtbot, monkeypatch):
    monkeypatch.setattr(machine, "free_ram", lambda: FREE_RAM)  # the machine's RAM can't be changed here
    QTest.keyClick(panel.load_settings.use_mmap, Qt.Key.Key_Space)  # re-plans: free RAM read again
    QTest.keyClick(panel.load_settings.use_mmap, Qt.Key.Key_Space)
    line, largest = panel.load_settings.plan_line, panel.load_settings.largest_button
    assert not panel.load_settings.plan_row.isHidden()
    before = line.text()
    assert before.startswith("Memory: ") and before.endswith("— fits") and "of 600 MiB free" in before
    assert largest.isHidden()

    panel.n_ctx.setFocus()
    panel.n_ctx.lineEdit().selectAll()
    QTest.keyClicks(panel.n_ctx, "32768")
    QTest.keyClick(panel.n_ctx, Qt.Key.Key_Return)
    assert panel._models.settings.n_ctx == 32768
    assert line.text() != before and line.text().endswith("does not fit")
    assert tone_of(line) is Tone.ERROR
    assert "KV cache" in line.toolTip() and "32,768 tokens" in line.toolTip()
    assert "\n  window checkpoints 22 MiB\n" in line.toolTip()  # a line of its own, as the others
    assert not largest.isHidden()
    assert panel.n_ctx.accessibleDescription() == line.text()

    largest.click()
    assert 4096 <= panel.n_ctx.value() < 32768
    assert panel._models.settings.n_ctx == panel.n_ctx.value()
    assert line.text().endswith("— fits") and largest.isHidden()


def test_a_quantized_cache_plans_less_memory(panel, qtbot):
    panel.n_ctx.setValue(32768)
    f16 = panel._models.memory_plan()
    QTest.keyClick(panel.load_settings.kv_type, Qt.Key.Key_Down)
    q8 = panel._models.memory_plan()
    assert q8.kv_ram < 0.6 * f16.kv_ram
    assert panel.load_settings.plan_line.text() != "" and "KV cache" in panel.load_settings.plan_line.toolTip()


def test_the_options_are_named_and_explained(panel):
    options = panel.load_settings
    for field, name in ((options.flash_attn, "Flash attention"), (options.kv_type, "KV cache type"),
                        (options.use_mmap, "Map the file (mmap)"), (options.use_mlock, "Lock in RAM (mlock)")):
        assert (field.accessibleName() or field.text()) == name
        assert len(field.toolTip()) > 60
    assert "0.54" in options.kv_type.toolTip() and "half" in options.kv_type.toolTip()
    assert options.plan_line.accessibleName() == "Memory plan"
