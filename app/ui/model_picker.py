"""The model list: every GGUF Hearth can find, what each one is, and loading one.

The table is a model (`ModelTableModel`, the scan results) split from its view, so it can be
tested and re-filled without touching the widgets. Scanning reads only file headers, but a
folder on a slow or network disk can still take a while, so it runs on the thread pool and
the list fills in when it is done.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget,
)

from ..engine.text import printable
from ..library import scan
from ..library.scan import ModelEntry
from ..newest import NewestWins
from ..settings import Settings
from .background import run_in_background
from .colors import Tone, set_tone
from .model_table import Column, ModelTableModel, shown_path, sorting_proxy, summary
from .model_table_view import ModelTableView

__all__ = ["Column", "ModelPicker"]


class ModelPicker(QWidget):
    """Lists the models found in Hearth's folders, the Hugging Face cache and the user's picks.

    It scans once when created and again on Rescan or after a file or folder is added or
    removed. The files and folders the user adds are kept in the Settings given to it; removing
    one takes it off the list and leaves the disk alone. A click on a column header sorts by
    it; a second click reverses it, a third goes back to the scan's order.

    Signals:
        modelChosen(Path): the user asked to load this model (double-click, Enter or Load).
        loadCancelRequested(): Cancel was pressed while a model loads.
        unloadRequested(): Unload was pressed: free the loaded model's memory.
        scanFinished(): the list was refreshed from disk.
    """

    modelChosen = Signal(object)
    loadCancelRequested = Signal()
    unloadRequested = Signal()
    scanFinished = Signal()

    def __init__(self, settings: Settings, parent=None):
        super().__init__(parent)
        self._settings = settings
        self._scans = NewestWins()
        self._select_after_scan: Path | None = None
        self._loading = False
        self._current: Path | None = None

        self.model = ModelTableModel(self)
        self.proxy = sorting_proxy(self.model)
        self.view = ModelTableView()
        self.view.setModel(self.proxy)
        self.view.setAccessibleName("Models")
        self.view.setAccessibleDescription(
            "The model files Hearth found. Enter loads the selected one; a ⚠ marks a file that can't be used.")

        self.status_label = QLabel()
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.PlainText)  # GGUF metadata and error texts are foreign text
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.details_path = QLabel()
        self.details_path.setWordWrap(True)
        self.details_path.setTextFormat(Qt.PlainText)
        self.details_path.setTextInteractionFlags(Qt.TextSelectableByMouse)
        set_tone(self.details_path, Tone.MUTED)
        self.details.hide()  # until a row is selected
        self.details_path.hide()

        self.add_file_button = QPushButton("Add file…")  # short: the side panel gives way on small screens
        self.add_file_button.setToolTip("Add one .gguf model file to the list (its folder is not scanned)")
        self.add_file_button.setAccessibleName("Add model file…")
        self.add_folder_button = QPushButton("Add folder…")
        self.add_folder_button.setToolTip("Look for .gguf files in a folder and up to three folders inside it")
        self.rescan_button = QPushButton("Rescan")
        self.rescan_button.setToolTip("Look through the folders again for new or changed files")
        self.remove_button = QPushButton("Remove")
        self.remove_button.setEnabled(False)
        self.unload_button = QPushButton("Unload")
        self.unload_button.setToolTip("Close the loaded model and give its memory back")
        self.unload_button.setEnabled(False)
        self.load_button = QPushButton("Load")
        self.load_button.setToolTip("Load the selected model (or double-click it, or press Enter)")
        self.load_button.setEnabled(False)

        self.loading_label = QLabel()
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setAccessibleName("Loading progress")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop loading; the model you had keeps working")
        self.cancel_button.setAccessibleName("Cancel loading")
        self.loading_row = QWidget()
        loading_layout = QHBoxLayout(self.loading_row)
        loading_layout.setContentsMargins(0, 0, 0, 0)
        loading_layout.addWidget(self.loading_label)
        loading_layout.addWidget(self.progress, 1)
        loading_layout.addWidget(self.cancel_button)
        self.loading_row.hide()

        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextFormat(Qt.PlainText)  # it quotes llama.cpp's and the file's words
        self.error_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        set_tone(self.error_label, Tone.ERROR)
        self.error_label.hide()

        list_buttons = QHBoxLayout()  # two rows keep the side panel narrow
        list_buttons.addWidget(self.add_file_button)
        list_buttons.addWidget(self.add_folder_button)
        list_buttons.addWidget(self.remove_button)
        list_buttons.addStretch(1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.rescan_button)
        buttons.addStretch(1)
        buttons.addWidget(self.unload_button)
        buttons.addWidget(self.load_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.status_label)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.details)
        layout.addWidget(self.details_path)
        layout.addLayout(list_buttons)
        layout.addLayout(buttons)
        layout.addWidget(self.loading_row)
        layout.addWidget(self.error_label)
        self.setTabOrder(self.view, self.load_button)  # the next step after choosing a row

        self.add_file_button.clicked.connect(lambda _checked=False: self.add_model_file())
        self.add_folder_button.clicked.connect(lambda _checked=False: self.add_folder())
        self.rescan_button.clicked.connect(lambda _checked=False: self.rescan())
        self.remove_button.clicked.connect(lambda _checked=False: self._remove_selected())
        self.load_button.clicked.connect(lambda _checked=False: self._load_selected())
        self.unload_button.clicked.connect(lambda _checked=False: self.unloadRequested.emit())
        self.cancel_button.clicked.connect(lambda _checked=False: self.loadCancelRequested.emit())
        self.view.doubleClicked.connect(self._choose)
        self.view.rowActivated.connect(self._choose)
        self.view.selectionModel().selectionChanged.connect(lambda _selected, _deselected: self._show_selection())
        self.proxy.modelReset.connect(self._show_selection)
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
        if selected:
            self._select_path(selected)
        self.scanFinished.emit()

    def _select_path(self, path: Path) -> bool:
        """Select the row of `path` wherever sorting put it; False if it is not listed."""
        row = self.model.row_of(path)
        if row is None:
            return False
        self.view.selectRow(self.proxy.mapFromSource(self.model.index(row, 0)).row())
        return True

    def _selected_entry(self) -> ModelEntry | None:
        rows = self.view.selectionModel().selectedRows()
        return self.model.entry(self.proxy.mapToSource(rows[0]).row()) if rows else None

    def _selected_path(self) -> Path | None:
        entry = self._selected_entry()
        return entry.path if entry is not None else None

    def _show_selection(self) -> None:
        entry = self._selected_entry()
        self.load_button.setEnabled(bool(entry and entry.usable) and not self._loading)
        self.unload_button.setEnabled(self._current is not None and not self._loading)
        added = self._added_by_user(entry.path) if entry else None
        self.remove_button.setEnabled(added is not None)
        if added is None:
            self.remove_button.setToolTip("Only files and folders you added can be removed from the list")
        else:
            what = "this file" if added == entry.path else f"the folder {added}"
            self.remove_button.setToolTip(f"Stop listing {what}; nothing is deleted from the disk")
        # Empty details are hidden: a selectable label takes focus, and an empty one is a
        # nameless stop for a screen reader.
        self.details.setVisible(entry is not None)
        self.details_path.setVisible(entry is not None)
        if entry is None:
            self.details.clear()
            self.details_path.clear()
            return
        if entry.usable:
            self.details.setText(summary(entry))
            set_tone(self.details, Tone.NORMAL)
        else:
            self.details.setText(f"⚠ Can't be loaded: {entry.error}")
            set_tone(self.details, Tone.ERROR)
        self.details_path.setText(shown_path(entry))

    # --- choosing and loading -------------------------------------------------------------------

    def _load_selected(self) -> None:
        rows = self.view.selectionModel().selectedRows()
        if rows:
            self._choose(rows[0])

    def _choose(self, index: QModelIndex) -> None:
        """Load the model on the view's row `index`, if it can be used and nothing loads."""
        entry = self.model.entry(self.proxy.mapToSource(index).row())
        if entry.usable and not self._loading:
            self.error_label.hide()
            self.modelChosen.emit(entry.path)

    def set_current(self, path: Path | None) -> None:
        """Show which model is loaded (None: none): bold in the list, selected if nothing else
        is, and Unload offered only while there is one."""
        self._current = Path(path) if path else None
        self.model.set_current(path)
        if path is not None and self._selected_entry() is None:
            self._select_path(path)
        self._show_selection()

    def set_loading(self, progress: float | None) -> None:
        """A fraction 0..1 shows the progress bar and Cancel; None hides them (done or failed)."""
        was_loading, self._loading = self._loading, progress is not None
        self.loading_row.setVisible(self._loading)
        if self._loading:
            self.error_label.hide()
            self.progress.setValue(round(max(0.0, min(1.0, progress)) * 1000))
            self.loading_label.setText("Loading…")
        if self._loading != was_loading:  # Load and Unload are enabled only while nothing loads
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
