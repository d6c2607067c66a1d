"""Settings → Documents: the collections a conversation can be answered from and their indexing;
under them the embedding model, sources per reply and whether the model searches
(documents_options.py).

The page works over the application's DocumentLibrary and keeps nothing of its own: the table
is filled from what the library last said (collectionsChanged, indexingChanged, progress), and
every button asks the library, whose threads do the work; nothing here waits on them. A
collection being made by its first run is not in the index's summaries until that run ends, so
it is shown from indexingChanged meanwhile.

The file choosers and the name asked for are window-modal dialogs opened with open() (kept in
`file_dialog` and `name_dialog`), not static calls with a nested event loop: the page goes on
showing progress behind them. Removing a collection asks first, as the Tools page does.

Names, paths and the readers' reasons are the user's or a file's text: item text and plain-text
labels only (collection_words.py), tooltips escaped. A problem the library reports is shown in
a label on the page (the newest), never a message box per problem. A screen reader hears a run
begin, each quarter of it, and its end, politely, while the page is shown; while it is not, the
window's status bar (ui/window/indexing_status.py) says it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...common.text import printable, shorten
from ...documents.index import CollectionSummary
from ...documents.indexing import IndexReport, Progress
from ...documents.readers import SUPPORTED_SUFFIXES
from ...owners.documents import DocumentLibrary
from ..widgets.announce import announce
from ..widgets.buttons import described_button
from ..widgets.colors import Tone, error_color, set_tone
from ..widgets.plain_message import ask
from ..widgets.row_tables import as_row_list
from ..widgets.tooltips import plain_tooltip
from . import collection_words as words
from .documents_options import DocumentsOptions

EXPLANATION = ("A collection is a set of folders and files that a conversation can be answered from (choose them "
               "with the Documents button beside the message box). Hearth reads them on this computer and never "
               "changes them.")
NAME_QUESTION = "&Name of the collection (an existing one adds to it; a new name makes a new one):"
NO_NAME = "A collection needs a name: nothing was added."
DOCUMENT_FILTER = "Documents ({})".format(" ".join(f"*{suffix}" for suffix in sorted(SUPPORTED_SUFFIXES)))
NAME, FILES, CHUNKS, FAILED, FOLDERS, STATE = range(6)
HEADERS = ["Collection", "Files", "Chunks", "Failed", "Folders", "State"]
QUARTERS = 4  # a run is announced as it begins, at each quarter, and as it ends


class DocumentsPage(QWidget):
    """The Documents tab of Settings, over `library`.

    It has no signals of its own: it calls the library, and follows its collectionsChanged,
    indexingChanged, progress, indexed and problem signals.
    """

    def __init__(self, library: DocumentLibrary, parent: QWidget | None = None):
        super().__init__(parent)
        self.library = library
        self._summaries: dict[str, CollectionSummary] = {}
        self._indexing: tuple[str, ...] = ()
        self._steps: dict[str, Progress] = {}  # the running collection's last step (and a stopped one's)
        self._heard: dict[str, int] = {}  # the quarters of a run announced so far
        self._select: str | None = None  # the row to select when it appears (a collection just added)
        self.file_dialog: QFileDialog | None = None
        self.name_dialog: QInputDialog | None = None

        explanation = QLabel(EXPLANATION)
        explanation.setWordWrap(True)
        self.table = QTableWidget(0, len(HEADERS), self)
        self.table.setHorizontalHeaderLabels(HEADERS)
        as_row_list(self.table)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.table.horizontalHeader()
        for column in (FILES, CHUNKS, FAILED, STATE):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(FOLDERS, QHeaderView.ResizeMode.Stretch)
        self.table.setColumnWidth(NAME, 130)
        self.table.setMinimumHeight(120)
        self.table.setAccessibleName("Document collections")
        self.table.setAccessibleDescription("Each collection's files, chunks, files that could not be read, folders "
                                            "and state. Delete removes the selected collection.")
        table_caption = QLabel("Co&llections:")
        table_caption.setBuddy(self.table)

        self.progress_label = QLabel()
        self.progress_label.setTextFormat(Qt.TextFormat.PlainText)  # a collection's name
        self.progress_bar = QProgressBar()
        self.progress_bar.setAccessibleName("Indexing progress")
        self.progress_bar.setFormat("%v of %m")
        self.progress_bar.setMaximumWidth(220)

        self.add_folder_button = described_button("Add &folder…", "Add a folder, and what is in it, to a new or an "
                                                  "existing collection", self)
        self.add_files_button = described_button("Add f&iles…", "Add files to a new or an existing collection", self)
        self.update_button = described_button("&Update", "Read again what changed in the selected collection's folders "
                                              "and files", self)
        self.cancel_button = described_button("&Cancel", "Stop indexing the selected collection; what is done stays", self)
        self.remove_button = described_button("&Remove…", "Remove the selected collection from Hearth; its files stay "
                                              "as they are", self)

        self.roots = QListWidget()
        self.roots.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.roots.setAccessibleName("Folders and files of the selected collection")
        roots_caption = QLabel("Fol&ders and files it reads:")
        roots_caption.setBuddy(self.roots)
        self.remove_root_button = described_button("Remo&ve folder", "The selected collection no longer reads the "
                                                   "selected folder or file; its files leave the collection", self)
        self.failures = QTableWidget(0, 2, self)
        self.failures.setHorizontalHeaderLabels(["File", "Why it was not read"])
        as_row_list(self.failures)
        self.failures.horizontalHeader().setStretchLastSection(True)
        self.failures.setColumnWidth(0, 130)
        self.failures.setAccessibleName("Files that could not be read")
        self.failures.setAccessibleDescription("The selected collection's files that were skipped, and why. "
                                               "A file is tried again when it changes.")
        failures_caption = QLabel("Files that could not be r&ead:")
        failures_caption.setBuddy(self.failures)

        self.options = DocumentsOptions(library)

        self.problem_label = QLabel()
        self.problem_label.setTextFormat(Qt.TextFormat.PlainText)  # it quotes names, paths and errors
        self.problem_label.setWordWrap(True)
        self.problem_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.problem_label.setAccessibleName("Documents problem")
        set_tone(self.problem_label, Tone.ERROR)
        self.problem_label.hide()

        progress_row = QHBoxLayout()
        progress_row.addWidget(self.progress_label, 1)
        progress_row.addWidget(self.progress_bar)
        buttons = QHBoxLayout()
        for button in (self.add_folder_button, self.add_files_button, self.update_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.remove_button)
        details = QGridLayout()
        details.addWidget(roots_caption, 0, 0)
        details.addWidget(failures_caption, 0, 1)
        details.addWidget(self.roots, 1, 0)
        details.addWidget(self.failures, 1, 1)
        details.addWidget(self.remove_root_button, 2, 0, Qt.AlignmentFlag.AlignLeft)
        details.setColumnStretch(0, 2)
        details.setColumnStretch(1, 3)
        details.setRowStretch(1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(explanation)
        layout.addWidget(self.problem_label)
        layout.addWidget(table_caption)
        layout.addWidget(self.table, 2)
        layout.addLayout(progress_row)
        layout.addLayout(buttons)
        layout.addLayout(details, 1)
        layout.addWidget(self.options)

        self.add_folder_button.clicked.connect(lambda: self._choose_paths(folder=True))
        self.add_files_button.clicked.connect(lambda: self._choose_paths(folder=False))
        self.update_button.clicked.connect(self._update)
        self.cancel_button.clicked.connect(self._cancel)
        self.remove_button.clicked.connect(self._remove)
        self.remove_root_button.clicked.connect(self._remove_root)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.roots.itemSelectionChanged.connect(self._enable)
        self.table.installEventFilter(self)
        library.collectionsChanged.connect(self._set_summaries)
        library.indexingChanged.connect(self._set_indexing)
        library.progress.connect(self._show_progress)
        library.indexed.connect(self._ended)
        library.problem.connect(self.show_problem)
        self._set_summaries(library.summaries)
        self._set_indexing(library.indexing())

    # -- what the page shows ------------------------------------------------------------------

    def selected_name(self) -> str | None:
        """The selected collection's name, None when none is."""
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        item = self.table.item(rows[0].row(), NAME)
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def show_problem(self, text: str) -> None:
        """The newest problem, in the label above the table (empty: none), and said at once to a
        screen reader while the page is shown."""
        self.problem_label.setText(shorten(text, 600))
        self.problem_label.setVisible(bool(text))
        if text and self.isVisible():
            announce(self, self.problem_label.text(), urgent=True)

    def _set_summaries(self, summaries) -> None:
        self._summaries = {summary.name: summary for summary in summaries}
        self._fill()

    def _set_indexing(self, names) -> None:
        before = self._indexing[0] if self._indexing else None
        self._indexing = tuple(names)
        running = self._indexing[0] if self._indexing else None
        if running is not None and running != before:
            self._steps.pop(running, None)
            self._heard[running] = 0
            if self.isVisible():
                announce(self, f"Indexing {words.quoted(running)}")
        self._fill()

    def _rows(self) -> list[str]:
        """The collections' names, by name, then those being made by a first run not read back yet."""
        return sorted(self._summaries) + [name for name in self._indexing if name not in self._summaries]

    def _fill(self) -> None:
        selected = self._select or self.selected_name()
        names = self._rows()
        self.table.setRowCount(len(names))
        for row, name in enumerate(names):
            summary = self._summaries.get(name)
            stats = summary.stats if summary is not None else None
            cells = {NAME: shorten(name, words.NAME_CHARS),
                     FILES: f"{stats.files:,}" if stats else "", CHUNKS: f"{stats.chunks:,}" if stats else "",
                     FAILED: f"{stats.failed:,}" if stats else "",
                     FOLDERS: words.roots_words(summary.roots) if summary else ""}
            for column, text in cells.items():
                self.table.setItem(row, column, self._item(text, numeric=column in (FILES, CHUNKS, FAILED)))
            self.table.item(row, NAME).setData(Qt.ItemDataRole.UserRole, name)
            self.table.item(row, NAME).setToolTip(plain_tooltip(name))
            if summary is not None and summary.roots:
                self.table.item(row, FOLDERS).setToolTip(plain_tooltip("\n".join(map(str, summary.roots))))
            if stats is not None and stats.failed:
                self.table.item(row, FAILED).setForeground(error_color(self.palette()))
            self.table.setItem(row, STATE, self._state_item(name))
        if selected in names:
            self._select = None
            self.table.selectRow(names.index(selected))
        elif names:
            self.table.selectRow(0)
        self._show_running()
        self._selection_changed()

    def _item(self, text: str, numeric: bool = False) -> QTableWidgetItem:
        item = QTableWidgetItem(text)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
        if numeric:
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return item

    def _state_item(self, name: str) -> QTableWidgetItem:
        running = bool(self._indexing) and self._indexing[0] == name
        text = words.state_words(self._summaries.get(name), running, name in self._indexing[1:], self._steps.get(name))
        item = self._item(text)
        if text == words.UNFINISHED:
            item.setToolTip(words.UNFINISHED_TIP)
        return item

    def _show_running(self) -> None:
        """The progress bar and its line, for the collection being indexed; hidden when none is."""
        running = self._indexing[0] if self._indexing else None
        self.progress_label.setVisible(running is not None)
        self.progress_bar.setVisible(running is not None)
        if running is None:
            return
        step = self._steps.get(running)
        line = words.running_words(running, step)
        waiting = len(self._indexing) - 1
        self.progress_label.setText(line + (f" ({waiting:,} more waiting)" if waiting else ""))
        self.progress_bar.setAccessibleDescription(line)
        if step is None:
            self.progress_bar.setRange(0, 0)  # busy: the files are being listed
        else:
            self.progress_bar.setRange(0, max(step.total, 1))
            self.progress_bar.setValue(step.done)

    def _show_progress(self, name: str, step: Progress) -> None:
        self._steps[name] = step
        if name in self._rows():
            self.table.setItem(self._rows().index(name), STATE, self._state_item(name))
        if self._indexing and self._indexing[0] == name:
            self._show_running()
            quarter = step.done * QUARTERS // step.total if step.total else 0
            if 0 < quarter < QUARTERS and quarter > self._heard.get(name, 0):
                self._heard[name] = quarter
                if self.isVisible():
                    announce(self, words.running_words(name, step))

    def _ended(self, name: str, report: IndexReport) -> None:
        """A run ended: said to a screen reader while the page is shown (the status bar says it
        otherwise); a run's failures show in the list under the table."""
        last = self._steps.pop(name, None)
        self._heard.pop(name, None)
        if self.isVisible():
            announce(self, words.ended_words(name, report, self._summaries.get(name), last))

    def _selection_changed(self) -> None:
        """The selected collection's folders and failed files, under the table."""
        summary = self._summaries.get(self.selected_name() or "")
        chosen = self.roots.selectedItems()
        chosen_root = chosen[0].data(Qt.ItemDataRole.UserRole) if chosen else None
        self.roots.clear()
        for root in summary.roots if summary is not None else ():
            item = QListWidgetItem(words.path_words(root))
            item.setData(Qt.ItemDataRole.UserRole, str(root))
            item.setToolTip(plain_tooltip(str(root)))
            self.roots.addItem(item)
            if str(root) == chosen_root:
                self.roots.setCurrentItem(item)
        failures = summary.failures if summary is not None else ()
        self.failures.setRowCount(len(failures))
        for row, failed in enumerate(failures):
            file, reason = self._item(printable(failed.path.name, None)), self._item(shorten(failed.reason, 200))
            file.setToolTip(plain_tooltip(str(failed.path)))
            reason.setToolTip(plain_tooltip(failed.reason))
            self.failures.setItem(row, 0, file)
            self.failures.setItem(row, 1, reason)
        self._enable()

    def _enable(self) -> None:
        name = self.selected_name()
        known = name in self._summaries
        running = bool(self._indexing) and self._indexing[0] == name
        self.update_button.setEnabled(known and name not in self._indexing)
        self.cancel_button.setEnabled(name is not None and name in self._indexing)
        self.remove_button.setEnabled(known or running)  # one still waiting is not made yet: Cancel it
        self.remove_root_button.setEnabled(known and bool(self.roots.selectedItems()))

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._fill()  # the failed counts' red
        super().changeEvent(event)

    # -- what the user asks -------------------------------------------------------------------

    def _choose_paths(self, folder: bool) -> None:
        """Add folder… / Add files…: the chooser, then the collection's name."""
        dialog = QFileDialog(self, "Add a folder to a collection" if folder else "Add files to a collection")
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        if folder:
            dialog.setFileMode(QFileDialog.FileMode.Directory)
            dialog.setOption(QFileDialog.Option.ShowDirsOnly)
        else:
            dialog.setFileMode(QFileDialog.FileMode.ExistingFiles)
            dialog.setNameFilters([DOCUMENT_FILTER, "All files (*)"])
        dialog.filesSelected.connect(lambda chosen: self._ask_name([Path(path) for path in chosen], folder))
        dialog.finished.connect(lambda _result: setattr(self, "file_dialog", None))
        self.file_dialog = dialog
        dialog.open()

    def _ask_name(self, paths: list[Path], folder: bool) -> None:
        """Which collection they go into: the folder's name (for files, the selected collection's,
        else their folder's) unless the user says another; the collections there are offered."""
        if not paths:
            return
        selected = self.selected_name()
        default = paths[0].name if folder or selected is None else selected
        default = default or str(paths[0])  # a drive or / has no name of its own
        others = [name for name in [selected, *sorted(self._summaries)] if name and name != default]
        dialog = QInputDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.setWindowTitle("Add to a collection")
        dialog.setLabelText(NAME_QUESTION)
        dialog.setComboBoxItems([default, *dict.fromkeys(others)])
        dialog.setComboBoxEditable(True)
        dialog.setTextValue(default)
        dialog.textValueSelected.connect(lambda name: self._add(name, paths))
        dialog.finished.connect(lambda _result: setattr(self, "name_dialog", None))
        self.name_dialog = dialog
        dialog.open()

    def _add(self, name: str, paths: list[Path]) -> None:
        name = name.strip()
        if not name:
            self.show_problem(NO_NAME)
            return
        self.show_problem("")
        self._select = name  # its row appears at once (indexingChanged), and is selected
        self.library.add(name, paths)

    def _update(self) -> None:
        if (name := self.selected_name()) is not None:
            self.show_problem("")
            self.library.update(name)

    def _cancel(self) -> None:
        if (name := self.selected_name()) is not None:
            self.library.cancel(name)

    def _remove(self) -> None:
        name = self.selected_name()
        if name is None or not self.remove_button.isEnabled():
            return
        if ask(self, "Remove collection", f"Remove the collection {words.quoted(name)}? What Hearth read of it is "
               "deleted, and conversations no longer get sources from it. The files themselves stay as they are."):
            self.library.remove(name)

    def _remove_root(self) -> None:
        name, items = self.selected_name(), self.roots.selectedItems()
        if name is not None and items:
            self.library.remove_root(name, Path(items[0].data(Qt.ItemDataRole.UserRole)))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Delete in the table removes the selected collection (after asking)."""
        if (watched is self.table and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent)
                and event.key() == Qt.Key.Key_Delete):
            self._remove()
            return True
        return False
