"""ToolTurn: the tool calls a reply ended with, asked about and run one after another.

ChatSession hands a reply's calls to `begin` when the reply ends in calls; each is looked up
among the tools offered (conversation/tool_steps.py) and refused without reaching a server
when it cannot run. A call to a tool the user always allows runs at once; any other is
proposed (callProposed: the window shows a card) and waits for `decide`. A call runs on the
supervisor's thread; its outcome comes back here as a queued signal, so the GUI thread never
waits on a server. When every call has its result, resultsReady hands them over in order, and
ChatSession stores them and asks the model to go on.

`stop` ends the turn: a call in flight is cancelled, the calls not yet run are answered as
stopped, and resultsReady still comes (with stopped set), so what the model wrote and what
became of it are stored whole.
"""

from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from ..conversation.tool_steps import PlannedCall, arguments_of, plan_call, refused, result_of
from ..engine.tools.types import ToolCall
from ..store import ToolResult
from ..tool_servers.approval import DENIED_TEXT, STOPPED_TEXT, Decision, PendingCall
from ..tool_servers.catalog import ToolCatalog
from ..tool_servers.types import ToolOutcome
from .tool_servers import ToolServerManager


@dataclass(frozen=True)
class TurnResults:
    """Every call of a reply answered, in the order written; `stopped`: the user stopped the turn."""

    results: tuple[ToolResult, ...]
    stopped: bool = False


class ToolTurn(QObject):
    """One reply's calls, from proposal to result.

    Signals:
        callProposed(PendingCall): ask the user about this call (answer with decide).
        callRefused(str, str): a call refused without running: its id, and the text the model
            gets back (not offered, bad arguments, denied by the user).
        callStarted(str): the call with this id was sent to its server.
        callFinished(str, ToolOutcome): its outcome (capped as the model will read it).
        resultsReady(TurnResults): every call answered.
    """

    callProposed = Signal(object)
    callRefused = Signal(str, str)
    callStarted = Signal(str)
    callFinished = Signal(str, object)
    resultsReady = Signal(object)
    _outcome = Signal(object, object)  # (future, ToolOutcome): the supervisor's thread -> here

    def __init__(self, servers: ToolServerManager, parent: QObject | None = None):
        super().__init__(parent)
        self._servers = servers
        self._queue: list[PlannedCall] = []
        self._results: list[ToolResult] = []
        self._current: PlannedCall | None = None
        self._future: concurrent.futures.Future | None = None
        self._outcome.connect(self._on_outcome)
        self.call_started_at = 0.0  # perf_counter when the current call went to its server (bench/)

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
        self._results = []
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
        """End the turn: the call in flight is cancelled, the rest answered as stopped."""
        if not self.active:
            return
        future, self._future = self._future, None
        if future is not None:
            future.cancel()
        unanswered = ([self._current] if self._current is not None else []) + self._queue
        self._current, self._queue = None, []
        for planned in unanswered:
            self._results.append(refused(planned.call, STOPPED_TEXT))
            self.callRefused.emit(planned.call.id, STOPPED_TEXT)
        self.resultsReady.emit(TurnResults(tuple(self._results), stopped=True))

    def _next(self) -> None:
        if not self._queue:
            self._current = None
            self.resultsReady.emit(TurnResults(tuple(self._results)))
            return
        planned = self._current = self._queue.pop(0)
        if planned.refusal is not None:
            self._answer(refused(planned.call, planned.refusal))
        elif self._servers.allows(planned.listed.server, planned.listed.name):
            self._run(planned)
        else:
            self.callProposed.emit(self.current)

    def _run(self, planned: PlannedCall) -> None:
        self.call_started_at = time.perf_counter()
        future = self._future = self._servers.call(planned.listed.server, planned.listed.name, arguments_of(planned.call))
        self.callStarted.emit(planned.call.id)
        future.add_done_callback(lambda done: self._outcome.emit(done, None if done.cancelled() else done.result()))

    def _on_outcome(self, future: concurrent.futures.Future, outcome: ToolOutcome | None) -> None:
        planned = self._current
        if future is not self._future or planned is None or outcome is None:
            return  # a call stopped meanwhile
        self._future = None
        self.callFinished.emit(planned.call.id, outcome)
        self._results.append(result_of(planned.call, outcome))
        self._next()

    def _answer(self, result: ToolResult) -> None:
        self._results.append(result)
        self.callRefused.emit(result.call_id, result.content)
        self._next()
