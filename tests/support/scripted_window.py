"""Hearth's main window over a scripted model (tests/support/scripted_backend.py) and files in a
temporary folder: the whole window in milliseconds, for tests of what the window offers (names,
keyboard paths, menus, dialogs) rather than of generation."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest

from app.engine.kv.cache import StateCache
from app.owners.model_session import ModelSession
from app.ui.window.main_window import MainWindow
from support.window_stack import WINDOW_SIZE, ModelStack, Shown, WindowStack

LOAD_TIMEOUT_MS = 10_000


class ScriptedWindow:
    """Opens the window (a model loaded, one conversation with a reply) and closes it again."""

    def __init__(self, qtbot, models: ModelSession, folder: Path, model_path: Path, states: StateCache | None = None):
        """`models`: a session over a scripted bridge that outlives the window (the
        `scripted_models` fixture's). `states`: the saved KV states File → Settings shows (None:
        the window has none)."""
        self.qtbot, self.models, self.folder = qtbot, models, folder
        model_stack = ModelStack.of(models, folder)
        model_stack.load(qtbot, model_path, LOAD_TIMEOUT_MS)
        self.stack = WindowStack.open(qtbot, model_stack, folder, shown=Shown.ACTIVE, size=WINDOW_SIZE,
                                      states=states, qtbot_closes=True, wait_ms=LOAD_TIMEOUT_MS)  # keys need the focus
        self.store, self.downloads, self.window = self.stack.store, self.stack.downloads, self.stack.window

    def send(self, text: str) -> None:
        """Type a message and press Enter, as a user does; wait for the scripted reply."""
        window = self.window
        with self.qtbot.waitSignal(window.session.replyFinished, timeout=LOAD_TIMEOUT_MS):
            window.composer.edit.setPlainText(text)
            QTest.keyClick(window.composer.edit, Qt.Key.Key_Return)

    def close(self) -> None:
        self.stack.close(engine=False)  # the bridge is the models' maker's to shut down


def menu_actions(window: MainWindow) -> list[tuple[str, QAction]]:
    """Every action in the menu bar and its submenus, as ("File → New chat", action)."""
    found = []

    def walk(menu, path):
        for action in menu.actions():
            if action.isSeparator():
                continue
            title = f"{path} → {plain(action.text())}" if path else plain(action.text())
            if action.menu() is not None:
                walk(action.menu(), title)
            else:
                found.append((title, action))

    walk(window.menuBar(), "")
    return found


def plain(text: str) -> str:
    """A menu text without its mnemonic ampersands."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def find_action(window: MainWindow, words: str) -> QAction:
    """The menu action whose title contains `words` (case ignored)."""
    matches = [action for title, action in menu_actions(window) if words.lower() in title.lower()]
    assert len(matches) == 1, f"{len(matches)} menu actions match {words!r}: {[t for t, _ in menu_actions(window)]}"
    return matches[0]
