"""The model list marks vision models: the real picker over a folder holding the tiny vision
pair, a model whose projector was made for another model, and a text model; its Images column
read as a sighted user and a screen reader meet it, in light and in dark."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QStyleFactory
from support.model_files.tiny_gguf import write_tiny_gguf
from support.model_files.tiny_vision import ensure_tiny_vision_pair, write_tiny_projector
from support.picker_scan import make_picker
from support.settings_file import ini_file

from app.owners.settings import EXTRA_FOLDERS
from app.ui.models.picker import Column
from app.ui.models.table import PROJECTOR_PROBLEM, READS_IMAGES, summary
from app.ui.widgets.colors import contrast
from app.ui.window.appearance import dark_palette


def _link(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        target.symlink_to(source)
    return target


@pytest.fixture
def folder(tmp_path) -> Path:
    """A vision model with its projector, one with a projector made for another model, a text model."""
    pair = ensure_tiny_vision_pair()
    models = tmp_path / "models"
    _link(pair.model, models / "tiny-vision-Q4_K_M.gguf")
    _link(pair.projector, models / "mmproj-tiny-vision-f16.gguf")
    _link(pair.model, models / "odd-vision-Q4_K_M.gguf")
    write_tiny_projector(models / "mmproj-odd-vision-f16.gguf", projection_dim=48)
    write_tiny_gguf(models / "text.gguf")
    return models


def picker_over(qtbot, tmp_path, folder):
    settings = ini_file(tmp_path / "picker.ini")
    settings.setValue(EXTRA_FOLDERS, [str(folder)])
    picker = make_picker(qtbot, settings)
    picker.resize(1400, 500)
    picker.show()
    qtbot.waitExposed(picker)
    picker.view.fit_columns()
    return picker


def images_cell(picker, path: Path, role=Qt.DisplayRole):
    row = picker.model.row_of(path)
    assert row is not None, f"{path.name} is not listed"
    return picker.model.index(row, Column.IMAGES).data(role)


def test_vision_models_read_images_and_projectors_are_no_rows(qtbot, tmp_path, folder):
    picker = picker_over(qtbot, tmp_path, folder)
    listed = {entry.path.name for entry in picker.model.entries() if entry.path.parent == folder}
    assert listed == {"tiny-vision-Q4_K_M.gguf", "odd-vision-Q4_K_M.gguf", "text.gguf"}  # no mmproj rows

    vision, odd, text = (folder / name for name in ("tiny-vision-Q4_K_M.gguf", "odd-vision-Q4_K_M.gguf", "text.gguf"))
    assert images_cell(picker, vision) == READS_IMAGES == "Reads images"
    assert "mmproj-tiny-vision-f16.gguf" in images_cell(picker, vision, Qt.ToolTipRole)
    assert images_cell(picker, vision, Qt.AccessibleTextRole) == "Reads images"
    name_cell = picker.model.index(picker.model.row_of(vision), Column.NAME)
    assert name_cell.data(Qt.AccessibleTextRole).endswith(", reads images")
    assert "reads images" in summary(picker.model.entry(picker.model.row_of(vision)))

    assert images_cell(picker, odd) == PROJECTOR_PROBLEM
    why = images_cell(picker, odd, Qt.ToolTipRole)
    assert "mmproj-odd-vision-f16.gguf is not the projector of odd-vision-Q4_K_M.gguf" in why
    assert "48 values wide" in why and "embedding length is 64" in why
    assert images_cell(picker, odd, Qt.AccessibleTextRole).startswith("Can't read images: ")

    assert images_cell(picker, text) == "" and images_cell(picker, text, Qt.ToolTipRole) is None
    assert picker.model.headerData(Column.IMAGES, Qt.Horizontal) == "Images"
    assert not picker.view.isColumnHidden(Column.IMAGES)


def test_the_images_column_is_shown_only_where_a_row_fills_it(qtbot, tmp_path):
    write_tiny_gguf(tmp_path / "text-only" / "text.gguf")
    picker = picker_over(qtbot, tmp_path, tmp_path / "text-only")
    assert picker.view.isColumnHidden(Column.IMAGES)
    assert not picker.view.isColumnHidden(Column.SIZE)  # a column that has room stays


def test_sorting_by_the_images_column_brings_vision_models_together(qtbot, tmp_path, folder):
    picker = picker_over(qtbot, tmp_path, folder)
    picker.view.sortByColumn(Column.IMAGES, Qt.DescendingOrder)
    shown = [picker.proxy.index(row, Column.IMAGES).data() for row in range(picker.proxy.rowCount())]
    assert shown[0] == READS_IMAGES


@pytest.mark.parametrize("appearance", ["light", "dark"])
def test_the_projector_problem_is_red_and_readable(qtbot, tmp_path, folder, appearance, qapp):
    previous = qapp.palette()
    qapp.setPalette(dark_palette() if appearance == "dark" else QStyleFactory.create("Fusion").standardPalette())
    try:
        picker = picker_over(qtbot, tmp_path, folder)
        colour = images_cell(picker, folder / "odd-vision-Q4_K_M.gguf", Qt.ForegroundRole)
        palette = qapp.palette()
        for background in (QPalette.Base, QPalette.AlternateBase, QPalette.Window):
            assert contrast(colour, palette.color(background)) >= 4.5
        assert images_cell(picker, folder / "tiny-vision-Q4_K_M.gguf", Qt.ForegroundRole) is None  # the text's own
    finally:
        qapp.setPalette(previous)
