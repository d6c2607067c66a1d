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

Importing this module does not load llama.cpp: the worker opens backends through
`engine.opening.open_backend` (behind `engine.probe`), on its own thread, when the first
model loads.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial

from PySide6.QtCore import QObject, QThread, Signal, Slot

from ..common.newest import NewestWins, Ticket
from ..engine.backend import Backend, BackendOpener, LoadCancelled, closing_reply
from ..engine.context import ContextFullError
from ..engine.gguf.modelfile import ModelFileError
from ..engine.kv.cache import StateCache
from ..engine.llama.probe import ProbingOpener
from ..engine.opening import open_backend
from ..engine.remote.errors import RemoteError
from ..engine.sampling import SamplingParams
from ..engine.templates.chat_template import TemplateError
from ..engine.tools.types import PLAIN, ToolCall, ToolUse
from ..engine.types import LoadOptions, ModelDescription, ModelSource, OffloadSupport, ReplyStats, StopReason
from ..serve.completions import Deliver, Job, Refusal, Refused
from ..serve.run_job import RAW_TEMPLATE, run_job
from ..serve.served_job import ServedJob
from . import paths

log = logging.getLogger(__name__)

PROBED_MODELS_FILE = "probed-models.json"
CHUNK_INTERVAL_S = 0.025  # coalesce tokens into at most ~40 chunk signals a second
NO_MODEL = "No model is loaded."
NO_MODEL_SERVED = "No model is loaded in Hearth: load one in its window, and this server serves it."
UNLOADED = "The model was unloaded in Hearth; the request was not served."
SHUTTING_DOWN = "Hearth is shutting down; the request was not served."


class EngineWorker(QObject):
    """Runs on the engine thread; every slot blocks that thread, never the GUI's.

    Each signal's first argument is the Ticket of the request it answers.

    Signals:
        loadProgress(Ticket, float): 0..1 while a model loads.
        modelLoaded(Ticket, ModelDescription): the new model is ready (the old one was closed).
        loadFailed(Ticket, str): the reason, for the user; the previous model is still loaded.
        promptProgress(Ticket, int, int): prompt tokens read so far, and of how many.
        chunk(Ticket, str): the next piece of reply text.
        toolCall(Ticket, ToolCall): a call the reply wrote, complete (the text before it was
            sent first); a reply asked with tools ends with its calls (StopReason.TOOL_CALLS).
        replyFinished(Ticket, str, ReplyStats): the whole reply and its statistics.
        replyBegan(Ticket): the engine took up the reply (it may have waited for served jobs).
        replyFailed(Ticket, str): why the reply could not start (template, context…).
        templateChanged(str): the chat template in use now ("model", "custom", "fallback:…").
        templateFailed(str): a template override that does not compile; the old one stays.
        described(ModelDescription): the loaded model describes itself differently after a
            reply (a server refused llama.cpp's sampling fields, which are not sent any more).
        unloaded(): the loaded model, if any, is closed and its memory given back.

    A remote server's failure (RemoteError) is said in the server's terms: its message is the
    whole story ("… refused the API key (401)"), so it goes to loadFailed or replyFailed as it is.

    A served job (`serve`) answers through its ServedJob, not through these signals.
    """

    loadProgress = Signal(object, float)
    modelLoaded = Signal(object, object)
    loadFailed = Signal(object, str)
    promptProgress = Signal(object, int, int)
    chunk = Signal(object, str)
    toolCall = Signal(object, object)
    replyFinished = Signal(object, str, object)
    replyBegan = Signal(object)
    replyFailed = Signal(object, str)
    templateChanged = Signal(str)
    templateFailed = Signal(str)
    described = Signal(object)
    unloaded = Signal()

    def __init__(self, opener: BackendOpener):
        super().__init__()
        self._open = opener
        self._backend: Backend | None = None
        self._override: str | None = None  # the GUI's template override for the loaded model
        self._raw = False  # the loaded model renders with RAW_TEMPLATE now (a raw job ran last)

    @Slot(object, object, object)
    def load(self, source: ModelSource, options: LoadOptions, ticket: Ticket) -> None:
        last_report = 0.0

        def progress(fraction: float) -> None:
            nonlocal last_report
            if fraction >= 1.0 or fraction - last_report >= 0.02:
                last_report = fraction
                self.loadProgress.emit(ticket, fraction)

        try:
            backend = self._open(source, options, progress, ticket.cancel)
        except (ModelFileError, TemplateError, LoadCancelled, RemoteError) as exc:
            self.loadFailed.emit(ticket, str(exc))
            return
        except Exception as exc:  # llama.cpp can fail in ways nobody listed
            log.exception("loading %s failed", source)
            self.loadFailed.emit(ticket, f"Could not load {source.record_name}: {exc}")
            return
        if ticket.cancel.is_set():  # superseded while it loaded: the newer request decides
            backend.close()
            self.loadFailed.emit(ticket, f"Loading {source.record_name} was cancelled.")
            return
        if self._backend is not None:
            self._backend.close()
        self._backend = backend
        self._override, self._raw = options.template_override, False
        self.modelLoaded.emit(ticket, backend.describe())

    @Slot(object, object, object, object, object)
    def generate(self, messages: list[dict], params: SamplingParams, ticket: Ticket,
                 conversation_id: int | None, tools: ToolUse) -> None:
        if self._backend is None:
            self.replyFailed.emit(ticket, NO_MODEL)
            return
        if ticket.cancel.is_set():  # stopped while it waited for served jobs: never begun
            self.replyFinished.emit(ticket, "", ReplyStats(stop_reason=StopReason.CANCELLED))
            return
        self.replyBegan.emit(ticket)
        self._noting_description(lambda: self._reply(messages, params, ticket, conversation_id, tools))

    @Slot(object)
    def serve(self, served: ServedJob) -> None:
        """Run a served job, if it is still in line; it hears of the outcome through `served`."""
        if not served.begin():
            return  # its client left, or the server stopped, while it waited
        if self._backend is None:
            served.end(Refused(Refusal.UNAVAILABLE, NO_MODEL_SERVED))
            return
        self._noting_description(lambda: served.end(
            run_job(self._backend, served.job, served.cancel_flag, served.deliver, self._use_template)))

    def _noting_description(self, reply) -> None:
        """Run `reply`; say so if the model describes itself differently afterwards."""
        before = self._backend.describe()
        reply()
        after = self._backend.describe()
        if after.unsent_fields != before.unsent_fields:
            self.described.emit(after)

    def _use_template(self, raw: bool) -> None:
        """RAW_TEMPLATE for a raw prompt, else the GUI's template; switched only when the kind
        of request changes (compiling a template is not free). Raises TemplateError (a remote
        model has the server's template, and takes no raw prompt)."""
        if raw != self._raw:
            self._backend.set_template_override(RAW_TEMPLATE if raw else self._override)
            self._raw = raw

    def _reply(self, messages: list[dict], params: SamplingParams, ticket: Ticket,
               conversation_id: int | None, tools: ToolUse) -> None:
        def progress(done: int, total: int) -> None:
            self.promptProgress.emit(ticket, done, total)

        try:
            self._use_template(False)
            stream = self._backend.stream(messages, params, ticket.cancel, progress,
                                          conversation_id=conversation_id, tools=tools)
        except (TemplateError, ContextFullError, RemoteError) as exc:
            self.replyFailed.emit(ticket, str(exc))
            return
        except Exception as exc:  # a backend can fail in ways nobody listed: never leave the GUI waiting
            log.exception("reply %d could not start", ticket.number)
            self.replyFailed.emit(ticket, f"The reply could not start: {exc}")
            return
        try:
            self._relay(ticket, stream)
        except Exception as exc:  # never leave the GUI waiting for a reply that won't come
            log.exception("reply %d failed", ticket.number)
            self.replyFailed.emit(ticket, f"The reply failed: {exc}")

    def _relay(self, ticket: Ticket, stream) -> None:
        """Pass the stream's text on in coalesced chunks and its calls as each is complete, then
        the whole reply and its stats. A call's pieces as it is written are not passed on: the
        window shows a call when it can be asked about."""
        pieces: list[str] = []
        pending: list[str] = []
        last_emit = time.perf_counter()
        stats = ReplyStats()
        with closing_reply(stream) as events:
            for event in events:
                if isinstance(event, ReplyStats):
                    stats = event
                    break
                if isinstance(event, ToolCall):
                    if pending:
                        self.chunk.emit(ticket, "".join(pending))
                        pending.clear()
                    self.toolCall.emit(ticket, event)
                    continue
                if not isinstance(event, str):
                    continue  # a call's pieces as it is written
                pieces.append(event)
                pending.append(event)
                now = time.perf_counter()
                if now - last_emit >= CHUNK_INTERVAL_S:
                    self.chunk.emit(ticket, "".join(pending))
                    pending.clear()
                    last_emit = now
        if pending:
            self.chunk.emit(ticket, "".join(pending))
        self.replyFinished.emit(ticket, "".join(pieces), stats)

    @Slot(object)
    def set_template(self, source: str | None) -> None:
        if self._backend is None:
            return
        try:
            name = self._backend.set_template_override(source)
        except TemplateError as exc:
            self.templateFailed.emit(str(exc))
            return
        self._override, self._raw = source, False
        self.templateChanged.emit(name)

    @Slot(object)
    def prepare(self, conversation_id: int | None) -> None:
        """The user opened a conversation: the backend gets ready now, while the user reads,
        rather than when the next reply is asked for."""
        if self._backend is not None:
            self._backend.prepare(conversation_id)

    @Slot(int)
    def forget_state(self, conversation_id: int) -> None:
        if self._backend is not None:
            self._backend.forget_state(conversation_id)

    @Slot()
    def unload(self) -> None:
        """Close the model: llama.cpp frees its weights, context and file mapping."""
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        self._override, self._raw = None, False
        self.unloaded.emit()


class EngineBridge(QObject):
    """The GUI thread's handle on the engine thread. Methods never block.

    The worker's signals, re-emitted on the GUI thread for the current request only (a newer
    load supersedes an older one; a stopped reply's late chunks are dropped):
        loadProgress(float), modelLoaded(ModelDescription), loadFailed(str),
        promptProgress(int, int), replyBegan(), chunk(str), toolCall(ToolCall),
        replyFinished(str, ReplyStats), failed(str).
    The worker's templateChanged(str) and templateFailed(str) are exposed as they are, its
    described(ModelDescription) as modelDescribed, and its unloaded() as modelUnloaded().

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

    _requestLoad = Signal(object, object, object)
    _requestGenerate = Signal(object, object, object, object, object)
    _requestServe = Signal(object)
    _requestUnload = Signal()
    _requestTemplate = Signal(object)
    _requestPrepare = Signal(object)
    _requestForgetState = Signal(int)

    def __init__(self, opener: BackendOpener | None = None, states: StateCache | None = None,
                 parent: QObject | None = None):
        """`opener` loads a model into a Backend on the engine thread. By default llama.cpp's,
        behind a probe process so that a file llama.cpp aborts on cannot end Hearth, keeping
        conversations' KV states in `states`; tests give one that opens a scripted backend."""
        super().__init__(parent)
        if opener is None:
            opener = ProbingOpener(paths.cache_dir() / PROBED_MODELS_FILE, partial(open_backend, states=states))
        self._thread = QThread()
        self._thread.setObjectName("engine")
        self._worker = EngineWorker(opener)
        self._worker.moveToThread(self._thread)
        self._requestLoad.connect(self._worker.load)
        self._requestGenerate.connect(self._worker.generate)
        self._requestServe.connect(self._worker.serve)
        self._requestUnload.connect(self._worker.unload)
        self._requestTemplate.connect(self._worker.set_template)
        self._requestPrepare.connect(self._worker.prepare)
        self._requestForgetState.connect(self._worker.forget_state)
        self.templateChanged = self._worker.templateChanged
        self.templateFailed = self._worker.templateFailed
        self.modelDescribed = self._worker.described
        self.modelUnloaded = self._worker.unloaded
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

    @property
    def offload_support(self) -> OffloadSupport:
        """Whether this build of llama.cpp can offload layers to a GPU here, and if not, why."""
        from ..engine.llama.devices import offload_support

        return offload_support()

    def gpu_memory(self) -> int | None:
        """The GPU's memory in bytes, where the build can offload and sees one. Asked only when
        needed: on a CUDA build the query sets up a CUDA context."""
        from ..engine.llama.devices import gpu_memory_bytes

        return gpu_memory_bytes() if self.offload_support.gpu else None

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

    def serve(self, job: Job, deliver: Deliver) -> ServedJob:
        """Queue another program's job behind every request made before it (the GUI's too);
        its events go to `deliver`, on the engine thread. From any thread."""
        served = ServedJob(job, deliver)
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
        self._requestUnload.emit()
        self._thread.quit()
        self._thread.wait(timeout_ms)

    # --- results -------------------------------------------------------------------------------

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
