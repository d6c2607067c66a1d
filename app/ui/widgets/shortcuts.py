"""The keyboard shortcuts: defined once here, given to the window's actions, and listed by
Help → Keyboard shortcuts from those actions themselves (their text and their keys), so the
list cannot leave one out. Keys that are not actions (Enter in the message box, Delete in the
conversation list, …) are listed from KEYS_WITHOUT_ACTIONS."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QDialog, QDialogButtonBox, QTableWidget, QTableWidgetItem, QVBoxLayout

from .focus_ring import FocusRing

SHORTCUTS = {
    "new_chat": "Ctrl+N",
    "focus_input": "Ctrl+L",
    "stop": "Esc",
    "regenerate": "Ctrl+R",
    "previous_version": "Alt+Left",
    "next_version": "Alt+Right",
    "branch": "Ctrl+Shift+B",
    "add_model": "Ctrl+O",
    "get_models": "Ctrl+Shift+G",
    "side_panel": "Ctrl+Shift+M",
    "conversations_panel": "Ctrl+Shift+L",
    "undo_delete": "Ctrl+Z",
    "settings": "Ctrl+,",  # QKeySequence.Preferences is bound on macOS only
    "shortcuts": "F1",
}

KEYS_WITHOUT_ACTIONS = [
    ("Enter", "Send the message (in the message box)"),
    ("Shift+Enter", "New line in the message"),
    ("Tab, Shift+Tab", "Move between the message box, the chat, the side panel and the conversations"),
    ("F2", "Rename the selected conversation (in the list)"),
    ("Delete", "Delete the selected conversation (in the list; Undo brings it back)"),
    ("Menu, Shift+F10", "The selected conversation's menu (in the list)"),
]


def shortcut_rows(actions: Iterable[QAction]) -> list[tuple[str, str]]:
    """(keys, what they do) for each action that has keys, then the keys that are not actions."""
    rows = []
    for action in actions:
        keys = ", ".join(sequence.toString(QKeySequence.SequenceFormat.NativeText) for sequence in action.shortcuts())
        if keys:
            rows.append((keys, action.text().replace("&", "").removesuffix("…")))
    return rows + KEYS_WITHOUT_ACTIONS


class ShortcutsDialog(QDialog):
    def __init__(self, rows: list[tuple[str, str]], parent=None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # one is made at each F1
        FocusRing(self)
        self.table = QTableWidget(len(rows), 2)
        self.table.setAccessibleName("Keyboard shortcuts")
        self.table.setHorizontalHeaderLabels(["Keys", "Action"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table for Close, not cell by cell
        for row, (keys, action) in enumerate(rows):
            self.table.setItem(row, 0, QTableWidgetItem(keys))
            self.table.setItem(row, 1, QTableWidgetItem(action))
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setStretchLastSection(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(560, 460)

    def rows(self) -> list[tuple[str, str]]:
        return [(self.table.item(row, 0).text(), self.table.item(row, 1).text()) for row in range(self.table.rowCount())]
