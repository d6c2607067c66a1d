"""The model list's view: a table that fits a narrow side panel and is driven from the keyboard.

* Columns are shown by usefulness as the width allows (no horizontal scrolling in a narrow
  panel); the name column always stays, and it shows two lines: the model's name and, under
  it, its file name, since one model often comes as several files with the same name.
* A file that can't be used carries a ⚠ marker in the name column, so it is marked at any
  width (the "⚠ can't be used" column is among the first to go when the panel narrows); so
  does a server that can't be listed. A server's model carries the style's network icon, and
  "remote · <server>" as its second line.
* The images column ("Reads images") is shown only when some row is a vision model (or has a
  projector that can't be used): most lists have none, and it would take room for nothing.
* Tab leaves the table (Qt's default moves between cells, a trap for keyboard users), and
  Enter or Return activates the current row, as a double-click does.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent, QPainter, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
)

from ..widgets.colors import muted_color
from ..widgets.row_tables import as_row_list
from .table import FILE_ROLE, REMOTE_ROLE, UNUSABLE_ROLE, Column

_LINE_GAP = 1


def _second_line(index: QModelIndex) -> str:
    """The file name; for a file that can't be used, whose name is on the first line, why."""
    reason = index.data(UNUSABLE_ROLE)
    return f"Can't be used: {reason}" if reason is not None else index.data(FILE_ROLE) or ""


def _marker(index: QModelIndex) -> QStyle.StandardPixmap | None:
    """The icon before a row's name: ⚠ for one that can't be used, a network drive for a
    server's model, none for a usable file."""
    if index.data(UNUSABLE_ROLE) is not None:
        return QStyle.StandardPixmap.SP_MessageBoxWarning
    return QStyle.StandardPixmap.SP_DriveNetIcon if index.data(REMOTE_ROLE) else None


class NameDelegate(QStyledItemDelegate):
    """Paints the name cell: a ⚠ for an unusable file or server (a network icon for a server's
    model), the name, and the file name under it (or where a remote model runs, or why a row
    can't be used)."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        super().initStyleOption(option, index)
        marker = _marker(index)
        if marker is not None:
            style = option.widget.style() if option.widget else QApplication.style()
            option.icon = style.standardIcon(marker)
            option.features |= QStyleOptionViewItem.ViewItemFeature.HasDecoration
            option.decorationSize = QSize(option.fontMetrics.height(), option.fontMetrics.height())

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        name, opt.text = opt.text, ""  # the background, selection, focus and ⚠ from the style
        widget = opt.widget
        style = widget.style() if widget else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)

        text_rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget).adjusted(2, 0, -2, 0)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        group = QPalette.ColorGroup.Normal if opt.state & QStyle.StateFlag.State_Enabled else QPalette.ColorGroup.Disabled
        main = opt.palette.color(group, QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        second = main if selected else muted_color(opt.palette)
        line = opt.fontMetrics.height()
        top = text_rect.top() + max(0, (text_rect.height() - 2 * line - _LINE_GAP) // 2)
        painter.save()
        painter.setFont(opt.font)
        painter.setPen(main)
        first = QRect(text_rect.left(), top, text_rect.width(), line)
        painter.drawText(first, Qt.AlignLeft | Qt.AlignVCenter,
                         opt.fontMetrics.elidedText(name, Qt.ElideMiddle, text_rect.width()))
        painter.setPen(second)
        painter.setFont(option.font)  # the file name is never bold, even on the loaded row
        metrics = option.fontMetrics
        below = QRect(text_rect.left(), top + line + _LINE_GAP, text_rect.width(), line)
        # A file name keeps its quantization at the end; a reason reads from its start.
        elide = Qt.ElideRight if index.data(UNUSABLE_ROLE) is not None else Qt.ElideMiddle
        painter.drawText(below, Qt.AlignLeft | Qt.AlignVCenter,
                         metrics.elidedText(_second_line(index), elide, text_rect.width()))
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        hint = super().sizeHint(option, index)
        file_width = option.fontMetrics.horizontalAdvance(index.data(FILE_ROLE) or "")  # a reason may elide
        icon = opt.decorationSize.width() + 4 if _marker(index) is not None else 0
        width = max(hint.width(), file_width + icon + 12)
        return QSize(width, max(hint.height(), 2 * opt.fontMetrics.height() + _LINE_GAP + 6))


class ModelTableView(QTableView):
    """Shows as many columns as fit its width, most useful first, so a narrow side panel
    gets no horizontal scrolling; the name takes what is left and the rest is elided.

    Signals:
        rowActivated(QModelIndex): Enter or Return was pressed on this row.
    """

    rowActivated = Signal(QModelIndex)

    PRIORITY = (Column.SIZE, Column.FIT, Column.IMAGES, Column.PARAMETERS, Column.QUANTIZATION, Column.TEMPLATE,
                Column.CONTEXT, Column.ARCHITECTURE, Column.FOLDER)
    SHOWN_WHEN_USED = (Column.IMAGES,)  # a column most lists leave empty: shown only where a row fills it
    NAME_MIN_WIDTH = 150
    FOLDER_MAX_WIDTH = 220

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setItemDelegateForColumn(Column.NAME, NameDelegate(self))
        as_row_list(self)
        self.setTextElideMode(Qt.ElideMiddle)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        header = self.horizontalHeader()
        header.setSortIndicatorClearable(True)
        header.setSortIndicator(-1, Qt.AscendingOrder)  # the scan's order until a header is clicked
        self.setSortingEnabled(True)

    def setModel(self, model) -> None:
        super().setModel(model)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.Fixed)
        self.horizontalHeader().setSectionResizeMode(Column.NAME, QHeaderView.Stretch)
        model.modelReset.connect(self.fit_columns)
        model.dataChanged.connect(self.fit_columns)  # the loaded row turns bold, and wider

    def _used(self, column: Column) -> bool:
        model = self.model()
        return any(model.index(row, column).data() for row in range(model.rowCount()))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key_Return, Qt.Key_Enter) and self.currentIndex().isValid():
            self.rowActivated.emit(self.currentIndex())
            event.accept()
            return
        super().keyPressEvent(event)

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
            fits = width <= room and (column not in self.SHOWN_WHEN_USED or self._used(column))
            self.setColumnHidden(column, not fits)
            if fits:
                header.resizeSection(column, width)
                room -= width
