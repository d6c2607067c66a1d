"""A button's menu worked from the keyboard, as a user does: Space opens it (the call returns
when it closes), the keys are pressed in it, and Esc closes it if they left it open. The tools
and documents buttons' tests share it."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMenu, QWidget


def in_menu(qtbot, picker: QWidget, keys: list[Qt.Key], seen: list | None = None) -> None:
    """Open the button's menu with the keyboard, press `keys` in it, then Esc if it is still
    open (`seen` gets whether it was)."""

    def press():
        menu = QApplication.activePopupWidget()
        if not isinstance(menu, QMenu):
            QTimer.singleShot(20, press)
            return
        for key in keys:
            qtbot.keyClick(menu, key)
        if seen is not None:
            seen.append(menu.isVisible())
        if menu.isVisible():
            qtbot.keyClick(menu, Qt.Key.Key_Escape)

    picker.setFocus()
    QTimer.singleShot(0, press)
    qtbot.keyClick(picker, Qt.Key.Key_Space)  # opens the menu; returns when it closes
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None)


