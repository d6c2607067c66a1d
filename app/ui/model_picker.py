"""The model list: every GGUF Hearth can find, what each one is, and loading one.

The table is a model (`ModelTableModel`, the scan results) split from its view, so it can be
tested and re-filled without touching the widgets. Scanning reads only file headers, but a
folder on a slow or network disk can still take a while, so it runs on the thread pool and
the list fills in when it is done.
"""

from __future__ import annotations

import html
from enum import IntEnum
from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QFont, QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QProgressBar, QPushButton,
    QTableView, QVBoxLayout, QWidget,
)

from ..engine.text import printable
from ..engine.templates import fallback_name
from ..library import scan
from ..library.scan import ModelEntry
from ..newest import NewestWins
from ..settings import Settings
from .background import run_in_background

ERROR_COLOR = "#c62828"


def format_parameters(count: int) -> str:
    """268098176 -> "268M", 8030261248 -> "8B", 1543714304 -> "1.5B"."""
    if count >= 1e9:
        return f"{count / 1e9:.1f}".removesuffix(".0") + "B"
    if count >= 1e6:
        return f"{count / 1e6:.0f}M"
    return f"{count / 1e3:.0f}K"


def format_size(size: int) -> str:
    """Decimal units, as file managers and Hugging Face show them: "253 MB", "4.9 GB"."""
    if size >= 1e9:
        return f"{size / 1e9:.1f} GB"
    if size >= 1e6:
        return f"{size / 1e6:.0f} MB"
    return f"{size / 1e3:.0f} KB"


class Column(IntEnum):
    NAME = 0
    ARCHITECTURE = 1
    PARAMETERS = 2
    QUANTIZATION = 3
    SIZE = 4
    CONTEXT = 5
    TEMPLATE = 6
    FOLDER = 7


_HEADERS = {
    Column.NAME: ("Name", "The name the model's file gives itself"),
    Column.ARCHITECTURE: ("Arch", "The model architecture (family)"),
    Column.PARAMETERS: ("Params", "How many parameters (weights) the model has"),
    Column.QUANTIZATION: ("Quant", "How the weights are compressed; Q4_K_M is a good balance, Q8_0 is near-lossless"),
    Column.SIZE: ("Size", "Size on disk (roughly the memory it needs, plus the context)"),
    Column.CONTEXT: ("Context", "The longest conversation, in tokens, the model was trained for"),
    Column.TEMPLATE: ("Template", "✓: the file has its own chat template. fallback: Hearth picks one by model family"),
    Column.FOLDER: ("Folder", "Where the file was found"),
}


class ModelTableModel(QAbstractTableModel):
    """Scan results as table rows; unusable files are greyed, with their reason in the row."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._entries: list[ModelEntry] = []
        self._keys: list[Path] = []  # each entry's resolved path: data() compares it per cell
        self._current: Path | None = None

    def set_entries(self, entries: list[ModelEntry]) -> None:
        self.beginResetModel()
        self._entries = list(entries)
        self._keys = [scan.resolved(entry.path) for entry in self._entries]
        self.endResetModel()

    def entries(self) -> list[ModelEntry]:
        return list(self._entries)

    def entry(self, row: int) -> ModelEntry:
        return self._entries[row]

    def row_of(self, path: Path) -> int | None:
        wanted = scan.resolved(Path(path))
        return next((row for row, key in enumerate(self._keys) if key == wanted), None)

    def set_current(self, path: Path | None) -> None:
        """Mark the loaded model (bold), so the list shows which one the chat is using."""
        self._current = scan.resolved(Path(path)) if path else None
        if self._entries:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._entries) - 1, len(Column) - 1), [Qt.FontRole])

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._entries)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(Column)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal:
            return None
        if role == Qt.DisplayRole:
            return _HEADERS[Column(section)][0]
        if role == Qt.ToolTipRole:
            return _HEADERS[Column(section)][1]
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        entry, column = self._entries[index.row()], Column(index.column())
        if role == Qt.DisplayRole:
            return _cell_text(entry, column)
        if role == Qt.ToolTipRole:
            return _tooltip(entry, column)
        if role == Qt.ForegroundRole and not entry.usable:
            return QGuiApplication.palette().color(QPalette.Disabled, QPalette.Text)
        if role == Qt.FontRole and self._current is not None and self._keys[index.row()] == self._current:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.TextAlignmentRole and column in (Column.PARAMETERS, Column.SIZE, Column.CONTEXT):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        if role == Qt.TextAlignmentRole and column == Column.TEMPLATE:
            return int(Qt.AlignCenter)
        return None


def _cell_text(entry: ModelEntry, column: Column) -> str:
    info = entry.info
    if column == Column.NAME:
        return entry.name
    if column == Column.FOLDER:
        return entry.origin
    if column == Column.SIZE:
        return format_size(entry.size)
    if info is None:
        # The whole reason is in the tooltip and under the list; a long one here would
        # widen the column for every row.
        return "⚠ can't be used" if column == Column.ARCHITECTURE else ""
    if column == Column.ARCHITECTURE:
        return info.architecture
    if column == Column.PARAMETERS:
        return format_parameters(info.parameter_count)
    if column == Column.QUANTIZATION:
        return info.quantization
    if column == Column.CONTEXT:
        return f"{info.context_length:,}" if info.context_length else "?"
    return "✓" if info.has_chat_template else "fallback"


def _summary(entry: ModelEntry) -> str:
    """Every column in one line, for the selected model: a narrow panel hides some columns."""
    info = entry.info
    context = f"{info.context_length:,} tokens of context" if info.context_length else "context length unknown"
    template = "its own chat template" if info.has_chat_template else f"“{fallback_name(info)}” fallback template"
    return (f"{info.architecture} · {format_parameters(info.parameter_count)} parameters · {info.quantization} · "
            f"{format_size(entry.size)} · {context} · {template} · in {entry.origin}")


def _shown_path(entry: ModelEntry) -> str:
    """The entry's path as text Qt can show: a name that is not valid UTF-8 keeps a "�" where
    Qt would silently drop its undecodable bytes, and control characters cannot split it."""
    return printable(str(entry.path), limit=None)


def _tooltip(entry: ModelEntry, column: Column) -> str:
    if entry.info is None:
        return f"{_shown_path(entry)}\n\nThis file can't be loaded: {entry.error}"
    if column == Column.TEMPLATE and not entry.info.has_chat_template:
        return f"The file has no chat template; Hearth uses its “{fallback_name(entry.info)}” format."
    return _shown_path(entry)


class _FittingTableView(QTableView):
    """Shows as many columns as fit its width, most useful first, so a narrow side panel
    gets no horizontal scrolling; the name takes what is left and the rest is elided."""

    PRIORITY = (Column.SIZE, Column.PARAMETERS, Column.QUANTIZATION, Column.TEMPLATE,
                Column.CONTEXT, Column.ARCHITECTURE, Column.FOLDER)
    NAME_MIN_WIDTH = 150
    FOLDER_MAX_WIDTH = 220

    def setModel(self, model) -> None:
        super().setModel(model)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.Fixed)
        self.horizontalHeader().setSectionResizeMode(Column.NAME, QHeaderView.Stretch)
        model.modelReset.connect(self.fit_columns)
        model.dataChanged.connect(self.fit_columns)  # the loaded row turns bold, and wider

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit_columns()

    def fit_columns(self) -> None:
        header = self.horizontalHeader()
        name = min(max(self.sizeHintForColumn(Column.NAME), header.sectionSizeHint(Column.NAME)), self.NAME_MIN_WIDTH)
        room = self.viewport().width() - name
        for column in self.PRIORITY:
            width = max(self.sizeHintForColumn(column), header.sectionSizeHint(column))
            if column == Column.FOLDER:
                width = min(width, self.FOLDER_MAX_WIDTH)
            fits = width <= room
            self.setColumnHidden(column, not fits)
            if fits:
                header.resizeSection(column, width)
                room -= width


class ModelPicker(QWidget):
    """Lists the models found in Hearth's folders, the Hugging Face cache and the user's picks.

    It scans once when created and again on Rescan or after a file or folder is added or
    removed. The files and folders the user adds are kept in the Settings given to it; removing
    one takes it off the list and leaves the disk alone.

    Signals:
        modelChosen(Path): the user asked to load this model (double-click or Load).
        loadCancelRequested(): Cancel was pressed while a model loads.
        scanFinished(): the list was refreshed from disk.
    """

    modelChosen = Signal(object)
    loadCancelRequested = Signal()
    scanFinished = Signal()

    def __init__(self, settings: Settings, parent=None):
        super().__init__(parent)
        self._settings = settings
        self._scans = NewestWins()
        self._select_after_scan: Path | None = None
        self._loading = False

        self.model = ModelTableModel(self)
        self.view = _FittingTableView()
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.view.setShowGrid(False)
        self.view.setAlternatingRowColors(True)
        self.view.setWordWrap(False)
        self.view.setTextElideMode(Qt.ElideMiddle)
        self.view.verticalHeader().hide()
        self.view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.view.horizontalHeader().setHighlightSections(False)

        self.status_label = QLabel()
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)

        self.add_file_button = QPushButton("Add model file…")
        self.add_file_button.setToolTip("Add one .gguf file to the list (its folder is not scanned)")
        self.add_folder_button = QPushButton("Add folder…")
        self.add_folder_button.setToolTip("Look for .gguf files in a folder and up to three folders inside it")
        self.rescan_button = QPushButton("Rescan")
        self.rescan_button.setToolTip("Look through the folders again for new or changed files")
        self.remove_button = QPushButton("Remove")
        self.remove_button.setEnabled(False)
        self.load_button = QPushButton("Load")
        self.load_button.setToolTip("Load the selected model (or double-click it)")
        self.load_button.setEnabled(False)

        self.loading_label = QLabel()
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop loading; the model you had keeps working")
        self.loading_row = QWidget()
        loading_layout = QHBoxLayout(self.loading_row)
        loading_layout.setContentsMargins(0, 0, 0, 0)
        loading_layout.addWidget(self.loading_label)
        loading_layout.addWidget(self.progress, 1)
        loading_layout.addWidget(self.cancel_button)
        self.loading_row.hide()

        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.error_label.setStyleSheet(f"color: {ERROR_COLOR};")
        self.error_label.hide()

        list_buttons = QHBoxLayout()  # two rows keep the side panel narrow
        list_buttons.addWidget(self.add_file_button)
        list_buttons.addWidget(self.add_folder_button)
        list_buttons.addWidget(self.remove_button)
        list_buttons.addStretch(1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.rescan_button)
        buttons.addStretch(1)
        buttons.addWidget(self.load_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.status_label)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.details)
        layout.addLayout(list_buttons)
        layout.addLayout(buttons)
        layout.addWidget(self.loading_row)
        layout.addWidget(self.error_label)

        self.add_file_button.clicked.connect(self.add_model_file)
        self.add_folder_button.clicked.connect(self.add_folder)
        self.rescan_button.clicked.connect(self.rescan)
        self.remove_button.clicked.connect(self._remove_selected)
        self.load_button.clicked.connect(self._load_selected)
        self.cancel_button.clicked.connect(self.loadCancelRequested)
        self.view.doubleClicked.connect(lambda index: self._choose(index.row()))
        self.view.selectionModel().selectionChanged.connect(lambda _selected, _deselected: self._show_selection())
        self.model.modelReset.connect(self._show_selection)
        self.rescan()

    # --- the list ------------------------------------------------------------------------------

    def entries(self) -> list[ModelEntry]:
        return self.model.entries()

    def rescan(self) -> None:
        """Read the folders again on the thread pool; only the newest scan's result is shown."""
        ticket = self._scans.begin()
        extra_folders, extra_files = self._settings.extra_folders, self._settings.extra_files
        self.status_label.setText("Looking for models…")
        self.rescan_button.setEnabled(False)

        def done(entries, error):
            if self._scans.finish(ticket):
                self._on_scanned(entries or [], error)

        run_in_background(lambda: scan.scan(scan.model_folders(extra_folders), extra_files), done, self)

    def _on_scanned(self, entries: list[ModelEntry], error: Exception | None) -> None:
        selected = self._select_after_scan or self._selected_path()
        self._select_after_scan = None
        self.model.set_entries(entries)
        self.rescan_button.setEnabled(True)
        if error is not None:
            self.status_label.setText(f"Looking for models failed: {printable(str(error), limit=200)}")
        elif not entries:
            self.status_label.setText("No models found. Add a .gguf file or a folder that holds some.")
        else:
            usable = sum(entry.usable for entry in entries)
            broken = len(entries) - usable
            text = f"{usable} model{'s' if usable != 1 else ''}"
            self.status_label.setText(text + (f", {broken} that can't be used" if broken else ""))
        row = self.model.row_of(selected) if selected else None
        if row is not None:
            self.view.selectRow(row)
        self.scanFinished.emit()

    def _selected_row(self) -> int | None:
        rows = self.view.selectionModel().selectedRows()
        return rows[0].row() if rows else None

    def _selected_path(self) -> Path | None:
        row = self._selected_row()
        return self.model.entry(row).path if row is not None else None

    def _show_selection(self) -> None:
        row = self._selected_row()
        entry = self.model.entry(row) if row is not None else None
        self.load_button.setEnabled(bool(entry and entry.usable) and not self._loading)
        added = self._added_by_user(entry.path) if entry else None
        self.remove_button.setEnabled(added is not None)
        if added is None:
            self.remove_button.setToolTip("Only files and folders you added can be removed from the list")
        else:
            what = "this file" if added == entry.path else f"the folder {added}"
            self.remove_button.setToolTip(f"Stop listing {what}; nothing is deleted from the disk")
        if entry is None:
            self.details.clear()
        elif entry.usable:
            self.details.setText(f"{html.escape(_summary(entry), quote=False)}<br>"
                                 f"<span style='color:gray'>{html.escape(_shown_path(entry), quote=False)}</span>")
        else:
            self.details.setText(f"<span style='color:{ERROR_COLOR}'>Can't be loaded: {html.escape(entry.error, quote=False)}</span>"
                                 f"<br>{html.escape(_shown_path(entry), quote=False)}")

    # --- choosing and loading -------------------------------------------------------------------

    def _load_selected(self) -> None:
        row = self._selected_row()
        if row is not None:
            self._choose(row)

    def _choose(self, row: int) -> None:
        entry = self.model.entry(row)
        if entry.usable and not self._loading:
            self.error_label.hide()
            self.modelChosen.emit(entry.path)

    def set_current(self, path: Path | None) -> None:
        """Show which model is loaded: bold in the list, and selected if nothing else is."""
        self.model.set_current(path)
        row = self.model.row_of(path) if path else None
        if row is not None and self._selected_row() is None:
            self.view.selectRow(row)

    def set_loading(self, progress: float | None) -> None:
        """A fraction 0..1 shows the progress bar and Cancel; None hides them (done or failed)."""
        was_loading, self._loading = self._loading, progress is not None
        self.loading_row.setVisible(self._loading)
        if self._loading:
            self.error_label.hide()
            self.progress.setValue(round(max(0.0, min(1.0, progress)) * 1000))
            self.loading_label.setText("Loading…")
        if self._loading != was_loading:  # Load is enabled only while nothing loads
            self._show_selection()

    def show_load_error(self, message: str) -> None:
        """Say why the model could not load; the list, its selection and the loaded model stay."""
        self.set_loading(None)
        self.error_label.setText(f"Could not load the model: {message}")
        self.error_label.show()

    # --- adding files and folders ---------------------------------------------------------------

    def add_model_file(self) -> None:
        chosen, _ = QFileDialog.getOpenFileName(self, "Add a model file", "", "GGUF models (*.gguf)")
        if chosen:
            self.add_model_file_path(Path(chosen))

    def add_folder(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Add a folder of models")
        if chosen:
            self.add_folder_path(Path(chosen))

    def add_model_file_path(self, path: Path) -> None:
        """Remember one file (not its folder), rescan, and select it when it appears."""
        if Path(path) not in self._settings.extra_files:
            self._settings.extra_files = [*self._settings.extra_files, Path(path)]
        self._select_after_scan = Path(path)
        self.rescan()

    def add_folder_path(self, path: Path) -> None:
        """Remember a folder to scan from now on, and rescan."""
        if Path(path) not in self._settings.extra_folders:
            self._settings.extra_folders = [*self._settings.extra_folders, Path(path)]
        self.rescan()

    # --- removing what was added ----------------------------------------------------------------

    def _added_by_user(self, path: Path) -> Path | None:
        """The added file, or the added folder, that lists `path`, if any."""
        if path in self._settings.extra_files:
            return path
        return next((folder for folder in self._settings.extra_folders if path.is_relative_to(folder)), None)

    def _remove_selected(self) -> None:
        """Forget the added file or folder behind the selection; a model loaded from it stays."""
        path = self._selected_path()
        added = self._added_by_user(path) if path else None
        if added is not None:
            self._settings.extra_files = [p for p in self._settings.extra_files if p != added]
            self._settings.extra_folders = [p for p in self._settings.extra_folders if p != added]
            self.rescan()
