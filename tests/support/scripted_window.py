"""Hearth's main window over a scripted model (tests/support/scripted_backend.py) and files in a
temporary folder: the whole window in milliseconds, for tests of what the window offers (names,
keyboard paths, menus, dialogs) rather than of generation."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest

from app.engine.kv.cache import StateCache
from app.owners.chat_session import ChatSession
from app.owners.downloads import DownloadManager
from app.owners.model_session import ModelSession
from app.store import ConversationStore
from app.ui.window.main_window import MainWindow
from support.settings_file import settings_at

LOAD_TIMEOUT_MS = 10_000


class ScriptedWindow:
    """Opens the window (a model loaded, one conversation with a reply) and closes it again."""

    def __init__(self, qtbot, models: ModelSession, folder: Path, model_path: Path, states: StateCache | None = None):
        """`states`: the saved KV states File → Settings shows (None: the window has none)."""
        self.qtbot, self.models, self.folder = qtbot, models, folder
        with qtbot.waitSignal(models.modelLoaded, timeout=LOAD_TIMEOUT_MS):
            models.load(model_path)
        self.store = ConversationStore(folder / "conversations.sqlite3")
        self.downloads = DownloadManager()
        settings = settings_at(folder / "hearth.ini")
        self.window = MainWindow(models, ChatSession(self.store, models._bridge, models), settings, self.downloads,
                                 states=states)
        qtbot.addWidget(self.window)
        self.window.resize(1024, 640)
        self.window.show()
        self.window.activateWindow()
        qtbot.waitUntil(self.window.isActiveWindow, timeout=LOAD_TIMEOUT_MS)  # keys need the focus

    def send(self, text: str) -> None:
        """Type a message and press Enter, as a user does; wait for the scripted reply."""
        window = self.window
        with self.qtbot.waitSignal(window.session.replyFinished, timeout=LOAD_TIMEOUT_MS):
            window.composer.edit.setPlainText(text)
            QTest.keyClick(window.composer.edit, Qt.Key.Key_Return)

    def close(self) -> None:
        self.window.close()
        self.downloads.shutdown()
        self.window.session.store.close()


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
