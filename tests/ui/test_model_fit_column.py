"""The model list's fit column: each listed file planned at its saved settings against the
memory free now (ModelSession.memory_plan), its numbers in the tooltip; a server's model has
none. This machine's free RAM cannot be changed from a test: where the verdict must change,
machine.free_ram is replaced by a smaller figure."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from support.model_files.tiny_gguf import write_tiny_gguf
from support.picker_scan import SCAN_TIMEOUT_MS
from support.settings_file import settings_at

from app.engine import machine
from app.engine.types import LocalModel
from app.ui.models.picker import ModelPicker
from app.ui.models.table import SORT_ROLE, Column

MIB = 1024**2


def fit_cell(picker: ModelPicker, path, role=Qt.DisplayRole):
    row = picker.model.row_of(path)
    assert row is not None, f"{path} is not listed"
    return picker.model.index(row, Column.FIT).data(role)


def test_the_fit_column_plans_a_tiny_file_and_the_default_model(qtbot, tmp_path, scripted_models, gemma_path,
                                                                  monkeypatch):
    settings = settings_at(tmp_path / "picker.ini")
    tiny = write_tiny_gguf(tmp_path / "models" / "tiny.gguf")
    settings.extra_files = [tiny, gemma_path]
    picker = ModelPicker(settings)
    qtbot.addWidget(picker)
    with qtbot.waitSignal(picker.scanFinished, timeout=SCAN_TIMEOUT_MS):
        pass
    assert fit_cell(picker, gemma_path) == "", "no verdict until the window says how to plan"

    started = time.perf_counter()
    picker.set_planner(lambda path: scripted_models.memory_plan(LocalModel(path)))
    planned_in = time.perf_counter() - started
    assert fit_cell(picker, tiny) == "fits" and fit_cell(picker, gemma_path) == "fits"
    tip = fit_cell(picker, gemma_path, Qt.ToolTipRole)
    assert "RAM:" in tip and "KV cache" in tip and "weights" in tip
    assert planned_in < 1.0, f"planning the list took {planned_in:.2f} s"  # shapes were read by the scan

    monkeypatch.setattr(machine, "free_ram", lambda: 100 * MIB)  # the machine's RAM can't be changed here
    picker.refresh_fits()
    assert fit_cell(picker, gemma_path) == "does not fit" and fit_cell(picker, tiny) == "fits"
    assert fit_cell(picker, gemma_path, SORT_ROLE) > fit_cell(picker, tiny, SORT_ROLE)
    assert fit_cell(picker, gemma_path, Qt.ForegroundRole) is not None  # the error colour
    assert picker.model.headerData(Column.FIT, Qt.Horizontal) == "Fit"
