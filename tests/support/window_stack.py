"""The window and the owner objects it is given, assembled one way for every test that opens it,
as app/ui/app/application.py's run_gui assembles them for a user.

Two parts, because in Hearth the engine side outlives a window: a ModelStack (the engine bridge
with its thread, the model session, the settings file) and a WindowStack over it (the
conversation store, the chat session, the downloads, the saved servers when asked, and the
MainWindow itself). A test loads its model before or after the window opens by calling
ModelStack.load when it needs it; the window is shown and waited for as the test needs (Shown).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.engine.kv.cache import StateCache
from app.engine.types import ModelSettings, ModelSource, ServerConfig
from app.owners.bridge import BackendOpener, EngineBridge
from app.owners.chat_session import ChatSession
from app.owners.conversation_tools import ConversationTools
from app.owners.downloads import DownloadManager
from app.owners.model_session import ModelSession
from app.owners.remote_servers import RemoteServers
from app.owners.settings import Settings
from app.owners.tool_servers import ToolServerManager
from app.store import ConversationStore
from app.ui.window.main_window import MainWindow
from support.settings_file import settings_at

WINDOW_SIZE = (1024, 640)  # the size the window tests lay out and click at
SETTINGS_FILE = "hearth.ini"
DATABASE_FILE = "conversations.sqlite3"


@dataclass
class ModelStack:
    """The engine side: what a window is given and what outlives it."""

    bridge: EngineBridge
    models: ModelSession
    settings: Settings

    @classmethod
    def start(cls, folder: Path, opener: BackendOpener | None = None, states: StateCache | None = None,
              model_settings: Mapping[str, ModelSettings] | None = None,
              servers: Sequence[ServerConfig] | None = None) -> ModelStack:
        """The bridge over `opener` (None: Hearth's own, each local model in a process of its own),
        keeping conversations' KV states in `states`; the settings file in `folder`, with
        `model_settings` saved per model file name and `servers` saved, as a user's earlier
        choices."""
        settings = settings_at(folder / SETTINGS_FILE)
        for name, chosen in (model_settings or {}).items():
            settings.save_model_settings(name, chosen)
        if servers is not None:
            settings.servers = list(servers)
        bridge = EngineBridge(opener, states=states)
        if opener is None:
            bridge.ask_devices()  # as the application does once its window shows
        return cls(bridge, ModelSession(bridge, settings), settings)

    @classmethod
    def of(cls, models: ModelSession, folder: Path) -> ModelStack:
        """The stack a model session was made in (the `scripted_models` fixture's, which shuts
        its bridge down itself), with the settings file in `folder`."""
        return cls(models._bridge, models, settings_at(folder / SETTINGS_FILE))

    def load(self, qtbot, model: Path | ModelSource, timeout_ms: int) -> None:
        """Load `model` and wait until it is loaded."""
        with qtbot.waitSignal(self.models.modelLoaded, timeout=timeout_ms):
            self.models.load(model)

    def shutdown(self) -> None:
        """The engine thread ends; the loaded model closes (saving the conversation it holds)."""
        self.bridge.shutdown()


class Shown(enum.Enum):
    """How far the test waits for the window it opened."""

    SHOWN = "shown"  # show() only
    EXPOSED = "exposed"  # drawn on the (offscreen) screen
    ACTIVATED = "activated"  # drawn, and asked to become the active window
    ACTIVE = "active"  # the active window: keys typed at it reach it


@dataclass
class WindowStack:
    """One window and the owner objects it was given beside the ModelStack's."""

    model_stack: ModelStack
    store: ConversationStore
    session: ChatSession
    downloads: DownloadManager
    servers: RemoteServers | None
    window: MainWindow
    tool_servers: ToolServerManager | None = None

    @classmethod
    def open(cls, qtbot, model_stack: ModelStack, folder: Path, *, shown: Shown = Shown.SHOWN,
             size: tuple[int, int] | None = None, servers: bool = False,
             states: StateCache | None = None, qtbot_closes: bool = False, wait_ms: int = 10_000,
             tools: bool = False) -> WindowStack:
        """The window over the database in `folder` and the ModelStack's settings. `servers`:
        the window is given RemoteServers of its own (False: it makes its own, as it does
        without them). `states`: what File → Settings shows of saved KV states.
        `qtbot_closes`: qtbot closes the window after the test, before the fixtures' teardown
        runs (a window left open by a failing test is closed all the same; a teardown that asks
        whether the window is still open finds it closed). `tools`: the tool servers of the
        settings (Settings → Tools), as the application gives them; `close_tools` stops them."""
        store = ConversationStore(folder / DATABASE_FILE)
        tool_servers = conversation_tools = None
        if tools:
            tool_servers = ToolServerManager(model_stack.settings.tools, folder / "tool-server-logs")
            conversation_tools = ConversationTools(tool_servers, model_stack.settings.tools)
        session = ChatSession(store, model_stack.bridge, model_stack.models, conversation_tools)
        downloads = DownloadManager()
        remote = RemoteServers(model_stack.settings) if servers else None
        window = MainWindow(model_stack.models, session, model_stack.settings, downloads, remote, states=states)
        if qtbot_closes:
            qtbot.addWidget(window)
        if size is not None:
            window.resize(*size)
        window.show()
        if shown is not Shown.SHOWN:
            qtbot.waitExposed(window)
        if shown in (Shown.ACTIVATED, Shown.ACTIVE):
            window.activateWindow()
        if shown is Shown.ACTIVE:
            qtbot.waitUntil(window.isActiveWindow, timeout=wait_ms)
        return cls(model_stack, store, session, downloads, remote, window, tool_servers)

    def close_tools(self) -> None:
        """Stop the tool servers' processes, as quitting Hearth does."""
        if self.tool_servers is not None:
            self.tool_servers.close()

    def type_and_send(self, text: str) -> None:
        """Type into the message box and press Enter, as a user does."""
        edit = self.window.composer.edit
        edit.setFocus()
        edit.setPlainText(text)
        QTest.keyClick(edit, Qt.Key.Key_Return)

    def click_conversation(self, conversation_id: int) -> None:
        """Click its row in the list, as a user opens it."""
        listing = self.window.conversations.list
        item = self.window.conversations.item_of(conversation_id)
        assert item is not None, f"conversation {conversation_id} is not listed"
        QTest.mouseClick(listing.viewport(), Qt.MouseButton.LeftButton, pos=listing.visualItemRect(item).center())
        assert self.session.conversation_id == conversation_id

    def close(self, engine: bool = True) -> None:
        """Close as Hearth quits: the window, the downloads, the engine (unless `engine` is
        False: it outlives this window), then the database in use (a damaged one may have been
        replaced), which the engine's last replies are written to."""
        self.window.close()
        self.downloads.shutdown()
        if engine:
            self.model_stack.shutdown()
        self.window.session.store.close()
