"""Get models' suggestions: the curated small instruct models, each marked as fitting or not.

Shown before any search and whenever Hugging Face can't be reached, so a new user always has
a few good models to choose from. The entries come from Hearth's own data file
(`app.library.curated`); whether each fits is worked out here, for this machine's free
memory now (and the GPU's, once the view knows it).
"""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

from ...common.units import byte_size
from ...library.curated import CuratedModel
from ..widgets.colors import muted_color
from ..widgets.row_tables import as_row_list
from ..widgets.tooltips import plain_tooltip
from .hub_lists import fit_text

CURATED_ROLE = Qt.UserRole  # the CuratedModel behind a row


class CuratedColumn(IntEnum):
    MODEL = 0
    PARAMETERS = 1
    SIZE = 2
    FITS = 3
    LICENCE = 4


_HEADERS = {
    CuratedColumn.MODEL: ("Model", "A small, well-known model tuned to follow instructions and chat"),
    CuratedColumn.PARAMETERS: ("Params", "How many parameters (weights) the model has"),
    CuratedColumn.SIZE: ("Size", "About how big the recommended file is"),
    CuratedColumn.FITS: ("Fits?", "Whether the model and room for its context fit this machine's free memory"),
    CuratedColumn.LICENCE: ("Licence", "The terms the model's makers publish it under"),
}


class CuratedModelsTable(QTableWidget):
    """The suggestions, one a row; choosing one is the view's cue to list its repository."""

    def __init__(self, parent=None):
        super().__init__(0, len(CuratedColumn), parent)
        self.setHorizontalHeaderLabels([_HEADERS[c][0] for c in CuratedColumn])
        for column in CuratedColumn:
            self.horizontalHeaderItem(column).setToolTip(_HEADERS[column][1])
        as_row_list(self)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        # The names whole; the licence, the longest and least needed, takes what is left (elided).
        self.horizontalHeader().setSectionResizeMode(CuratedColumn.LICENCE, QHeaderView.Stretch)
        self.setTextElideMode(Qt.ElideRight)
        self.setAccessibleName("Suggested models")
        self.setAccessibleDescription("Small instruct models that run on an ordinary computer. "
                                      "Choosing one lists its files for download.")

    def show_models(self, models: list[CuratedModel], vram_bytes: int | None) -> None:
        """Replace the rows with `models`, marked for `vram_bytes` of GPU memory (None: none)."""
        selected = self.selected_model()
        self.setRowCount(len(models))
        for row, model in enumerate(models):
            fits, usable, fit_tip = fit_text(model.size_bytes, vram_bytes)
            tip = plain_tooltip(f"{model.summary}\n\n{model.repo_id} · {model.file}\n"
                                f"{model.context_length:,} tokens of context · {model.licence}")
            cells = {
                CuratedColumn.MODEL: model.name,
                CuratedColumn.PARAMETERS: model.parameters,
                CuratedColumn.SIZE: byte_size(model.size_bytes, decimals=1),
                CuratedColumn.FITS: fits,
                CuratedColumn.LICENCE: model.licence,
            }
            for column, text in cells.items():
                item = QTableWidgetItem(text)
                item.setData(CURATED_ROLE, model)
                item.setToolTip(plain_tooltip(fit_tip) if column == CuratedColumn.FITS else tip)
                if column in (CuratedColumn.PARAMETERS, CuratedColumn.SIZE):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if not usable:
                    item.setForeground(muted_color(QGuiApplication.palette()))
                self.setItem(row, column, item)
            if model == selected:
                self.selectRow(row)

    def selected_model(self) -> CuratedModel | None:
        rows = self.selectionModel().selectedRows()
        return self.item(rows[0].row(), CuratedColumn.MODEL).data(CURATED_ROLE) if rows else None
