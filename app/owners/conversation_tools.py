"""Which tool servers the open conversation's model may call, and the tools that gives it.

A conversation keeps its choice in the store (Conversation.tool_servers); one never chosen
starts with the choice made last (the settings' default), so a user who always works with the
same servers picks them once. Choosing a server is using it: it starts then, on the
supervisor's thread, and a reply asked before it is ready waits for it (ChatSession says so)
rather than going out without the tools the user picked.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from ..store import ConversationStore, StoreError
from ..tool_servers.catalog import ToolCatalog
from ..tool_servers.limits import START_TIMEOUT_S
from ..tool_servers.types import ServerState
from .tool_servers import ToolServerManager
from .tool_settings import ToolSettings

UNSETTLED = (ServerState.IDLE, ServerState.STARTING)


class ConversationTools(QObject):
    """The open conversation's tool servers.

    Signals:
        choiceChanged(object): the servers chosen for the open conversation (a tuple of names).
    """

    choiceChanged = Signal(object)

    def __init__(self, servers: ToolServerManager, settings: ToolSettings, parent: QObject | None = None):
        super().__init__(parent)
        self.servers = servers
        self._settings = settings
        self._chosen: tuple[str, ...] = settings.default_choice
        self.open_id: int | None = None  # the conversation the choice is of (None: a new one)

    @property
    def chosen(self) -> tuple[str, ...]:
        """The servers chosen that are still configured."""
        return tuple(name for name in self._chosen if self.servers.config(name) is not None)

    def open(self, store: ConversationStore, conversation_id: int | None) -> None:
        """Another conversation is open: its choice (or the default) applies, and starts."""
        self.open_id = conversation_id
        chosen = None
        if conversation_id is not None:
            try:
                chosen = store.get_conversation(conversation_id).tool_servers
            except StoreError:
                chosen = None
        self._set(chosen if chosen is not None else self._settings.default_choice)

    def choose(self, store: ConversationStore, conversation_id: int | None, names: tuple[str, ...]) -> None:
        """The user's choice for this conversation (None: none open yet; then it applies to the
        next one), kept as the default for new ones."""
        if conversation_id is not None:
            store.set_tool_servers(conversation_id, names)
        self.open_id = conversation_id
        self._settings.default_choice = names
        self._set(names)

    def keep_for(self, store: ConversationStore, conversation_id: int) -> None:
        """A conversation was just created with the choice shown: keep it with it."""
        self.open_id = conversation_id
        if self._chosen:
            store.set_tool_servers(conversation_id, self._chosen)

    def unsettled(self, names: tuple[str, ...]) -> list[str]:
        """Those of these servers not ready yet nor failed: a reply waits for these."""
        return [name for name in names if self.servers.status(name).state in UNSETTLED]

    def start_unsettled(self) -> list[str]:
        """The chosen servers not settled yet, those not started yet started now (a Send is a use)."""
        waiting = self.unsettled(self.chosen)
        self.servers.start(waiting)
        return waiting

    def catalog(self, names: tuple[str, ...] | None = None) -> ToolCatalog:
        """The tools of these servers (the chosen ones by default) that are ready."""
        return ToolCatalog.build(self.servers.statuses(), self.chosen if names is None else names)

    def _set(self, names: tuple[str, ...]) -> None:
        self._chosen = tuple(names)
        self.servers.start(self.chosen)
        self.choiceChanged.emit(self.chosen)


class SettledWait(QObject):
    """Calls `then` once none of `names` (the servers of the conversation that asked) is still
    starting (each is ready or has failed), or after START_TIMEOUT_S: a reply asked meanwhile
    begins then, never before its tools are there, and never waits for ever on a server that hangs."""

    def __init__(self, tools: ConversationTools, names: tuple[str, ...], then, parent: QObject | None = None):
        super().__init__(parent)
        self._tools, self._names, self._then = tools, names, then
        self._timer = QTimer(self, singleShot=True, interval=int(START_TIMEOUT_S * 1000) + 500)
        self._timer.timeout.connect(self._done)
        tools.servers.statusChanged.connect(self._check)
        self._timer.start()

    def cancel(self) -> None:
        if self._then is None and not self._timer.isActive():
            return
        self._then = None
        self._timer.stop()
        self._tools.servers.statusChanged.disconnect(self._check)
        self.deleteLater()

    def _check(self, _status=None) -> None:
        if not self._tools.unsettled(self._names):
            self._done()

    def _done(self) -> None:
        then = self._then
        self.cancel()
        if then is not None:
            then()
