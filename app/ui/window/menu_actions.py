"""The window's menu actions, made one way whether the window or one of its controllers owns them.

An action's keys reach the whole application (a text box with focus keeps its own keys only
where an action says so), and every action with keys is listed, in menu order, in Help →
Keyboard shortcuts. A slot is called with no arguments: triggered(bool) would land in a slot's
first optional parameter (import_conversation's path was once called with False). A StoreError
it raises is shown in the banner.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from .store_problems import StoreProblemBanner, guarded


class MenuActions:
    """Makes the menus' actions and keeps those with keys, in the order they were put in a menu."""

    def __init__(self, parent: QObject, banner: StoreProblemBanner):
        self._parent = parent
        self._banner = banner
        self.with_keys: list[QAction] = []

    def make(self, text: str, slot: Callable[[], object], shortcut=None, tip: str | None = None) -> QAction:
        """An action not yet in a menu (place puts it there)."""
        action = QAction(text, self._parent)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(lambda _checked=False: guarded(slot, self._banner)())
        return action

    def place(self, menu: QMenu, *actions: QAction) -> None:
        """Put actions made by make() in a menu, those with keys in the shortcuts' list."""
        for action in actions:
            menu.addAction(action)
            if not action.shortcut().isEmpty():
                self.with_keys.append(action)

    def add(self, menu: QMenu, text: str, slot: Callable[[], object], shortcut=None, tip: str | None = None) -> QAction:
        """An action made and put in its menu."""
        action = self.make(text, slot, shortcut, tip)
        self.place(menu, action)
        return action
