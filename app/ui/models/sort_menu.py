"""A keyboard path to a table's sorting: View → Sort models by.

Qt sorts a table when its header is clicked, and its header never takes the keyboard focus, so
without this menu sorting is for mouse users only. The menu lists the table's columns by their
header text, one checked: the column the table is sorted by. Choosing it again reverses the
order; "Order found" goes back to the unsorted order. A header click checks its column here
too, so the two always agree.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QTableView, QWidget

UNSORTED = "Order found"


def sort_menu(title: str, table: QTableView, parent: QWidget) -> QMenu:
    """A menu sorting `table` (sorting enabled, its header's sort indicator clearable) by each
    of its model's columns; the model's header text names them."""
    menu = QMenu(title, parent)
    group = QActionGroup(menu)
    group.setExclusive(True)
    header = table.horizontalHeader()
    model = table.model()
    by_column: dict[int, QAction] = {}

    unsorted = QAction(UNSORTED, menu)
    unsorted.setCheckable(True)
    unsorted.setStatusTip("The order before any sorting: the order the rows were found in")
    unsorted.triggered.connect(lambda _checked=False: header.setSortIndicator(-1, Qt.AscendingOrder))
    group.addAction(unsorted)
    menu.addAction(unsorted)
    menu.addSeparator()
    for column in range(model.columnCount()):
        text = str(model.headerData(column, Qt.Horizontal, Qt.DisplayRole) or "").strip()
        if not text:
            continue
        action = QAction(text, menu)
        action.setCheckable(True)
        action.setStatusTip(f"Sort by {text}; choose it again to reverse the order")
        action.triggered.connect(lambda _checked=False, chosen=column: _sort_by(table, chosen))
        group.addAction(action)
        menu.addAction(action)
        by_column[column] = action

    def show_indicator(column: int, _order: Qt.SortOrder | None = None) -> None:
        (by_column.get(column) or unsorted).setChecked(True)

    header.sortIndicatorChanged.connect(show_indicator)
    show_indicator(header.sortIndicatorSection())
    return menu


def _sort_by(table: QTableView, column: int) -> None:
    """Sort by `column`, ascending; descending when it is already sorted by it ascending."""
    header = table.horizontalHeader()
    already = header.sortIndicatorSection() == column and header.sortIndicatorOrder() == Qt.AscendingOrder
    header.setSortIndicator(column, Qt.DescendingOrder if already else Qt.AscendingOrder)
