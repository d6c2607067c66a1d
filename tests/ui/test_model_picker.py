"""The model picker on real files: the real Gemma, a tiny GGUF written here, and garbage."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory, QStyleOptionViewItem
from support.model_files.tiny_gguf import write_tiny_gguf
from support.picker_scan import make_picker, rescanned
from support.settings_file import ini_file
from support.widget_walk import accessible_name, unnamed_widgets

from app.common.units import byte_size
from app.library.scan import ModelEntry
from app.owners.settings import EXTRA_FILES as EXTRA_FILES_KEY
from app.owners.settings import EXTRA_FOLDERS as EXTRA_FOLDERS_KEY
from app.ui.models.picker import Column, ModelPicker
from app.ui.models.table import FILE_ROLE, format_parameters
from app.ui.widgets.colors import contrast
from app.ui.window.appearance import dark_palette


@pytest.fixture
def settings(tmp_path):
    return ini_file(tmp_path / "hearth.ini")


def write_garbage(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"<html>Not found</html>" * 20)
    return path


def row_of(picker, path) -> int:
    row = picker.model.row_of(path)
    assert row is not None, f"{path} is not listed"
    return row


def cell(picker, row, column, role=Qt.DisplayRole):
    return picker.model.data(picker.model.index(row, column), role)


def double_click(qtbot, picker, row):
    picker.resize(900, 400)
    picker.show()
    qtbot.waitExposed(picker)
    rect = picker.view.visualRect(picker.proxy.mapFromSource(picker.model.index(row, Column.NAME)))
    # A real double-click is a click and then a double-click event; QTest's mouseDClick alone
    # sends only the second half, which item views ignore.
    qtbot.mouseClick(picker.view.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.mouseDClick(picker.view.viewport(), Qt.LeftButton, pos=rect.center())


def test_lists_the_real_gemma_with_every_column(qtbot, settings, gemma_path):
    picker = make_picker(qtbot, settings)
    row = row_of(picker, gemma_path)
    columns = {column: cell(picker, row, column) for column in Column}
    assert columns == {
        Column.NAME: "Gemma 3 270m",
        Column.ARCHITECTURE: "gemma3",
        Column.PARAMETERS: "268M",
        Column.QUANTIZATION: "Q4_K_M",
        Column.SIZE: "253 MB",
        Column.CONTEXT: "32,768",
        Column.TEMPLATE: "fallback",
        Column.FOLDER: "Hearth",
        Column.FIT: "",  # planned once the window gives a planner (test_model_fit_column.py)
        Column.IMAGES: "",  # a text model (vision models: tests/library/test_vision_model_list.py)
    }
    assert "gemma" in cell(picker, row, Column.TEMPLATE, Qt.ToolTipRole)
    assert picker.model.headerData(Column.PARAMETERS, Qt.Horizontal) == "Params"


def test_a_model_with_its_own_template_shows_a_check(qtbot, settings, tmp_path):
    tiny = write_tiny_gguf(tmp_path / "models" / "tiny.gguf")
    settings.setValue(EXTRA_FOLDERS_KEY, [str(tmp_path / "models")])
    picker = make_picker(qtbot, settings)
    row = row_of(picker, tiny)
    assert cell(picker, row, Column.NAME) == "Tiny Test"
    assert cell(picker, row, Column.TEMPLATE) == "✓"
    assert cell(picker, row, Column.CONTEXT) == "2,048"
    assert cell(picker, row, Column.FOLDER) == str(tmp_path / "models")


def test_a_corrupt_file_is_listed_greyed_with_its_reason_and_cannot_be_chosen(qtbot, settings, tmp_path):
    broken = write_garbage(tmp_path / "models" / "broken.gguf")
    settings.setValue(EXTRA_FOLDERS_KEY, [str(tmp_path / "models")])
    picker = make_picker(qtbot, settings)
    row = row_of(picker, broken)
    assert cell(picker, row, Column.NAME) == "broken.gguf"
    assert "not a GGUF model file" in cell(picker, row, Column.NAME, Qt.ToolTipRole)
    assert cell(picker, row, Column.NAME, Qt.ForegroundRole) is not None  # greyed
    assert "1 model, 1 that can't be used" in picker.status_label.text()

    picker.view.selectRow(row)
    assert not picker.load_button.isEnabled()
    assert "not a GGUF model file" in picker.details.text()
    with qtbot.assertNotEmitted(picker.modelChosen):
        double_click(qtbot, picker, row)
        picker.load_button.click()


def test_double_click_chooses_a_model(qtbot, settings, gemma_path):
    picker = make_picker(qtbot, settings)
    row = row_of(picker, gemma_path)
    with qtbot.waitSignal(picker.modelChosen) as chosen:
        double_click(qtbot, picker, row)
    assert chosen.args == [gemma_path]


def test_load_button_chooses_the_selected_model(qtbot, settings, gemma_path):
    picker = make_picker(qtbot, settings)
    picker.view.selectRow(row_of(picker, gemma_path))
    assert picker.load_button.isEnabled()
    with qtbot.waitSignal(picker.modelChosen) as chosen:
        picker.load_button.click()
    assert chosen.args == [gemma_path]


def test_add_file_lists_that_file_only_remembers_it_and_selects_it(qtbot, settings, tmp_path):
    tiny = write_tiny_gguf(tmp_path / "downloads" / "tiny.gguf")
    neighbour = write_garbage(tmp_path / "downloads" / "neighbour.gguf")
    picker = make_picker(qtbot, settings)
    rescanned(qtbot, picker, lambda: picker.add_model_file_path(tiny))

    assert picker.model.row_of(neighbour) is None
    assert picker.view.selectionModel().selectedRows()[0].row() == row_of(picker, tiny)
    settings.sync()
    reopened = ini_file(settings.fileName())
    assert reopened.value(EXTRA_FILES_KEY) == str(tiny) or reopened.value(EXTRA_FILES_KEY) == [str(tiny)]

    # A fresh picker on the same settings lists it again; adding it twice stores it once.
    again = make_picker(qtbot, reopened)
    assert again.model.row_of(tiny) is not None
    rescanned(qtbot, again, lambda: again.add_model_file_path(tiny))
    assert len([e for e in again.entries() if e.path == tiny]) == 1


def test_add_folder_lists_its_models_and_remembers_it(qtbot, settings, tmp_path):
    folder = tmp_path / "more-models"
    tiny = write_tiny_gguf(folder / "sub" / "tiny.gguf")
    broken = write_garbage(folder / "broken.gguf")
    picker = make_picker(qtbot, settings)
    assert picker.model.row_of(tiny) is None
    rescanned(qtbot, picker, lambda: picker.add_folder_path(folder))
    assert picker.model.row_of(tiny) is not None and picker.model.row_of(broken) is not None

    settings.sync()
    reopened = make_picker(qtbot, ini_file(settings.fileName()))
    assert reopened.model.row_of(tiny) is not None


def test_rescan_finds_new_files_and_keeps_the_selection(qtbot, settings, tmp_path, gemma_path):
    folder = tmp_path / "models"
    folder.mkdir()
    settings.setValue(EXTRA_FOLDERS_KEY, [str(folder)])
    picker = make_picker(qtbot, settings)
    picker.view.selectRow(row_of(picker, gemma_path))
    tiny = write_tiny_gguf(folder / "tiny.gguf")
    rescanned(qtbot, picker, picker.rescan_button.click)
    assert picker.model.row_of(tiny) is not None
    assert picker.view.selectionModel().selectedRows()[0].row() == row_of(picker, gemma_path)


def test_set_current_marks_the_loaded_model(qtbot, settings, gemma_path):
    picker = make_picker(qtbot, settings)
    row = row_of(picker, gemma_path)
    assert cell(picker, row, Column.NAME, Qt.FontRole) is None
    picker.set_current(gemma_path)
    font = cell(picker, row, Column.NAME, Qt.FontRole)
    assert isinstance(font, QFont) and font.bold()
    assert picker.view.selectionModel().selectedRows()[0].row() == row


def test_loading_shows_progress_and_cancel(qtbot, settings, gemma_path):
    picker = make_picker(qtbot, settings)
    picker.view.selectRow(row_of(picker, gemma_path))
    picker.set_loading(0.25)
    assert not picker.loading_row.isHidden() and picker.progress.value() == 250
    assert not picker.load_button.isEnabled()
    with qtbot.waitSignal(picker.loadCancelRequested):
        picker.cancel_button.click()
    picker.set_loading(None)
    assert picker.loading_row.isHidden() and picker.load_button.isEnabled()


def test_a_load_error_is_shown_and_the_selection_stays(qtbot, settings, gemma_path):
    picker = make_picker(qtbot, settings)
    row = row_of(picker, gemma_path)
    picker.set_current(gemma_path)
    picker.view.selectRow(row)
    picker.set_loading(0.5)
    picker.show_load_error("llama.cpp could not allocate 12 GB for the context.")
    assert not picker.error_label.isHidden()
    assert "could not allocate 12 GB" in picker.error_label.text()
    assert picker.loading_row.isHidden()
    assert picker.view.selectionModel().selectedRows()[0].row() == row
    assert cell(picker, row, Column.NAME, Qt.FontRole).bold()

    with qtbot.waitSignal(picker.modelChosen):  # trying again clears the old error
        picker.load_button.click()
    assert picker.error_label.isHidden()


def test_a_narrow_panel_hides_columns_instead_of_scrolling(qtbot, settings, gemma_path):
    picker = make_picker(qtbot, settings)
    picker.show()
    qtbot.waitExposed(picker)
    picker.resize(1000, 400)
    # Every column but Images, shown only when a row is a vision model (none here).
    qtbot.waitUntil(lambda: not any(picker.view.isColumnHidden(c) for c in Column if c is not Column.IMAGES))
    picker.resize(380, 400)
    qtbot.waitUntil(lambda: picker.view.isColumnHidden(Column.FOLDER))
    assert not picker.view.isColumnHidden(Column.NAME) and not picker.view.isColumnHidden(Column.SIZE)
    picker.view.selectRow(row_of(picker, gemma_path))
    assert "Q4_K_M" in picker.details.text() and "Hearth" in picker.details.text()  # all facts, below


def test_number_formats():
    assert format_parameters(268_098_176) == "268M"
    assert format_parameters(8_030_261_248) == "8B"
    assert format_parameters(1_543_714_304) == "1.5B"
    assert format_parameters(512_000) == "512K"
    assert byte_size(253_113_024) == "253 MB"
    assert byte_size(4_920_000_000) == "4.9 GB"
    assert byte_size(2_000) == "2 KB"


def test_an_added_file_or_folder_can_be_removed_from_the_list_and_stays_on_disk(qtbot, settings, tmp_path,
                                                                              gemma_path):
    added_file = write_tiny_gguf(tmp_path / "downloads" / "tiny.gguf")
    folder = tmp_path / "more-models"
    in_folder = write_tiny_gguf(folder / "sub" / "other.gguf", name="Other")
    picker = make_picker(qtbot, settings)
    rescanned(qtbot, picker, lambda: picker.add_model_file_path(added_file))
    rescanned(qtbot, picker, lambda: picker.add_folder_path(folder))

    picker.view.selectRow(row_of(picker, gemma_path))  # found in Hearth's own folder: not removable
    assert not picker.remove_button.isEnabled()

    picker.view.selectRow(row_of(picker, in_folder))
    assert picker.remove_button.isEnabled() and str(folder) in picker.remove_button.toolTip()
    rescanned(qtbot, picker, picker.remove_button.click)
    assert picker.model.row_of(in_folder) is None and in_folder.exists()
    assert picker.model.row_of(added_file) is not None

    picker.view.selectRow(row_of(picker, added_file))
    assert "this file" in picker.remove_button.toolTip()
    rescanned(qtbot, picker, picker.remove_button.click)
    assert picker.model.row_of(added_file) is None and added_file.exists()

    settings.sync()
    reopened = make_picker(qtbot, ini_file(settings.fileName()))
    assert reopened.model.row_of(added_file) is None and reopened.model.row_of(in_folder) is None
    assert reopened.model.row_of(gemma_path) is not None


# --- the keyboard, sorting, file names, markers, contrast, Unload, names -------------------------

def shown_picker(qtbot, settings, width: int = 900) -> ModelPicker:
    picker = make_picker(qtbot, settings)
    picker.resize(width, 420)
    picker.show()
    qtbot.waitExposed(picker)
    return picker


def entry(gemma_info, name: str, path: str, size: int, parameters: int, context: int) -> ModelEntry:
    info = dataclasses.replace(gemma_info, name=name, parameter_count=parameters, context_length=context)
    return ModelEntry(Path(path), "Test", size, info, None)


def view_column(picker, column: Column) -> list[str]:
    """A column's cells as the view shows them, top to bottom."""
    proxy = picker.view.model()
    return [proxy.index(row, column).data() for row in range(proxy.rowCount())]


def test_tab_leaves_the_table_and_enter_loads_the_current_row(qtbot, settings, gemma_path):
    picker = shown_picker(qtbot, settings)
    with qtbot.waitActive(picker):
        picker.activateWindow()
    picker.view.setFocus()
    qtbot.keyClick(picker.view, Qt.Key_Home)  # the first row, by keyboard alone
    picker.view.selectRow(row_of(picker, gemma_path))
    with qtbot.waitSignal(picker.modelChosen, timeout=1000) as chosen:
        qtbot.keyClick(picker.view, Qt.Key_Return)
    assert chosen.args == [gemma_path]
    with qtbot.waitSignal(picker.modelChosen, timeout=1000):
        qtbot.keyClick(picker.view, Qt.Key_Enter)  # the keypad's Enter too

    qtbot.keyClick(picker.view, Qt.Key_Tab)
    assert QApplication.focusWidget() is picker.load_button  # out of the table, to the next step
    qtbot.keyClick(picker.load_button, Qt.Key_Backtab)
    assert QApplication.focusWidget() is picker.view


def test_any_column_sorts_by_its_real_values(qtbot, settings, gemma_info):
    picker = shown_picker(qtbot, settings, width=1200)
    picker.model.set_entries([
        entry(gemma_info, "Big", "/m/big.gguf", 4_900_000_000, 8_030_261_248, 8192),
        entry(gemma_info, "small", "/m/small.gguf", 253_000_000, 268_098_176, 32768),
        entry(gemma_info, "Mid", "/m/mid.gguf", 900_000_000, 1_543_714_304, 131072),
        ModelEntry(Path("/m/broken.gguf"), "Test", 10_000, None, "not a GGUF model file"),
    ])
    header = picker.view.horizontalHeader()

    def click_header(column: Column) -> None:
        x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
        qtbot.mouseClick(header.viewport(), Qt.LeftButton, pos=QPoint(x, header.height() // 2))

    assert view_column(picker, Column.NAME) == ["Big", "small", "Mid", "broken.gguf"]  # the scan's order
    click_header(Column.SIZE)
    assert view_column(picker, Column.SIZE) == ["10 KB", "253 MB", "900 MB", "4.9 GB"]  # not "10 KB" < "253 MB" < "4.9 GB" < "900 MB"
    click_header(Column.SIZE)
    assert view_column(picker, Column.SIZE) == ["4.9 GB", "900 MB", "253 MB", "10 KB"]
    click_header(Column.PARAMETERS)
    assert view_column(picker, Column.PARAMETERS) == ["", "268M", "1.5B", "8B"]
    click_header(Column.CONTEXT)
    assert view_column(picker, Column.CONTEXT) == ["", "8,192", "32,768", "131,072"]
    click_header(Column.NAME)
    assert view_column(picker, Column.NAME) == ["Big", "broken.gguf", "Mid", "small"]  # case aside

    picker.view.selectRow(0)  # a sorted row still loads its own file
    with qtbot.waitSignal(picker.modelChosen, timeout=1000) as chosen:
        picker.load_button.click()
    assert chosen.args == [Path("/m/big.gguf")]


def test_files_that_share_a_name_show_their_file_names(qtbot, settings, tmp_path):
    first = write_tiny_gguf(tmp_path / "models" / "tiny-Q4_K_M.gguf")
    second = write_tiny_gguf(tmp_path / "models" / "tiny-Q8_0.gguf")
    settings.setValue(EXTRA_FOLDERS_KEY, [str(tmp_path / "models")])
    picker = shown_picker(qtbot, settings, width=300)  # the narrowest panel: the name column only
    rows = {path: picker.proxy.mapFromSource(picker.model.index(row_of(picker, path), Column.NAME))
            for path in (first, second)}
    assert {index.data() for index in rows.values()} == {"Tiny Test"}
    assert [index.data(FILE_ROLE) for index in rows.values()] == ["tiny-Q4_K_M.gguf", "tiny-Q8_0.gguf"]
    line = picker.view.fontMetrics().height()
    assert all(picker.view.visualRect(index).height() >= 2 * line for index in rows.values())  # two lines
    assert picker.view.rect().contains(picker.view.visualRect(rows[first]).topLeft())
    spoken = [index.data(Qt.AccessibleTextRole) for index in rows.values()]
    assert spoken == ["Tiny Test, file tiny-Q4_K_M.gguf", "Tiny Test, file tiny-Q8_0.gguf"]


@pytest.mark.parametrize("width", [300, 1200])
def test_a_broken_file_keeps_its_marker_and_reason_at_any_width(qtbot, settings, tmp_path, width):
    broken = write_garbage(tmp_path / "models" / "broken.gguf")
    settings.setValue(EXTRA_FOLDERS_KEY, [str(tmp_path / "models")])
    picker = shown_picker(qtbot, settings, width=width)
    index = picker.proxy.mapFromSource(picker.model.index(row_of(picker, broken), Column.NAME))
    assert not picker.view.isColumnHidden(Column.NAME)
    assert picker.view.isColumnHidden(Column.ARCHITECTURE) == (width == 300)  # "⚠ can't be used" goes…
    option = QStyleOptionViewItem()
    picker.view.itemDelegateForColumn(Column.NAME).initStyleOption(option, index)
    assert not option.icon.isNull()  # …the ⚠ in the name column stays
    assert "not a GGUF model file" in index.data(Qt.ToolTipRole)
    assert index.data(Qt.AccessibleTextRole) == "broken.gguf, can't be used"


@pytest.mark.parametrize("appearance", ["light", "dark"])
def test_unusable_rows_are_muted_but_readable(qtbot, settings, tmp_path, appearance, qapp):
    broken = write_garbage(tmp_path / "models" / "broken.gguf")
    settings.setValue(EXTRA_FOLDERS_KEY, [str(tmp_path / "models")])
    previous = qapp.palette()
    qapp.setPalette(dark_palette() if appearance == "dark" else QStyleFactory.create("Fusion").standardPalette())
    try:
        picker = make_picker(qtbot, settings)
        colour = cell(picker, row_of(picker, broken), Column.NAME, Qt.ForegroundRole)
        palette = qapp.palette()
        for background in (QPalette.Base, QPalette.AlternateBase, QPalette.Window):
            assert contrast(colour, palette.color(background)) >= 4.5  # greyed rows were 1.9:1
        assert colour != palette.color(QPalette.Text)  # and still visibly quieter than usable rows
    finally:
        qapp.setPalette(previous)


def test_unload_is_offered_only_while_a_model_is_loaded(qtbot, settings, gemma_path):
    picker = make_picker(qtbot, settings)
    assert not picker.unload_button.isEnabled()
    picker.set_current(gemma_path)
    assert picker.unload_button.isEnabled()
    with qtbot.waitSignal(picker.unloadRequested, timeout=1000):
        picker.unload_button.click()
    picker.set_loading(0.3)
    assert not picker.unload_button.isEnabled()  # not while another model loads
    picker.set_loading(None)
    picker.set_current(None)  # unloaded: nothing bold, nothing to unload
    assert not picker.unload_button.isEnabled()
    assert cell(picker, row_of(picker, gemma_path), Column.NAME, Qt.FontRole) is None


def test_every_control_of_the_model_panel_has_a_name(qtbot, settings, gemma_path):
    picker = shown_picker(qtbot, settings)
    picker.set_current(gemma_path)
    picker.set_loading(0.5)  # the progress bar and Cancel shown too
    assert unnamed_widgets(picker) == []
    assert accessible_name(picker.view) == "Models"
    assert accessible_name(picker.cancel_button) == "Cancel loading"
