"""Message boxes whose text is shown as written. QMessageBox's static helpers guess whether a
text is HTML (Qt.AutoText) and render it if it looks so; a text that carries a server's name or
a file's contents must never be rendered, so these set Qt.PlainText."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


def _box(parent: QWidget | None, icon: QMessageBox.Icon, title: str, text: str) -> QMessageBox:
    box = QMessageBox(icon, title, text, QMessageBox.StandardButton.NoButton, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    return box


def ask(parent: QWidget | None, title: str, text: str) -> bool:
    """Yes or No, No by default; True for Yes."""
    box = _box(parent, QMessageBox.Icon.Question, title, text)
    box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
    box.setDefaultButton(QMessageBox.StandardButton.No)
    return box.exec() == QMessageBox.StandardButton.Yes


def tell(parent: QWidget | None, title: str, text: str, warning: bool = False) -> None:
    box = _box(parent, QMessageBox.Icon.Warning if warning else QMessageBox.Icon.Information, title, text)
    box.setStandardButtons(QMessageBox.StandardButton.Ok)
    box.exec()
