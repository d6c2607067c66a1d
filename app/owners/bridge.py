"""The one place where the engine meets Qt.

`EngineWorker` lives on its own QThread and owns the `Backend` (and so llama.cpp); nothing
else touches it. `EngineBridge` lives on the GUI thread: its methods return at once and
reach the worker through queued signals, and the worker's results come back the same way.

Every request carries a `Ticket` (app.common.newest): its `threading.Event` is set directly from the
GUI thread and checked by the backend between tokens or load steps, which is how Stop works
while the worker is busy inside a reply and cannot process queued signals (GPT4All's atomic
stop flag). The worker hands the ticket back with each result, so an answer that was already
in flight for a stopped reply or a superseded load is recognised and dropped.

Two consumers share the engine: the GUI's replies (`generate`, one at a time, answered by the
bridge's signals) and jobs from other programs while the GUI serves the model (`serve`, from
any thread, each answered through its own `ServedJob`). Both reach the engine thread as queued
signals, which it handles one at a time in the order they came: a GUI reply and a served one
never interleave, and each waits for those asked before it. A raw-prompt job (/v1/completions)
runs under a template that writes the prompt as it is; the GUI's own template (its override,
if any) is put back before the next conversation's reply.

Neither this process nor this module ever loads llama.cpp: by default a local model runs in a
process of its own (engine/process, ChildOpener), so a crash in llama.cpp ends that process and
not the window (`engineCrashed` says so), and what GPUs llama.cpp sees is asked of a child too
(`ask_devices`, once the window shows). The worker is engine_worker.py.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QThread, Signal

from ..common.newest import NewestWins, Ticket
from ..engine.backend import BackendOpener
from ..engine.kv.cache import SavedStates, StateCache
from ..engine.process.opening import ChildOpener
from ..engine.sampling import SamplingParams
from ..engine.tools.types import PLAIN, ToolCall, ToolUse
from ..engine.types import DeviceReport, LoadOptions, ModelDescription, ModelSource, ReplyStats
from ..serve.completions import Deliver, Follow, Job, Refusal, Refused
from ..serve.served_job import ServedJob
from .engine_worker import EngineWorker

UNLOADED = "The model was unloaded in Hearth; the request was not served."
SHUTTING_DOWN = "Hearth is shutting down; the request was not served."


class EngineBridge(QObject):
    """The GUI thread's handle on the engine thread. Methods never block.

    The worker's signals, re-emitted on the GUI thread for the current request only (a newer
    load supersedes an older one; a stopped reply's late chunks are dropped):
        loadProgress(float), modelLoaded(ModelDescription), loadFailed(str),
        promptProgress(int, int), replyBegan(), chunk(str), toolCall(ToolCall),
        replyFinished(str, ReplyStats), failed(str).
    The worker's templateChanged(str) and templateFailed(str) are exposed as they are, its
    described(ModelDescription) as modelDescribed, its unloaded() as modelUnloaded(), and its
    crashed(str) as engineCrashed(str) (the model's process died; no model is loaded now).
    devicesKnown(DeviceReport): what llama.cpp sees of the GPUs, after ask_devices or a load
    (`devices` keeps the latest).

    `serve` is the one method safe to call from any thread: the local server's.
    """

    loadProgress = Signal(float)
    modelLoaded = Signal(object)
    loadFailed = Signal(str)
    promptProgress = Signal(int, int)
    replyBegan = Signal()
    chunk = Signal(str)
    toolCall = Signal(object)
    replyFinished = Signal(str, object)
    failed = Signal(str)
    devicesKnown = Signal(object)

    _requestDevices = Signal()
    _requestLoad = Signal(object, object, object)
    _requestGenerate = Signal(object, object, object, object, object)
    _requestServe = Signal(object)
    _requestUnload = Signal()
    _requestTemplate = Signal(object)
    _requestPrepare = Signal(object)
    _requestForgetState = Signal(int)
    _requestStates = Signal(object, bool)

    def __init__(self, opener: BackendOpener | None = None, states: StateCache | None = None,
                 parent: QObject | None = None):
        """`opener` loads a model into a Backend on the engine thread. By default each local
        model runs in a process of its own (ChildOpener), keeping conversations' KV states in
        `states`; tests give one that opens a scripted backend (then nothing asks about GPUs)."""
        super().__init__(parent)
        self._children = ChildOpener(states) if opener is None else None
        self._thread = QThread()
        self._thread.setObjectName("engine")
        self._worker = EngineWorker(opener or self._children,
                                    self._children.devices if self._children is not None else None)
        self._worker.moveToThread(self._thread)
        self._requestDevices.connect(self._worker.ask_devices)
        self._requestLoad.connect(self._worker.load)
        self._requestGenerate.connect(self._worker.generate)
        self._requestServe.connect(self._worker.serve)
        self._requestUnload.connect(self._worker.unload)
        self._requestTemplate.connect(self._worker.set_template)
        self._requestPrepare.connect(self._worker.prepare)
        self._requestForgetState.connect(self._worker.forget_state)
        self._requestStates.connect(self._worker.saved_states_changed)
        self.templateChanged = self._worker.templateChanged
        self.templateFailed = self._worker.templateFailed
        self.modelDescribed = self._worker.described
        self.modelUnloaded = self._worker.unloaded
        self.engineCrashed = self._worker.crashed
        self._worker.devicesKnown.connect(self._on_devices)
        self.devices: DeviceReport | None = None  # None until a child has said
        self._worker.loadProgress.connect(self._on_load_progress)
        self._worker.modelLoaded.connect(self._on_loaded)
        self._worker.loadFailed.connect(self._on_load_failed)
        self._worker.promptProgress.connect(self._on_prompt_progress)
        self._worker.replyBegan.connect(self._on_began)
        self._worker.chunk.connect(self._on_chunk)
        self._worker.toolCall.connect(self._on_tool_call)
        self._worker.replyFinished.connect(self._on_finished)
        self._worker.replyFailed.connect(self._on_failed)
        self._thread.start()
        self._loads = NewestWins()
        self._replies = NewestWins()
        self._served_lock = threading.Lock()
        self._served: list[ServedJob] = []  # submitted and not yet ended, in the order they came

    def ask_devices(self) -> None:
        """Ask what GPUs llama.cpp sees (devicesKnown answers): of the loaded model's process, or
        of a child started for it and kept for the first load. The application asks once its
        window is first painted."""
        self._requestDevices.emit()

    # --- commands ------------------------------------------------------------------------------

    def load(self, source: ModelSource, options: LoadOptions = LoadOptions()) -> None:
        """Load a model (a file, or a server's model); a load still under way is cancelled
        and its outcome ignored."""
        self._requestLoad.emit(source, options, self._loads.begin())

    def cancel_load(self) -> None:
        """Stop the load under way; it ends with loadFailed, the previous model still loaded."""
        self._loads.cancel()

    @property
    def generating(self) -> bool:
        return self._replies.current is not None

    def generate(self, messages: list[dict], params: SamplingParams, conversation_id: int | None = None,
                 tools: ToolUse = PLAIN) -> bool:
        """Start a reply; refuse (return False) while another is running: never send twice.
        Served jobs asked for before it run first (`served_pending`); replyBegan says when it
        is its turn. `conversation_id`: the stored conversation it belongs to, whose work the
        engine may keep (its KV state) for when the user comes back to it. `tools`: what the
        model may call; each complete call comes as toolCall before replyFinished."""
        if self.generating:
            return False
        self._requestGenerate.emit(messages, params, self._replies.begin(), conversation_id, tools)
        return True

    def prepare(self, conversation_id: int | None) -> None:
        """The user opened a conversation (None: none is open): the engine saves what makes
        coming back to the one left quick, and readies this one (restores its saved KV state),
        after the reply under way if there is one."""
        self._requestPrepare.emit(conversation_id)

    def forget_state(self, conversation_id: int) -> None:
        """The conversation was deleted: the engine drops its saved state."""
        self._requestForgetState.emit(conversation_id)

    def saved_states_changed(self, states: SavedStates, cleared: bool) -> None:
        """The user changed the saved states' budget (`states` says the budgets now), or cleared
        them (Settings): the loaded model's process, which keeps states of its own over the same
        folder, follows."""
        self._requestStates.emit(states, cleared)

    def serve(self, job: Job, deliver: Deliver, follow: Follow | None = None) -> ServedJob:
        """Queue another program's job behind every request made before it (the GUI's too);
        its events go to `deliver`, on the engine thread, or through `follow`
        (serve/completions.py). From any thread."""
        served = ServedJob(job, deliver, follow)
        with self._served_lock:
            self._served = [pending for pending in self._served if not pending.finished]
            self._served.append(served)
        self._requestServe.emit(served)
        return served

    @property
    def served_pending(self) -> int:
        """Served jobs in line or running: a reply asked for now waits for all of them."""
        with self._served_lock:
            return sum(not pending.finished for pending in self._served)

    def refuse_served(self, message: str) -> None:
        """End every served job: those in line are refused with `message` (503), the running one
        stops at its next token."""
        with self._served_lock:
            pending, self._served = self._served, []
        for served in pending:
            served.refuse(Refused(Refusal.UNAVAILABLE, message))

    def set_template(self, source: str | None) -> None:
        """Apply a template override to the loaded model from the next reply (None: its own)."""
        self._requestTemplate.emit(source)

    def unload(self) -> None:
        """Close the loaded model and give its memory back. A reply or a load under way is
        stopped first (a load ends with loadFailed), and so are served jobs; modelUnloaded
        follows once the engine thread has let go of the model."""
        self.stop()
        self.cancel_load()
        self.refuse_served(UNLOADED)
        self._requestUnload.emit()

    def stop(self) -> None:
        """Stop the reply in progress after the current token; its text so far is kept."""
        self._replies.cancel()

    def shutdown(self, timeout_ms: int = 10_000) -> None:
        self.stop()
        self.cancel_load()
        self.refuse_served(SHUTTING_DOWN)
        self._worker.closing = True  # read by the engine thread: no GPU question is asked on the way out
        self._requestUnload.emit()
        self._thread.quit()
        if self._thread.wait(timeout_ms):
            # The engine thread has ended, and its loop may have ended before the unload posted
            # just above ran: whatever it still holds (the model's process) is closed here.
            self._worker.unload()
        if self._children is not None:
            self._children.close()

    # --- results -------------------------------------------------------------------------------

    def _on_devices(self, report: DeviceReport) -> None:
        self.devices = report
        self.devicesKnown.emit(report)

    def _on_load_progress(self, ticket: Ticket, fraction: float) -> None:
        if self._loads.is_current(ticket):
            self.loadProgress.emit(fraction)

    def _on_loaded(self, ticket: Ticket, description: ModelDescription) -> None:
        if self._loads.finish(ticket):
            self.modelLoaded.emit(description)

    def _on_load_failed(self, ticket: Ticket, message: str) -> None:
        if self._loads.finish(ticket):
            self.loadFailed.emit(message)

    def _on_prompt_progress(self, ticket: Ticket, done: int, total: int) -> None:
        if self._replies.is_current(ticket):
            self.promptProgress.emit(done, total)

    def _on_began(self, ticket: Ticket) -> None:
        if self._replies.is_current(ticket):
            self.replyBegan.emit()

    def _on_chunk(self, ticket: Ticket, text: str) -> None:
        if self._replies.is_current(ticket):
            self.chunk.emit(text)

    def _on_tool_call(self, ticket: Ticket, call: ToolCall) -> None:
        if self._replies.is_current(ticket):
            self.toolCall.emit(call)

    def _on_finished(self, ticket: Ticket, text: str, stats: ReplyStats) -> None:
        if self._replies.finish(ticket):
            self.replyFinished.emit(text, stats)

    def _on_failed(self, ticket: Ticket, message: str) -> None:
        if self._replies.finish(ticket):
            self.failed.emit(message)
