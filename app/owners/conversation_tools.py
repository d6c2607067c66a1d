"""Which tool servers the open conversation's model may call, and the tools that gives it.

A conversation keeps its choice in the store (Conversation.tool_servers); one never chosen
starts with the choice made last (conversation_choice.py). Choosing a server is using it: it starts then, on the
supervisor's thread, and a reply asked before it is ready waits for it (ChatSession says so)
rather than going out without the tools the user picked.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from ..store import Conversation, ConversationStore
from ..tool_servers.limits import START_TIMEOUT_S
from ..tool_servers.types import ServerState
from .conversation_choice import ConversationChoice
from .tool_servers import ToolServerManager
from .tool_settings import ToolSettings

UNSETTLED = (ServerState.IDLE, ServerState.STARTING)


class ConversationTools(ConversationChoice):
    """The open conversation's tool servers (choiceChanged: a tuple of server names)."""

    def __init__(self, servers: ToolServerManager, settings: ToolSettings, parent: QObject | None = None):
        self.servers = servers
        super().__init__(settings, parent)

    def _kept(self, conversation: Conversation) -> tuple[str, ...] | None:
        return conversation.tool_servers

    def _keep(self, store: ConversationStore, conversation_id: int, names: tuple[str, ...]) -> None:
        store.set_tool_servers(conversation_id, names)

    def _exists(self, name: str) -> bool:
        return self.servers.config(name) is not None

    def _chose(self, names: tuple[str, ...]) -> None:
        self.servers.start(names)

    def unsettled(self, names: tuple[str, ...]) -> list[str]:
        """Those of these servers not ready yet nor failed: a reply waits for these."""
        return [name for name in names if self.servers.status(name).state in UNSETTLED]



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
