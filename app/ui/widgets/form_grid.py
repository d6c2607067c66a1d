"""Label-and-field rows on a grid, for panels whose fields hold word-wrapped text.

QFormLayout gives a word-wrapped label in its field column too little height in a narrow
scrolling side panel (the Parameters panel's GPU note and template name were cut off), since
it works out row heights for another field width than the one it lays out. QGridLayout
asks each wrapped label's height for the width it really gets.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

LABEL, FIELD = 0, 1


class FormGrid(QGridLayout):
    """Rows of a label and its field, and rows that span both columns."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setColumnStretch(FIELD, 1)

    def add_row(self, label: QWidget, field: QWidget, alignment: Qt.AlignmentFlag = Qt.AlignmentFlag(0)) -> None:
        """`label` names `field`: a QLabel becomes its buddy (screen readers and Alt+letter reach
        the field); another widget (a tick box that switches the field on) stands beside it.
        `alignment` keeps the field at its own width (a button) instead of the column's."""
        row = self.rowCount()
        if isinstance(label, QLabel):
            label.setBuddy(field)
        self.addWidget(label, row, LABEL, Qt.AlignLeft | Qt.AlignVCenter)
        self.addWidget(field, row, FIELD, alignment)

    def add_field(self, field: QWidget) -> None:
        """A field under the one above, in the field column (a note about that field)."""
        self.addWidget(field, self.rowCount(), FIELD)

    def add_wide(self, widget: QWidget) -> None:
        """A row across both columns."""
        self.addWidget(widget, self.rowCount(), LABEL, 1, 2)
