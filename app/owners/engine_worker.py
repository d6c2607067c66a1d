"""The engine thread's side of the bridge (bridge.py): `EngineWorker` owns the loaded `Backend`
(and so the engine's process) and runs every request on that thread, one at a time.

A local model runs in a process of its own (engine/process): when that process dies by itself
(llama.cpp aborted, the system killed it for memory), the backend says so from its own thread
(`Backend.when_gone`); the worker drops it and says `crashed(why)`, after the reply it was
writing, if any, has ended as interrupted. What happens next (a reload) is ModelSession's call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal, Slot

from ..common.newest import Ticket
from ..engine.backend import Backend, BackendOpener, LoadCancelled, closing_reply
from ..engine.context import ContextFullError
from ..engine.gguf.modelfile import ModelFileError
from ..engine.kv.cache import SavedStates
from ..engine.process.engine_process import EngineCrashed
from ..engine.remote.errors import RemoteError
from ..engine.sampling import SamplingParams
from ..engine.templates.chat_template import TemplateError
from ..engine.tools.types import ToolCall, ToolUse
from ..engine.types import DeviceReport, LoadOptions, ModelSource, ReplyStats, StopReason
from ..serve.completions import Refusal, Refused
from ..serve.run_job import RAW_TEMPLATE, run_job
from ..serve.served_job import ServedJob

log = logging.getLogger(__name__)

# How often a reply's text is handed to the window, as the chat view writes it
# (ui/chat/streaming_reply.py's FLUSH_INTERVAL_MS): the backend joins the tokens that come
# sooner (Backend.stream's text_interval_s), in the engine's own process, so that neither this
# thread nor the GUI's is woken per token on cores the model is decoding on (#31).
CHUNK_INTERVAL_S = 0.040
NO_MODEL = "No model is loaded."
NO_MODEL_SERVED = "No model is loaded in Hearth: load one in its window, and this server serves it."


class EngineWorker(QObject):
    """Runs on the engine thread; every slot blocks that thread, never the GUI's.

    Each signal's first argument is the Ticket of the request it answers.

    Signals:
        loadProgress(Ticket, float): 0..1 while a model loads.
        modelLoaded(Ticket, ModelDescription): the new model is ready (the old one was closed).
        loadFailed(Ticket, str): the reason, for the user; the previous model is still loaded.
        promptProgress(Ticket, int, int): prompt tokens read so far, and of how many.
        chunk(Ticket, str): the reply's text since the last chunk: about one per CHUNK_INTERVAL_S
            (the text before a call or the reply's end comes at once).
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
        crashed(str): the loaded model's process died by itself; why, in words for the user.
            There is no model now: the reply it was writing ended first, as interrupted.
        devicesKnown(DeviceReport): what llama.cpp sees of the GPUs (asked by ask_devices,
            and again after each load of a local model, whose memory is then in use).

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
    crashed = Signal(str)
    devicesKnown = Signal(object)
    _gone = Signal(object, str)  # (the backend, why): from the backend's own thread, handled on this one

    def __init__(self, opener: BackendOpener, devices: Callable[[bool], DeviceReport] | None = None):
        """`devices(keep)`: asks what GPUs llama.cpp sees (the opener's children, one kept for
        the next load if `keep`); None: never asked."""
        super().__init__()
        self._open = opener
        self._devices = devices
        self._gpus = False  # the last report saw GPUs: their free memory is worth asking again
        self.closing = False  # set by the bridge's shutdown: nothing more is asked
        self._gone.connect(self._on_gone)
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
        except (ModelFileError, TemplateError, LoadCancelled, RemoteError, EngineCrashed) as exc:
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
        backend.when_gone(lambda why: self._gone.emit(backend, why))
        self.modelLoaded.emit(ticket, backend.describe())
        self._report_devices(backend.devices)

    @Slot()
    def ask_devices(self) -> None:
        """Say what GPUs llama.cpp sees: the loaded model's process answers if there is one (a
        load asked for before this came first), else a child started for it and kept for a load."""
        backend = self._backend
        if backend is not None and self._report_devices(backend.devices):
            return
        if self._devices is not None:
            self._report_devices(lambda: self._devices(True))

    def _free_memory_changed(self) -> None:
        """A model closed or died: where there are GPUs, their free memory is asked again (of a
        child that exits once it has said), so the next plan counts what came back. A CPU build
        has nothing to ask, and a child would only cost a start."""
        if self._gpus and self._devices is not None and not self.closing:
            self._report_devices(lambda: self._devices(False))

    def _report_devices(self, ask: Callable[[], DeviceReport | None]) -> bool:
        """Say what `ask` answers; whether it could say (a server's model cannot)."""
        try:
            report = ask()
        except EngineCrashed as exc:  # the model's process died as it was asked: _on_gone says so
            log.warning("could not ask about the GPUs: %s", exc)
            return False
        if report is not None:
            self._gpus = report.offload.gpu
            self.devicesKnown.emit(report)
        return report is not None

    @Slot(object, str)
    def _on_gone(self, backend: Backend, why: str) -> None:
        """A backend's process died by itself; said only if it is still the one loaded."""
        if backend is not self._backend:
            return
        backend.close()
        self._backend = None
        self._override, self._raw = None, False
        self.crashed.emit(why)
        self._free_memory_changed()

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
            run_job(self._backend, served.job, served.cancel_flag, served.deliver, self._use_template, served.follow)))

    def _noting_description(self, reply) -> None:
        """Run `reply`; say so if the model describes itself differently afterwards (unless it
        died meanwhile: then there is nothing to describe)."""
        backend = self._backend
        before = backend.describe()
        reply()
        if self._backend is not backend:
            return
        after = backend.describe()
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
            stream = self._backend.stream(messages, params, ticket.cancel, progress, conversation_id=conversation_id,
                                          tools=tools, text_interval_s=CHUNK_INTERVAL_S)
        except (TemplateError, ContextFullError, RemoteError, EngineCrashed) as exc:
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
        """Pass the stream's text on as it comes (paced by the backend) and its calls as each is
        complete, then the whole reply and its stats. A call's pieces as it is written are not
        passed on: the window shows a call when it can be asked about."""
        pieces: list[str] = []
        stats = ReplyStats()
        with closing_reply(stream) as events:
            for event in events:
                if isinstance(event, ReplyStats):
                    stats = event
                    break
                if isinstance(event, ToolCall):
                    self.toolCall.emit(ticket, event)
                elif isinstance(event, str):  # not a call's pieces as it is written
                    pieces.append(event)
                    self.chunk.emit(ticket, event)
        if stats.stop_reason is StopReason.INTERRUPTED and self._backend is not None:
            # What ran the model died: said before the reply's end, so a Send that follows it
            # finds the model already coming back, not a dead one.
            self._on_gone(self._backend, stats.error or "the model's process ended")
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

    @Slot(object, bool)
    def saved_states_changed(self, states: SavedStates, cleared: bool) -> None:
        if self._backend is not None:
            try:
                self._backend.saved_states_changed(states, cleared)
            except EngineCrashed as exc:  # gone meanwhile: _on_gone says so; a new one reads the folder afresh
                log.warning("could not tell the model's process of the saved states: %s", exc)

    @Slot()
    def unload(self) -> None:
        """Close the model: llama.cpp frees its weights, context and file mapping."""
        closed = self._backend is not None
        if closed:
            self._backend.close()
            self._backend = None
        self._override, self._raw = None, False
        self.unloaded.emit()
        if closed:
            self._free_memory_changed()
