"""What Hugging Face answered, on show: the table of search results and a repository's models.

The models are grouped by quantization, each with its download size and whether it fits
this machine's free RAM (or the GPU's memory, once the view knows it). A model that comes with
a projector (a vision model: quants.RemoteModel.projector) says "Reads images", and which
projector is downloaded with it; its size and fit count the projector too.
"""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
)

from ...common.units import byte_size
from ...library.hub import RepoSummary, memory_fit
from ...library.quants import RemoteModel, by_quant
from ..widgets.colors import muted_color
from ..widgets.row_tables import as_row_list
from ..widgets.tooltips import plain_tooltip

MODEL_ROLE = Qt.UserRole  # the RemoteModel behind a row of the models tree


class ResultColumn(IntEnum):
    REPO = 0
    DOWNLOADS = 1
    LIKES = 2
    UPDATED = 3
    ACCESS = 4


class ModelColumn(IntEnum):
    QUANT = 0
    FILE = 1
    SIZE = 2
    FITS = 3
    IMAGES = 4


_RESULT_HEADERS = {
    ResultColumn.REPO: ("Repository", "owner/name on Hugging Face"),
    ResultColumn.DOWNLOADS: ("Downloads", "Downloads in the last month"),
    ResultColumn.LIKES: ("Likes", "How many people liked the repository"),
    ResultColumn.UPDATED: ("Updated", "When the repository last changed"),
    ResultColumn.ACCESS: ("Access", "gated: you must accept its terms and enter an access token to download"),
}
_MODEL_HEADERS = {
    ModelColumn.QUANT: ("Quant", "How the weights are compressed; Q4_K_M is a good balance, Q8_0 is near-lossless"),
    ModelColumn.FILE: ("File", "The file Hearth will load (the first part of a split model)"),
    ModelColumn.SIZE: ("Size", "Download size (with the projector, for a model that reads images)"),
    ModelColumn.FITS: ("Fits?", "Whether the model and room for its context fit this machine's free memory"),
    ModelColumn.IMAGES: ("Images", "Reads images: the repository has a projector (mmproj file), downloaded "
                                   "with the model into the same folder"),
}
READS_IMAGES = "Reads images"


def fit_text(size: int, vram_bytes: int | None) -> tuple[str, bool, str]:
    """The fits marker for a model of `size` bytes: (text, fits somewhere, tooltip)."""
    fit = memory_fit(size, vram_bytes)
    needs = f"Needs about {byte_size(fit.needed_bytes, decimals=1)} of memory: the file plus room for the context."
    if fit.fits_vram:
        return "✓ fits in VRAM", True, needs
    if fit.fits_ram:
        return "✓ fits in RAM", True, needs + (" Too big for the GPU's memory." if fit.fits_vram is False else "")
    return "too large for this machine", False, needs + " That is more than this machine has free now."


class SearchResultsTable(QTableWidget):
    """Repositories found by a search, one a row; choosing one is the view's cue to list it."""

    def __init__(self, parent=None):
        super().__init__(0, len(ResultColumn), parent)
        self.setHorizontalHeaderLabels([_RESULT_HEADERS[c][0] for c in ResultColumn])
        for column in ResultColumn:
            self.horizontalHeaderItem(column).setToolTip(_RESULT_HEADERS[column][1])
        as_row_list(self)
        self.setTextElideMode(Qt.ElideMiddle)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.horizontalHeader().setSectionResizeMode(ResultColumn.REPO, QHeaderView.Stretch)
        self.setAccessibleName("Search results")
        self.setAccessibleDescription("Repositories with GGUF models. Choosing one lists its model files.")

    def show_results(self, results: list[RepoSummary]) -> None:
        self.setRowCount(len(results))
        for row, result in enumerate(results):
            access = "private" if result.private else "gated" if result.gated else ""
            tooltip = result.repo_id + (f"\n{access}: downloading needs a Hugging Face access token that may "
                                        "open it" if access else "")
            cells = {
                ResultColumn.REPO: result.repo_id,
                ResultColumn.DOWNLOADS: f"{result.downloads:,}",
                ResultColumn.LIKES: f"{result.likes:,}",
                ResultColumn.UPDATED: result.last_modified.strftime("%Y-%m-%d") if result.last_modified else "",
                ResultColumn.ACCESS: access,
            }
            for column, text in cells.items():
                item = QTableWidgetItem(text)
                if column in (ResultColumn.DOWNLOADS, ResultColumn.LIKES):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                item.setToolTip(plain_tooltip(tooltip))
                self.setItem(row, column, item)

    def select_repo(self, repo_id: str) -> None:
        """Choose the row of `repo_id` (as typed: any case), if it is on show."""
        for row in range(self.rowCount()):
            if self.item(row, ResultColumn.REPO).text().lower() == repo_id.lower():
                self.selectRow(row)
                return

    def selected_repo(self) -> str | None:
        rows = self.selectionModel().selectedRows()
        return self.item(rows[0].row(), ResultColumn.REPO).text() if rows else None


class RepoModelsTree(QTreeWidget):
    """A repository's models: one row per quantization, or a group where several share one."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setColumnCount(len(ModelColumn))
        self.setHeaderLabels([_MODEL_HEADERS[c][0] for c in ModelColumn])
        for column in ModelColumn:
            self.headerItem().setToolTip(column, _MODEL_HEADERS[column][1])
        self.setRootIsDecorated(True)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setTextElideMode(Qt.ElideMiddle)
        self.header().setStretchLastSection(False)
        self.header().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.header().setSectionResizeMode(ModelColumn.FILE, QHeaderView.Stretch)
        self.setAccessibleName("Model files")
        self.setAccessibleDescription("The chosen repository's models by quantization, with their size "
                                      "and whether they fit this machine. Download adds the selected one.")

    def show_models(self, models: list[RemoteModel], vram_bytes: int | None) -> None:
        """Replace what is on show with `models`, marked for `vram_bytes` of GPU memory (None: none)."""
        self.clear()
        for quant, group_models in by_quant(models).items():
            if len(group_models) == 1:
                self.addTopLevelItem(self._model_item(group_models[0], quant, vram_bytes))
                continue
            group = QTreeWidgetItem([quant, f"{len(group_models)} models"])
            group.setFlags(group.flags() & ~Qt.ItemIsSelectable)
            group.addChildren([self._model_item(model, "", vram_bytes) for model in group_models])
            self.addTopLevelItem(group)
            group.setExpanded(True)

    def selected_model(self) -> RemoteModel | None:
        items = self.selectedItems()
        return items[0].data(0, MODEL_ROLE) if items else None

    def select_file(self, file_name: str) -> bool:
        """Select (and make current) the model whose file is `file_name`; False if none is."""
        for item in self._model_items():
            if item.data(0, MODEL_ROLE).name == file_name:
                self.setCurrentItem(item)
                self.scrollToItem(item)
                return True
        return False

    def _model_items(self) -> list[QTreeWidgetItem]:
        """Every downloadable row, groups opened."""
        items = []
        for top in range(self.topLevelItemCount()):
            item = self.topLevelItem(top)
            for candidate in [item] + [item.child(i) for i in range(item.childCount())]:
                if candidate.data(0, MODEL_ROLE) is not None:
                    items.append(candidate)
        return items

    @staticmethod
    def _model_item(model: RemoteModel, quant: str, vram_bytes: int | None) -> QTreeWidgetItem:
        fits, usable, tooltip = fit_text(model.size, vram_bytes)
        projector = model.projector
        item = QTreeWidgetItem([quant, model.name, byte_size(model.size, decimals=1), fits,
                                READS_IMAGES if projector is not None else ""])
        item.setData(0, MODEL_ROLE, model)
        item.setTextAlignment(ModelColumn.SIZE, Qt.AlignRight | Qt.AlignVCenter)
        item.setToolTip(ModelColumn.FITS, tooltip)
        parts = f"{len(model.parts)} parts, loaded together:\n" if len(model.parts) > 1 else ""
        files = parts + "\n".join(part.path for part in model.parts)
        if projector is not None:
            with_it = (f"Downloaded with its projector {projector.path} ({byte_size(projector.size, decimals=1)}), "
                       f"saved beside it as {projector.name}: the model reads images.")
            files += "\n" + with_it
            item.setToolTip(ModelColumn.IMAGES, plain_tooltip(with_it))
        item.setToolTip(ModelColumn.FILE, plain_tooltip(files))
        if not usable:  # muted, still readable (4.5:1): it can be downloaded all the same
            muted = muted_color(QGuiApplication.palette())
            for column in ModelColumn:
                item.setForeground(column, muted)
        return item
