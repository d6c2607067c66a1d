"""The keyboard shortcuts, defined once: the menus use them and Help → Shortcuts lists them."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTableWidget, QTableWidgetItem, QVBoxLayout

SHORTCUTS = {
    "new_chat": "Ctrl+N",
    "focus_input": "Ctrl+L",
    "stop": "Esc",
    "regenerate": "Ctrl+R",
    "add_model": "Ctrl+O",
}

DESCRIPTIONS = [
    ("Enter", "Send the message"),
    ("Shift+Enter", "New line in the message"),
    (SHORTCUTS["new_chat"], "New chat"),
    (SHORTCUTS["focus_input"], "Focus the message input"),
    (SHORTCUTS["stop"], "Stop the reply (the text so far is kept)"),
    (SHORTCUTS["regenerate"], "Regenerate the last reply"),
    (SHORTCUTS["add_model"], "Add a model file"),
    ("Ctrl+Shift+M", "Show or hide the model and parameters panel"),
    ("F1", "This list"),
]


class ShortcutsDialog(QDialog):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        table = QTableWidget(len(DESCRIPTIONS), 2)
        table.setHorizontalHeaderLabels(["Keys", "Action"])
        table.verticalHeader().hide()
        table.setEditTriggers(QTableWidget.NoEditTriggers)
        for row, (keys, action) in enumerate(DESCRIPTIONS):
            table.setItem(row, 0, QTableWidgetItem(keys))
            table.setItem(row, 1, QTableWidgetItem(action))
        table.resizeColumnsToContents()
        table.horizontalHeader().setStretchLastSection(True)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(table)
        layout.addWidget(buttons)
        self.resize(420, 340)
