"""ToolLoop: one turn of the agent loop, for ChatSession.

ChatSession asks the engine for replies; between them, this keeps the turn: which conversation
it belongs to and which servers it asked with, the step, the call ids used so far (made unique
within the turn), and the ToolTurn answering the last reply's calls. Each result is stored the
moment it is known (so a crash never leaves a call that ran without its result), and when every
call is answered the loop asks for the next reply (nextReply) or says the turn is over (ended).

Steps: replies 0 … limit-1 may call tools and their calls run; reply `limit` is asked with the
tools in the prompt but no call allowed (conversation/tool_steps.py), so the turn ends in an
answer. A Stop that meets a reply already ending in calls still stops the turn: its calls are
answered as not run.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from ..conversation.tool_steps import STEP_LIMIT_TEXT, refused, step_use, unique_call
from ..engine.tools.types import PLAIN, ToolCall, ToolUse
from ..engine.types import ReplyStats, StopReason
from ..store import ConversationStore, StoreError, ToolResult
from ..tool_servers.approval import STOPPED_BEFORE_TEXT
from ..tool_servers.catalog import ToolCatalog
from .conversation_documents import ConversationDocuments
from .conversation_tools import ConversationTools, SettledWait
from .documents_tool import DocumentsTool
from .tool_turns import ToolTurn

STEP_LIMIT_MESSAGE = "The model used its {limit} tool steps (the limit set in Settings → Tools) and was asked to answer."


class ToolLoop(QObject):
    """The turn in progress: its servers, its steps, its calls' results.

    Signals:
        resultStored(StoredMessage): a call's result, stored in the turn's conversation.
        nextReply(int, int): ask the model again: in this conversation, at this step.
        ended(int): the turn in this conversation was stopped while it waited for servers or
            ran tools.
        notice(str): something the user should read (the step limit reached).
        storeFailed(StoreError): a result could not be stored; the turn ends.
    """

    resultStored = Signal(object)
    nextReply = Signal(int, int)
    ended = Signal(int)
    notice = Signal(str)
    storeFailed = Signal(object)

    def __init__(self, tools: ConversationTools, store: Callable[[], ConversationStore], parent: QObject | None = None,
                 collections: ConversationDocuments | None = None):
        """`collections`: the conversation's, offered as the search_documents tool beside the
        servers' where the user chose that the model searches them itself (documents_tool.py)."""
        super().__init__(parent)
        self.tools = tools
        self.documents = documents = DocumentsTool(collections, store, self) if collections is not None else None
        self.turn = ToolTurn(tools.servers, self, documents)
        self._store = store
        if documents is not None:
            documents.conversation = lambda: self._conversation_id
            documents.storeFailed.connect(self.storeFailed)
        self._conversation_id: int | None = None
        self._held: tuple[int | None, tuple[str, ...]] = (None, ())  # the conversation asked in, its servers then
        self._servers: tuple[str, ...] = ()
        self._step = 0
        self._ids: set[str] = set()
        self._stopping = False
        self._settling: SettledWait | None = None
        self.turn.resultReady.connect(self._store_result)
        self.turn.done.connect(self._on_done)

    @property
    def conversation_id(self) -> int | None:
        """The conversation whose turn waits for its servers or runs tools, if one does."""
        return self._conversation_id if (self._settling is not None or self.turn.active) else None

    def hold(self, conversation_id: int | None) -> None:
        """A reply is asked for in this conversation: its turn's servers and collections are
        those chosen now, though it may begin later (after its sources are found), when another
        conversation may be open."""
        self._held = (conversation_id, self.tools.chosen)
        if self.documents is not None:
            self.documents.hold()

    def begin(self, conversation_id: int, then: Callable[[], None]) -> bool:
        """A new turn in this conversation, with the servers held for it (hold), else those chosen
        now. True when it waits for some of them to start; `then` is called once they have (or
        have failed)."""
        if self._held[0] != conversation_id:
            self.hold(conversation_id)
        self._conversation_id, self._servers = conversation_id, self._held[1]
        self._step, self._ids, self._stopping = 0, set(), False
        waiting = self.tools.unsettled(self._servers)
        self.tools.servers.start(waiting)
        if not waiting:
            return False

        def settled() -> None:
            self._settling = None
            then()

        self._settling = SettledWait(self.tools, self._servers, settled, self)
        return True

    def use(self, step: int) -> tuple[ToolUse, ToolCatalog | None]:
        """What the reply at this step may call. The servers are those chosen when the turn
        began, less any the user has unticked since in that conversation."""
        if self.tools.open_id == self._conversation_id:
            self._servers = tuple(name for name in self._servers if name in self.tools.chosen)
        builtin = self.documents.status() if self.documents is not None else None
        chosen = [status for status in self.tools.servers.statuses() if status.name in self._servers]
        catalog = ToolCatalog.build(chosen + ([builtin] if builtin is not None else []))  # by the objects, not names
        return (step_use(catalog, step, self.tools.servers.step_limit), catalog) if catalog.tools else (PLAIN, None)

    def written(self, call: ToolCall) -> ToolCall:
        """A call as the reply wrote it, with an id unique in the turn."""
        return unique_call(call, self._ids)

    def reply_ended(self, step: int, calls: tuple[ToolCall, ...], stats: ReplyStats, catalog: ToolCatalog | None
                    ) -> bool:
        """The reply at `step` ended; True when its calls go on to be answered (nextReply or
        ended follows), False when the turn ends here (its calls, if any, answered as not run)."""
        self._step = step
        if not calls:
            return False
        limit = self.tools.servers.step_limit
        if stats.stop_reason is StopReason.TOOL_CALLS and not self._stopping and step < limit and catalog:
            self.turn.begin(calls, catalog)
            return True
        text = STEP_LIMIT_TEXT.format(limit=limit) if step >= limit and not self._stopping else STOPPED_BEFORE_TEXT
        for call in calls:
            if not self._store_result(refused(call, text)):
                break
        return False

    def stop(self) -> None:
        """Stop: the wait for servers ends, the call in flight is cancelled, and a reply that
        ends in calls now has them answered as not run."""
        self._stopping = True
        if self._settling is not None:
            settling, self._settling = self._settling, None
            settling.cancel()
            self.ended.emit(self._conversation_id)
        if self.turn.active:
            self.turn.stop()

    def _store_result(self, result: ToolResult) -> bool:
        try:
            message_id = self._store().add_tool_result(self._conversation_id, result)
        except StoreError as exc:
            self.storeFailed.emit(exc)
            self._stopping = True
            return False
        self.resultStored.emit(self._store().message(message_id))
        return True

    def _on_done(self, stopped: bool) -> None:
        if stopped or self._stopping:
            self.ended.emit(self._conversation_id)
            return
        limit = self.tools.servers.step_limit
        if self._step + 1 >= limit:
            self.notice.emit(STEP_LIMIT_MESSAGE.format(limit=limit))
        self.nextReply.emit(self._conversation_id, self._step + 1)
