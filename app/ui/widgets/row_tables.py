"""Tables read as lists of rows (the model list, Hub search results, suggestions): one way to
set them up, so they behave the same to the mouse, the keyboard and a screen reader."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QTableView


def as_row_list(table: QTableView) -> None:
    """One whole row selected at a time, read-only, no grid, alternating rows, no row numbers,
    unwrapped cells; Tab leaves the table (the arrows move in it), so it is no keyboard trap."""
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setTabKeyNavigation(False)
    table.setShowGrid(False)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    table.verticalHeader().hide()
    table.horizontalHeader().setHighlightSections(False)
