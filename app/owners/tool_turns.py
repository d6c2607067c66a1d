"""ToolTurn: the tool calls a reply ended with, asked about and run one after another.

ToolLoop hands a reply's calls to `begin` when the reply ends in calls; each is looked up among
the tools offered (conversation/tool_steps.py) and refused without reaching a server when it
cannot run. A call to a tool the user always allows runs at once; any other is proposed
(callProposed: the window shows a card) and waits for `decide`. A call runs on the
supervisor's thread; its outcome comes back here as a queued signal, so the GUI thread never
waits on a server. Each call's result is handed over as soon as it is known (resultReady), to
be stored at once: a call that ran is never forgotten by a crash while a later one waits for
the user. When every call is answered, done says whether the turn goes on.

`stop` ends the turn: a call in flight is cancelled (one whose outcome had already come keeps
it), the calls not yet run are answered as not run, and done(stopped=True) still comes.
"""

from __future__ import annotations

import concurrent.futures

from PySide6.QtCore import QObject, Signal

from ..conversation.tool_steps import PlannedCall, arguments_of, plan_call, refused, result_of
from ..engine.tools.types import ToolCall
from ..store import ToolResult
from ..tool_servers.approval import DENIED_TEXT, STOPPED_BEFORE_TEXT, STOPPED_TEXT, Decision, PendingCall
from ..tool_servers.catalog import ToolCatalog
from ..tool_servers.types import ToolOutcome
from .documents_tool import TOOL as BUILTIN_TOOL
from .documents_tool import DocumentsTool
from .tool_servers import ToolServerManager


class ToolTurn(QObject):
    """One reply's calls, from proposal to result.

    Signals:
        callProposed(PendingCall): ask the user about this call (answer with decide).
        callRefused(str, str): a call refused without running: its id, and the text the model
            gets back (not offered, bad arguments, denied by the user, stopped).
        callStarted(str): the call with this id was sent to its server.
        callFinished(str, ToolOutcome): its outcome (capped as the model will read it).
        resultReady(ToolResult): a call's result, refused or run, in the order written.
        done(bool): every call is answered; True when the user stopped the turn.
    """

    callProposed = Signal(object)
    callRefused = Signal(str, str)
    callStarted = Signal(str)
    callFinished = Signal(str, object)
    resultReady = Signal(object)
    done = Signal(bool)
    _outcome = Signal(object, object)  # (future, ToolOutcome): the supervisor's thread -> here

    def __init__(self, servers: ToolServerManager, parent: QObject | None = None, builtin: DocumentsTool | None = None):
        """`builtin`: Hearth's own tool (search_documents), run here without asking: read-only,
        over the collections the user attached."""
        super().__init__(parent)
        self._servers = servers
        self._builtin = builtin
        self._queue: list[PlannedCall] = []
        self._current: PlannedCall | None = None
        self._future: concurrent.futures.Future | None = None
        self._outcome.connect(self._on_outcome)

    @property
    def active(self) -> bool:
        return self._current is not None or bool(self._queue)

    @property
    def running(self) -> bool:
        """The current call is with its server (not waiting for the user)."""
        return self._future is not None

    @property
    def current(self) -> PendingCall | None:
        """The call being asked about or run."""
        planned = self._current
        return PendingCall.of(planned.call.id, planned.listed, planned.call.arguments) if planned else None

    def begin(self, calls: tuple[ToolCall, ...], catalog: ToolCatalog) -> None:
        self._queue = [plan_call(call, catalog) for call in calls]
        self._next()

    def decide(self, call_id: str, decision: Decision) -> None:
        """The user's answer on the card of the call being asked about."""
        planned = self._current
        if planned is None or planned.call.id != call_id or self._future is not None:
            return
        if decision is Decision.DENY:
            self._answer(refused(planned.call, DENIED_TEXT))
            return
        if decision is Decision.ALWAYS:
            self._servers.allow_always(planned.listed.server, planned.listed.name)
        self._run(planned)

    def stop(self) -> None:
        """End the turn: the call in flight is cancelled, the rest answered as not run."""
        if not self.active:
            return
        future, self._future = self._future, None
        current, queue = self._current, self._queue
        self._current, self._queue = None, []
        if future is not None and current is not None:
            finished = future.done() and not future.cancelled()
            future.cancel()
            self._give(result_of(current.call, future.result()) if finished else refused(current.call, STOPPED_TEXT))
        elif current is not None:
            queue = [current, *queue]
        for planned in queue:
            self._give(refused(planned.call, STOPPED_BEFORE_TEXT))
        self.done.emit(True)

    def _next(self) -> None:
        if not self._queue:
            self._current = None
            self.done.emit(False)
            return
        planned = self._current = self._queue.pop(0)
        if planned.refusal is not None:
            self._answer(refused(planned.call, planned.refusal))
        elif self._is_builtin(planned) or self._servers.allows(planned.listed.server, planned.listed.name):
            self._run(planned)
        else:
            self.callProposed.emit(self.current)

    def _is_builtin(self, planned: PlannedCall) -> bool:
        """Hearth's own tool, known by identity: a configured server may carry any name."""
        return self._builtin is not None and planned.listed is BUILTIN_TOOL

    def _run(self, planned: PlannedCall) -> None:
        arguments = arguments_of(planned.call)
        future = self._future = (self._builtin.call(arguments) if self._is_builtin(planned) else
                                 self._servers.call(planned.listed.server, planned.listed.name, arguments))
        self.callStarted.emit(planned.call.id)
        future.add_done_callback(lambda done: self._outcome.emit(done, None if done.cancelled() else done.result()))

    def _on_outcome(self, future: concurrent.futures.Future, outcome: ToolOutcome | None) -> None:
        planned = self._current
        if future is not self._future or planned is None or outcome is None:
            return  # a call stopped meanwhile
        self._future = None
        self.callFinished.emit(planned.call.id, outcome)
        self.resultReady.emit(result_of(planned.call, outcome))
        self._next()

    def _answer(self, result: ToolResult) -> None:
        self.callRefused.emit(result.call_id, result.content)
        self.resultReady.emit(result)
        self._next()

    def _give(self, result: ToolResult) -> None:
        """A result of stop(): said (the card) and handed over."""
        if result.error:
            self.callRefused.emit(result.call_id, result.content)
        self.resultReady.emit(result)
