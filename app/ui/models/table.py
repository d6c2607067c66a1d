"""The model list's data: one row per GGUF file the scan found, then one per model each saved
server lists (or one for a server that could not be listed); what each cell says, how it sorts.

Kept apart from the view (`table_view.py`) and the picker widget so it can be tested and
re-filled without touching widgets. Several files often carry the same internal name (one
model in three quantizations), so every row also knows its file name (`FILE_ROLE`), which the
name column shows under the name; a remote row shows "remote · <server>" there, and is marked
(`REMOTE_ROLE`) for the view's server icon. Sorting goes through `SORT_ROLE`: the real numbers
(sizes, parameter counts, context lengths), not their display strings, where "4.9 GB" < "253 MB".
What a remote row shows is `remote_rows.py`'s.

The fit column says whether each file fits the free memory at its saved settings (a
`FitCell` per row key, made by the picker from ModelSession's memory plan); a server's model
has none (its memory is the server's).

The images column marks a vision model, one with its projector beside it (the scan pairs them:
library/projectors.py): "Reads images", naming the projector in its tooltip; a projector named
for the model that can't be used is marked ⚠ in the error colour, with why.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QFont, QGuiApplication

from ...common.text import printable
from ...common.units import byte_size
from ...engine.memory_plan import Fit
from ...engine.templates.chat_template import fallback_name
from ...engine.types import LocalModel, ModelSource, RemoteModel
from ...library import scan
from ...library.scan import ModelEntry
from ..widgets.colors import error_color, muted_color
from ..widgets.tooltips import plain_tooltip
from . import remote_rows
from .remote_rows import RemoteEntry

FILE_ROLE = Qt.UserRole  # the row's file name, as Qt can show it
SORT_ROLE = Qt.UserRole + 1  # the value a column sorts by
UNUSABLE_ROLE = Qt.UserRole + 2  # why the row's file can't be used, or None
REMOTE_ROLE = Qt.UserRole + 3  # True for a server's row
UNKNOWN = -1  # sorts a file with no figure (it can't be read) before every real one

Row = ModelEntry | RemoteEntry
RowKey = Path | str  # a file's resolved path, or a remote row's key


def row_key(item: Row | ModelSource | Path) -> RowKey:
    """One identity for a row and for what it loads: a file however it was reached (a link,
    the Hugging Face cache's snapshot names), a server's model by its address and id."""
    if isinstance(item, RemoteEntry):
        return item.key
    if isinstance(item, RemoteModel):
        return item.settings_key
    path = item.path if isinstance(item, (ModelEntry, LocalModel)) else Path(item)
    return scan.resolved(path)


def format_parameters(count: int) -> str:
    """268098176 -> "268M", 8030261248 -> "8B", 1543714304 -> "1.5B"."""
    if count >= 1e9:
        return f"{count / 1e9:.1f}".removesuffix(".0") + "B"
    if count >= 1e6:
        return f"{count / 1e6:.0f}M"
    return f"{count / 1e3:.0f}K"


class Column(IntEnum):
    NAME = 0
    ARCHITECTURE = 1
    PARAMETERS = 2
    QUANTIZATION = 3
    SIZE = 4
    CONTEXT = 5
    TEMPLATE = 6
    FOLDER = 7
    FIT = 8
    IMAGES = 9


@dataclass(frozen=True)
class FitCell:
    """What the fit column shows for one file: the verdict, its word, and the plan's numbers."""

    fit: Fit
    text: str
    tooltip: str


_HEADERS = {
    Column.NAME: ("Name", "The name the model's file gives itself, and under it the file's own name"),
    Column.ARCHITECTURE: ("Arch", "The model architecture (family)"),
    Column.PARAMETERS: ("Params", "How many parameters (weights) the model has"),
    Column.QUANTIZATION: ("Quant", "How the weights are compressed; Q4_K_M is a good balance, Q8_0 is near-lossless"),
    Column.SIZE: ("Size", "Size on disk (roughly the memory it needs, plus the context)"),
    Column.CONTEXT: ("Context", "The longest conversation, in tokens, the model was trained for"),
    Column.TEMPLATE: ("Template", "✓: the file has its own chat template. fallback: Hearth picks one by model family"),
    Column.FOLDER: ("Folder", "Where the file was found"),
    Column.FIT: ("Fit", "Whether the model fits the memory free now at its saved settings (context length, "
                        "KV cache type, GPU layers): fits, tight or does not fit; the numbers are in each tooltip"),
    Column.IMAGES: ("Images", "Reads images: a vision model, with its projector (an mmproj file) beside it"),
}
READS_IMAGES = "Reads images"
PROJECTOR_PROBLEM = "⚠ projector"
_NUMERIC = (Column.PARAMETERS, Column.SIZE, Column.CONTEXT)


def file_name(entry: ModelEntry) -> str:
    """The entry's file name as text Qt can show (see `shown_path`)."""
    return printable(entry.path.name, limit=None)


def shown_path(entry: ModelEntry) -> str:
    """The entry's path as text Qt can show: a name that is not valid UTF-8 keeps a "�" where
    Qt would silently drop its undecodable bytes, and control characters cannot split it."""
    return printable(str(entry.path), limit=None)


class ModelTableModel(QAbstractTableModel):
    """Scan results and server listings as table rows; unusable files and servers are muted,
    marked ⚠, with their reason."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._local: list[ModelEntry] = []
        self._remote: list[RemoteEntry] = []
        self._entries: list[Row] = []  # the files, then the servers' rows
        self._keys: list[RowKey] = []  # each row's key: data() compares it per cell
        self._current: RowKey | None = None
        self._fits: dict[RowKey, FitCell] = {}

    def set_fits(self, fits: dict[RowKey, FitCell]) -> None:
        """Each file's fit, by row key (a file without one shows nothing)."""
        self._fits = dict(fits)
        if self._entries:
            self.dataChanged.emit(self.index(0, Column.FIT), self.index(len(self._entries) - 1, Column.FIT))

    def set_entries(self, entries: list[ModelEntry]) -> None:
        """The files the scan found."""
        self._local = list(entries)
        self._fill()

    def set_remote(self, entries: list[RemoteEntry]) -> None:
        """The servers' rows."""
        self._remote = list(entries)
        self._fill()

    def _fill(self) -> None:
        self.beginResetModel()
        self._entries = [*self._local, *self._remote]
        self._keys = [row_key(entry) for entry in self._entries]
        self.endResetModel()

    def entries(self) -> list[ModelEntry]:
        """The files (a server's rows: `remote_entries`)."""
        return list(self._local)

    def remote_entries(self) -> list[RemoteEntry]:
        return list(self._remote)

    def entry(self, row: int) -> Row:
        return self._entries[row]

    def row_of(self, item: Row | ModelSource | Path) -> int | None:
        """The row of a file (by path or source), or of a server's model or server."""
        wanted = row_key(item)
        return next((row for row, key in enumerate(self._keys) if key == wanted), None)

    def set_current(self, current: ModelSource | Path | None) -> None:
        """Mark the loaded model (bold), so the list shows which one the chat is using."""
        self._current = row_key(current) if current is not None else None
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
        remote = isinstance(entry, RemoteEntry)
        if column == Column.FIT:
            return self._fit_data(index.row(), role)
        if column == Column.IMAGES and not remote and role in (Qt.ToolTipRole, Qt.AccessibleTextRole, Qt.ForegroundRole):
            return _images_data(entry, role)
        if role == Qt.DisplayRole:
            return _remote_cell_text(entry, column) if remote else _cell_text(entry, column)
        if role == SORT_ROLE:
            return _remote_sort_key(entry, column) if remote else _sort_key(entry, column)
        if role == FILE_ROLE:
            return entry.location if remote else file_name(entry)
        if role == UNUSABLE_ROLE:
            return entry.error
        if role == REMOTE_ROLE:
            return remote
        if role == Qt.ToolTipRole:
            return remote_rows.tooltip(entry) if remote else _tooltip(entry, column)
        if role == Qt.AccessibleTextRole and column == Column.NAME:
            if remote:
                return remote_rows.accessible_text(entry)
            # What a screen reader says for the row's first cell: the name, the file, and the
            # marker that sighted users see as ⚠.
            text = f"{entry.name}, file {file_name(entry)}" if entry.usable else file_name(entry)
            if entry.reads_images:
                text += ", reads images"
            return text if entry.usable else f"{text}, can't be used"
        if role == Qt.AccessibleDescriptionRole and not entry.usable:
            return entry.error if remote else f"This file can't be loaded: {entry.error}"
        if role == Qt.ForegroundRole and not entry.usable:
            return muted_color(QGuiApplication.palette())
        if role == Qt.FontRole and self._current is not None and self._keys[index.row()] == self._current:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.TextAlignmentRole and column in _NUMERIC:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        if role == Qt.TextAlignmentRole and column == Column.TEMPLATE:
            return int(Qt.AlignCenter)
        return None


    def _fit_data(self, row: int, role: int):
        """The fit column: the verdict's word, its plan in the tooltip, red when it does not fit;
        sorted from fitting to not."""
        cell = self._fits.get(self._keys[row])
        if role == Qt.DisplayRole:
            return cell.text if cell else ""
        if role == SORT_ROLE:
            return float(list(Fit).index(cell.fit) if cell else UNKNOWN)
        if role == Qt.ToolTipRole and cell is not None:
            return plain_tooltip(cell.tooltip)
        if role == Qt.ForegroundRole and cell is not None and cell.fit is Fit.DOES_NOT_FIT:
            return error_color(QGuiApplication.palette())
        if role == Qt.FontRole and self._current is not None and self._keys[row] == self._current:
            font = QFont()
            font.setBold(True)
            return font
        return None


def _images_data(entry: ModelEntry, role: int):
    """The images column's tooltip, spoken text and colour: which projector reads images for
    the model, or why the one named for it can't."""
    if entry.projector is not None:
        if role == Qt.ToolTipRole:
            return plain_tooltip(f"{entry.name} reads images with its projector "
                                 f"{printable(entry.projector.name, limit=None)}, beside it.")
        return READS_IMAGES if role == Qt.AccessibleTextRole else None
    if entry.projector_problem is not None:
        if role == Qt.ToolTipRole:
            return plain_tooltip(f"It can't read images: {entry.projector_problem}")
        if role == Qt.AccessibleTextRole:
            return f"Can't read images: {entry.projector_problem}"
        return error_color(QGuiApplication.palette())
    return None


def sorting_proxy(model: ModelTableModel) -> QSortFilterProxyModel:
    """The table as the view shows it: sorted by the clicked column's real values."""
    proxy = QSortFilterProxyModel(model)
    proxy.setSourceModel(model)
    proxy.setSortRole(SORT_ROLE)
    proxy.setSortCaseSensitivity(Qt.CaseInsensitive)
    return proxy


def _cell_text(entry: ModelEntry, column: Column) -> str:
    info = entry.info
    if column == Column.NAME:
        return entry.name
    if column == Column.FOLDER:
        return entry.origin
    if column == Column.SIZE:
        return byte_size(entry.size)
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
    if column == Column.IMAGES:
        return READS_IMAGES if entry.reads_images else PROJECTOR_PROBLEM if entry.projector_problem else ""
    return "✓" if info.has_chat_template else "fallback"


def _remote_cell_text(entry: RemoteEntry, column: Column) -> str:
    if column == Column.NAME:
        return entry.name
    if column == Column.FOLDER:
        return entry.server_name
    if not entry.usable:
        return "⚠ can't be used" if column == Column.ARCHITECTURE else ""
    if column == Column.ARCHITECTURE:
        return "remote"
    if column == Column.CONTEXT:
        return remote_rows.context_text(entry)
    if column == Column.TEMPLATE:
        return "server"
    if column == Column.IMAGES:
        return ""  # the server's to say, when a message with images reaches it
    return remote_rows.NOT_GIVEN  # parameters, quantization, size: the server's business


def _remote_sort_key(entry: RemoteEntry, column: Column) -> float | str:
    """As `_sort_key`: a remote row has no size or parameter count (it sorts as unknown)."""
    if column == Column.NAME:
        return f"{entry.name.casefold()}\t{entry.location.casefold()}"
    if column in (Column.SIZE, Column.PARAMETERS, Column.IMAGES):
        return float(UNKNOWN)
    if column == Column.CONTEXT:
        return float(entry.model.context_length or UNKNOWN if entry.model else UNKNOWN)
    return _remote_cell_text(entry, column).casefold()


def _sort_key(entry: ModelEntry, column: Column) -> float | str:
    """What `column` sorts by: numbers as numbers; a name, then its file name, as text.

    Numbers are floats: a Python int past 2³¹ reaches Qt as another type than a smaller one,
    and values of two types are compared as text, which puts 4.9 GB before 900 MB."""
    info = entry.info
    if column == Column.NAME:
        return f"{entry.name.casefold()}\t{file_name(entry).casefold()}"
    if column == Column.SIZE:
        return float(entry.size)
    if column == Column.PARAMETERS:
        return float(info.parameter_count if info else UNKNOWN)
    if column == Column.CONTEXT:
        return float(info.context_length or UNKNOWN if info else UNKNOWN)
    if column == Column.IMAGES:  # reads images, then a projector that can't, then none
        return float(2 if entry.reads_images else 1 if entry.projector_problem else 0)
    return _cell_text(entry, column).casefold()


def summary(entry: ModelEntry) -> str:
    """Every column in one line, for the selected model: a narrow panel hides some columns."""
    info = entry.info
    context = f"{info.context_length:,} tokens of context" if info.context_length else "context length unknown"
    template = "its own chat template" if info.has_chat_template else f"“{fallback_name(info)}” fallback template"
    images = " · reads images" if entry.reads_images else ""
    return (f"{info.architecture} · {format_parameters(info.parameter_count)} parameters · {info.quantization} · "
            f"{byte_size(entry.size)} · {context} · {template}{images} · in {entry.origin}")


def _tooltip(entry: ModelEntry, column: Column) -> str:
    if entry.info is None:
        return plain_tooltip(f"{shown_path(entry)}\n\nThis file can't be loaded: {entry.error}")
    if column == Column.TEMPLATE and not entry.info.has_chat_template:
        return plain_tooltip(f"The file has no chat template; Hearth uses its “{fallback_name(entry.info)}” format.")
    return plain_tooltip(shown_path(entry))
