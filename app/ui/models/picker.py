"""The model list: every GGUF Hearth can find, the models of the servers the user added, what
each one is, and loading one.

The table is a model (`ModelTableModel`, the scan results and the servers' listings) split
from its view, so it can be tested and re-filled without touching the widgets. Scanning reads
only file headers, but a folder on a slow or network disk can still take a while, so it runs
on the thread pool and the list fills in when it is done. Servers are listed by
`RemoteServers`, each on a thread of its own: their rows arrive when each one answers.

The fit column plans each usable file at its saved settings (`set_planner`: the window gives
ModelSession's memory plan). The scan's thread also reads each file's memory shape (one header
walk, cached per file version: engine/gguf/shape.py), so planning a listed file on the GUI thread is
arithmetic, a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...common.newest import NewestWins
from ...common.text import printable
from ...engine.gguf.modelfile import ModelFileError
from ...engine.gguf.reading import model_shape
from ...engine.memory_plan import MemoryPlan
from ...engine.types import ModelSource
from ...library import scan
from ...library.homes import ModelHomes
from ...library.scan import ModelEntry
from ...owners import paths
from ...owners.remote_servers import RemoteServers
from ...owners.settings import Settings
from ..widgets.background import run_in_background
from ..widgets.colors import Tone, set_tone
from ..widgets.tooltips import plain_tooltip
from . import plan_text, remote_rows
from .add_server_dialog import AddServerDialog
from .remote_rows import RemoteEntry
from .table import Column, FitCell, ModelTableModel, Row, RowKey, row_key, shown_path, sorting_proxy, summary
from .table_view import ModelTableView

__all__ = ["Column", "ModelPicker"]

Planner = Callable[[Path], MemoryPlan | None]  # a file's plan at its saved settings; None: none


def scan_and_read_shapes(folders: list[Path], files: list[Path], homes: ModelHomes) -> list[ModelEntry]:
    """The scan, and each usable file's memory shape read into model_shape's cache, both off
    the GUI thread (a shape is one more header walk; a file it cannot read just has no fit)."""
    entries = scan.scan(folders, files, homes)
    for entry in entries:
        if entry.usable:
            try:
                model_shape(entry.path)
            except ModelFileError:
                pass
    return entries


class ModelPicker(QWidget):
    """Lists the models found in Hearth's folders, the Hugging Face cache and the user's picks,
    and those of the servers the user added (`servers`; none without it).

    It scans once when created and again on Rescan or after a file or folder is added or
    removed; Rescan lists the servers again too. The files and folders the user adds are kept
    in the Settings given to it; removing one takes it off the list and leaves the disk alone.
    Removing a server's row forgets the server and its key. A click on a column header sorts by
    it; a second click reverses it, a third goes back to the scan's order.

    Signals:
        modelChosen(Path | RemoteEntry): the user asked to load this model (double-click, Enter
            or Load): a file, or a server's model (RemoteServers.source makes it loadable).
        loadCancelRequested(): Cancel was pressed while a model loads.
        unloadRequested(): Unload was pressed: free the loaded model's memory.
        scanFinished(): the list was refreshed from disk, or a server's models arrived.
    """

    modelChosen = Signal(object)
    loadCancelRequested = Signal()
    unloadRequested = Signal()
    scanFinished = Signal()

    def __init__(self, settings: Settings, servers: RemoteServers | None = None, parent=None):
        super().__init__(parent)
        self._settings = settings
        self._servers = servers
        self._scans = NewestWins()
        self._scan_outcome: tuple[list[ModelEntry], Exception | None] | None = None  # None: the first scan runs
        self._select_after_scan: RowKey | None = None
        self._loading = False
        self._current: RowKey | None = None
        self._planner: Planner | None = None

        self.model = ModelTableModel(self)
        self.proxy = sorting_proxy(self.model)
        self.view = ModelTableView()
        self.view.setModel(self.proxy)
        self.view.setAccessibleName("Models")
        self.view.setAccessibleDescription(
            "The model files Hearth found and the models of your servers. Enter loads the selected one; "
            "a ⚠ marks a file or server that can't be used.")

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
        self.add_server_button = QPushButton("Add server…")
        self.add_server_button.setToolTip("Use the models of an OpenAI-compatible server (llama.cpp, vLLM, "
                                          "Ollama, LM Studio, a hosted API)")
        self.add_server_button.setAccessibleName("Add server…")
        self.add_server_button.setEnabled(servers is not None)
        self.rescan_button = QPushButton("Rescan")
        self.rescan_button.setToolTip("Look through the folders again for new or changed files, and ask "
                                      "the servers for their models")
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

        # Three short rows keep the side panel narrow: adding, keeping the list, loading.
        add_buttons = QHBoxLayout()
        add_buttons.addWidget(self.add_file_button)
        add_buttons.addWidget(self.add_folder_button)
        add_buttons.addWidget(self.add_server_button)
        add_buttons.addStretch(1)
        list_buttons = QHBoxLayout()
        list_buttons.addWidget(self.rescan_button)
        list_buttons.addWidget(self.remove_button)
        list_buttons.addStretch(1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.unload_button)
        buttons.addWidget(self.load_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.status_label)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.details)
        layout.addWidget(self.details_path)
        layout.addLayout(add_buttons)
        layout.addLayout(list_buttons)
        layout.addLayout(buttons)
        layout.addWidget(self.loading_row)
        layout.addWidget(self.error_label)
        self.setTabOrder(self.view, self.load_button)  # the next step after choosing a row

        self.add_file_button.clicked.connect(lambda _checked=False: self.add_model_file())
        self.add_folder_button.clicked.connect(lambda _checked=False: self.add_folder())
        self.add_server_button.clicked.connect(lambda _checked=False: self.add_server())
        self.rescan_button.clicked.connect(lambda _checked=False: self.rescan())
        self.remove_button.clicked.connect(lambda _checked=False: self._remove_selected())
        self.load_button.clicked.connect(lambda _checked=False: self._load_selected())
        self.unload_button.clicked.connect(lambda _checked=False: self.unloadRequested.emit())
        self.cancel_button.clicked.connect(lambda _checked=False: self.loadCancelRequested.emit())
        self.view.doubleClicked.connect(self._choose)
        self.view.rowActivated.connect(self._choose)
        self.view.selectionModel().selectionChanged.connect(lambda _selected, _deselected: self._show_selection())
        self.proxy.modelReset.connect(self._show_selection)
        if servers is not None:
            servers.listed.connect(lambda _listing: self._show_servers())
            servers.serversChanged.connect(self._show_servers)
            servers.listingStarted.connect(self._show_status)
        self.rescan()

    # --- the list ------------------------------------------------------------------------------

    def entries(self) -> list[ModelEntry]:
        """The files listed (a server's rows: `remote_entries`)."""
        return self.model.entries()

    def remote_entries(self) -> list[RemoteEntry]:
        return self.model.remote_entries()

    def rescan(self) -> None:
        """Read the folders again on the thread pool, and list the servers again; only the
        newest scan's result is shown."""
        ticket = self._scans.begin()
        extra_folders, extra_files = self._settings.extra_folders, self._settings.extra_files
        self.rescan_button.setEnabled(False)
        self._show_status()

        def done(entries, error):
            if self._scans.finish(ticket):
                self._on_scanned(entries or [], error)

        homes = paths.model_homes()
        run_in_background(lambda: scan_and_read_shapes(scan.model_folders(homes, extra_folders), extra_files, homes),
                          done, self)
        if self._servers is not None:
            self._servers.refresh()

    def _on_scanned(self, entries: list[ModelEntry], error: Exception | None) -> None:
        selected = self._select_after_scan or self._selected_key()
        self._select_after_scan = None
        self._scan_outcome = (entries, error)
        self.model.set_entries(entries)
        self.refresh_fits()
        self.rescan_button.setEnabled(True)
        self._show_status()
        if selected:
            self._select_key(selected)
        self.scanFinished.emit()

    def set_planner(self, planner: Planner | None) -> None:
        """How to plan a listed file (None: the fit column stays empty); plans the list now."""
        self._planner = planner
        self.refresh_fits()

    def refresh_fits(self) -> None:
        """Plan every usable file again: its settings or the free memory changed."""
        if self._planner is None:
            return
        fits = {}
        for entry in self.model.entries():
            plan = self._planner(entry.path) if entry.usable else None
            if plan is not None:
                fits[row_key(entry)] = FitCell(plan.fit, plan_text.verdict(plan),
                                               f"{plan_text.details(plan)}\n\n{plan_text.HOW}")
        self.model.set_fits(fits)

    def _show_servers(self) -> None:
        """The servers' newest listings, as rows after the files; the selection stays."""
        selected = self._selected_key()
        self.model.set_remote(remote_rows.remote_rows(self._servers.listings()))
        if selected:
            self._select_key(selected)
        self._show_status()
        self.scanFinished.emit()

    def _show_status(self) -> None:
        """The line above the list: how many models, how many can't be used, which servers are
        still being asked."""
        if self._scan_outcome is None or self._scans.current is not None:
            self.status_label.setText("Looking for models…")
            return
        entries, error = self._scan_outcome
        rows = [*entries, *self.model.remote_entries()]
        asking = self._servers.listing_count if self._servers is not None else 0
        parts = []
        if error is not None:
            parts.append(f"Looking for models failed: {printable(str(error), limit=200)}.")
        elif rows:
            usable = sum(row.usable for row in rows)
            broken = len(rows) - usable
            parts.append(f"{usable} model{'s' if usable != 1 else ''}"
                         + (f", {broken} that can't be used" if broken else ""))
        elif not asking:
            parts.append("No models found. Add a .gguf file, a folder that holds some, or a server.")
        if asking:
            parts.append(f"Asking {asking} server{'s' if asking != 1 else ''} for models…")
        self.status_label.setText(" · ".join(parts))

    def _select_key(self, key: RowKey) -> bool:
        """Select the row of `key` wherever sorting put it; False if it is not listed."""
        row = next((row for row in range(self.model.rowCount()) if row_key(self.model.entry(row)) == key), None)
        if row is None:
            return False
        self.view.selectRow(self.proxy.mapFromSource(self.model.index(row, 0)).row())
        return True

    def _selected_entry(self) -> Row | None:
        rows = self.view.selectionModel().selectedRows()
        return self.model.entry(self.proxy.mapToSource(rows[0]).row()) if rows else None

    def _selected_key(self) -> RowKey | None:
        entry = self._selected_entry()
        return row_key(entry) if entry is not None else None

    def _show_selection(self) -> None:
        entry = self._selected_entry()
        self.load_button.setEnabled(bool(entry and entry.usable) and not self._loading)
        self.unload_button.setEnabled(self._current is not None and not self._loading)
        self._offer_removal(entry)
        # Empty details are hidden: a selectable label takes focus, and an empty one is a
        # nameless stop for a screen reader.
        self.details.setVisible(entry is not None)
        self.details_path.setVisible(entry is not None)
        if entry is None:
            self.details.clear()
            self.details_path.clear()
            return
        remote = isinstance(entry, RemoteEntry)
        if entry.usable:
            self.details.setText(remote_rows.summary(entry) if remote else summary(entry))
            set_tone(self.details, Tone.NORMAL)
        else:
            self.details.setText(f"⚠ {entry.error}" if remote else f"⚠ Can't be loaded: {entry.error}")
            set_tone(self.details, Tone.ERROR)
        self.details_path.setText(entry.address if remote else shown_path(entry))

    def _offer_removal(self, entry: Row | None) -> None:
        if isinstance(entry, RemoteEntry):
            self.remove_button.setEnabled(True)
            self.remove_button.setToolTip(plain_tooltip(f"Forget the server {entry.server_name} and its API key"))
            return
        added = self._added_by_user(entry.path) if entry else None
        self.remove_button.setEnabled(added is not None)
        if added is None:
            self.remove_button.setToolTip("Only files, folders and servers you added can be removed from the list")
        else:
            what = "this file" if added == entry.path else f"the folder {added}"
            self.remove_button.setToolTip(f"Stop listing {what}; nothing is deleted from the disk")

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
            self.modelChosen.emit(entry if isinstance(entry, RemoteEntry) else entry.path)

    def set_current(self, current: ModelSource | Path | None) -> None:
        """Show which model is loaded (None: none): bold in the list, selected if nothing else
        is, and Unload offered only while there is one."""
        self._current = row_key(current) if current is not None else None
        self.model.set_current(current)
        if self._current is not None and self._selected_entry() is None:
            self._select_key(self._current)
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
        self._select_after_scan = row_key(Path(path))
        self.rescan()

    def add_folder_path(self, path: Path) -> None:
        """Remember a folder to scan from now on, and rescan."""
        if Path(path) not in self._settings.extra_folders:
            self._settings.extra_folders = [*self._settings.extra_folders, Path(path)]
        self.rescan()

    def add_server(self) -> AddServerDialog | None:
        """Open the Add server dialog (modal to the window, not blocking it); a saved server is
        listed at once and its rows appear when it answers. Returns the dialog."""
        if self._servers is None:
            return None
        dialog = AddServerDialog(self._servers, self.window())
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    # --- removing what was added ----------------------------------------------------------------

    def _added_by_user(self, path: Path) -> Path | None:
        """The added file, or the added folder, that lists `path`, if any."""
        if path in self._settings.extra_files:
            return path
        return next((folder for folder in self._settings.extra_folders if path.is_relative_to(folder)), None)

    def _remove_selected(self) -> None:
        """Forget the added file, folder or server behind the selection; a model loaded from it
        stays."""
        entry = self._selected_entry()
        if isinstance(entry, RemoteEntry):
            self._remove_server(entry)
            return
        added = self._added_by_user(entry.path) if entry is not None else None
        if added is not None:
            self._settings.extra_files = [p for p in self._settings.extra_files if p != added]
            self._settings.extra_folders = [p for p in self._settings.extra_folders if p != added]
            self.rescan()

    def _remove_server(self, entry: RemoteEntry) -> None:
        """Forget a server and its key, once the user says so (the key may be hard to find again)."""
        answer = QMessageBox.question(
            self, "Remove server",
            f"Remove the server “{entry.server_name}” ({entry.address})?\n\nHearth forgets its address and its "
            "API key. Conversations with its models are kept.")
        if answer == QMessageBox.StandardButton.Yes:
            self._servers.remove(entry.server.base_url)
