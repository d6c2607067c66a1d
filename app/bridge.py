"""The one place where the engine meets Qt.

`EngineWorker` lives on its own QThread and owns the `Engine` (and so llama.cpp); nothing
else touches it. `EngineBridge` lives on the GUI thread: its methods return at once and
reach the worker through queued signals, and the worker's results come back the same way.

Stopping must work while the worker is busy inside a reply, when it cannot process queued
signals. So each request carries a `threading.Event`, set directly from the GUI thread and
checked by the engine between tokens (GPT4All's atomic stop flag). Replies also carry a
request id, so a chunk that was already in flight for a cancelled reply is recognised and
dropped instead of landing in the next one.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from .engine.context import ContextFullError
from .engine.devices import gpu_memory_bytes
from .engine.generator import DeviceInfo, Engine, LoadCancelled, LoadOptions, ReplyStats, supports_gpu_offload
from .engine.modelfile import ModelFileError, ModelInfo
from .engine.sampling import SamplingParams
from .engine.templates import TemplateError

log = logging.getLogger(__name__)

CHUNK_INTERVAL_S = 0.025  # coalesce tokens into at most ~40 chunk signals a second


@dataclass(frozen=True)
class LoadedModel:
    path: Path
    info: ModelInfo
    device: DeviceInfo
    n_ctx: int
    template_name: str


class EngineWorker(QObject):
    """Runs on the engine thread; every slot blocks that thread, never the GUI's.

    Signals:
        loadProgress(float): 0..1 while a model loads.
        modelLoaded(LoadedModel): the new model is ready (the old one was closed).
        loadFailed(str): the reason, for the user; the previous model is still loaded.
        promptProgress(int, int, int): request id, prompt tokens evaluated so far, and of how
            many; sent after each batch while a prompt longer than one batch is read.
        chunk(int, str): request id, the next piece of reply text.
        replyFinished(int, str, ReplyStats): request id, the whole reply, its statistics.
        failed(int, str): request id, why the reply could not start (template, context…).
        templateChanged(str): the chat template in use now ("model", "custom", "fallback:…").
        templateFailed(str): a template override that does not compile; the old one stays.
    """

    loadProgress = Signal(float)
    modelLoaded = Signal(object)
    loadFailed = Signal(str)
    promptProgress = Signal(int, int, int)
    chunk = Signal(int, str)
    replyFinished = Signal(int, str, object)
    failed = Signal(int, str)
    templateChanged = Signal(str)
    templateFailed = Signal(str)

    def __init__(self):
        super().__init__()
        self._engine: Engine | None = None

    @Slot(object, object, object)
    def load(self, path: Path, options: LoadOptions, cancel: threading.Event) -> None:
        last_report = 0.0

        def progress(fraction: float) -> None:
            nonlocal last_report
            if fraction >= 1.0 or fraction - last_report >= 0.02:
                last_report = fraction
                self.loadProgress.emit(fraction)

        try:
            engine = Engine(path, options, progress=progress, cancel=cancel)
        except (ModelFileError, TemplateError, LoadCancelled) as exc:
            self.loadFailed.emit(str(exc))
            return
        except Exception as exc:  # llama.cpp can fail in ways nobody listed
            log.exception("loading %s failed", path)
            self.loadFailed.emit(f"Could not load {Path(path).name}: {exc}")
            return
        if self._engine is not None:
            self._engine.close()
        self._engine = engine
        self.modelLoaded.emit(
            LoadedModel(Path(path), engine.info, engine.device, engine.n_ctx, engine.template.name)
        )

    @Slot(int, object, object, object)
    def generate(self, request_id: int, messages: list[dict], params: SamplingParams, cancel: threading.Event) -> None:
        if self._engine is None:
            self.failed.emit(request_id, "No model is loaded.")
            return
        def progress(done: int, total: int) -> None:
            if total > self._engine.batch_size:  # one batch goes by too fast to show
                self.promptProgress.emit(request_id, done, total)

        try:
            stream = self._engine.stream(messages, params, cancel, progress)
        except (TemplateError, ContextFullError) as exc:
            self.failed.emit(request_id, str(exc))
            return
        try:
            self._relay(request_id, stream)
        except Exception as exc:  # never leave the GUI waiting for a reply that won't come
            log.exception("reply %d failed", request_id)
            self.failed.emit(request_id, f"The reply failed: {exc}")

    def _relay(self, request_id: int, stream) -> None:
        """Pass the stream's text on in coalesced chunks, then the whole reply and its stats."""
        pieces: list[str] = []
        pending: list[str] = []
        last_emit = time.perf_counter()
        stats = ReplyStats()
        for event in stream:
            if isinstance(event, ReplyStats):
                stats = event
                break
            pieces.append(event)
            pending.append(event)
            now = time.perf_counter()
            if now - last_emit >= CHUNK_INTERVAL_S:
                self.chunk.emit(request_id, "".join(pending))
                pending.clear()
                last_emit = now
        if pending:
            self.chunk.emit(request_id, "".join(pending))
        self.replyFinished.emit(request_id, "".join(pieces), stats)

    @Slot(object)
    def set_template(self, source: str | None) -> None:
        if self._engine is None:
            return
        try:
            self._engine.set_template_override(source)
        except TemplateError as exc:
            self.templateFailed.emit(str(exc))
            return
        self.templateChanged.emit(self._engine.template.name)

    @Slot()
    def unload(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None


class EngineBridge(QObject):
    """The GUI thread's handle on the engine thread. Methods never block.

    Signals are the worker's, re-emitted on the GUI thread, with stale replies filtered out:
        loadProgress(float), modelLoaded(LoadedModel), loadFailed(str),
        promptProgress(int, int), chunk(str), replyFinished(str, ReplyStats), failed(str),
        contextUsed(int),
        loadFinished(str): after either load outcome; the error message, or "" on success.
    The worker's templateChanged(str) and templateFailed(str) are exposed as they are.
    """

    loadProgress = Signal(float)
    modelLoaded = Signal(object)
    loadFailed = Signal(str)
    promptProgress = Signal(int, int)
    chunk = Signal(str)
    replyFinished = Signal(str, object)
    failed = Signal(str)
    contextUsed = Signal(int)
    loadFinished = Signal(str)

    _requestLoad = Signal(object, object, object)
    _requestGenerate = Signal(int, object, object, object)
    _requestUnload = Signal()
    _requestTemplate = Signal(object)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._thread = QThread()
        self._thread.setObjectName("engine")
        self._worker = EngineWorker()
        self._worker.moveToThread(self._thread)
        self._requestLoad.connect(self._worker.load)
        self._requestGenerate.connect(self._worker.generate)
        self._requestUnload.connect(self._worker.unload)
        self._requestTemplate.connect(self._worker.set_template)
        self.templateChanged = self._worker.templateChanged
        self.templateFailed = self._worker.templateFailed
        self._worker.loadProgress.connect(self.loadProgress)
        self._worker.modelLoaded.connect(self._on_loaded)
        self._worker.loadFailed.connect(self._on_load_failed)
        self._worker.promptProgress.connect(self._on_prompt_progress)
        self._worker.chunk.connect(self._on_chunk)
        self._worker.replyFinished.connect(self._on_finished)
        self._worker.failed.connect(self._on_failed)
        self._thread.start()
        self._request_id = 0
        self._active_request: int | None = None
        self._reply_cancel: threading.Event | None = None
        self._load_cancel: threading.Event | None = None
        self.loaded: LoadedModel | None = None
        self.gpu_available = supports_gpu_offload()

    def gpu_memory(self) -> int | None:
        """The GPU's memory in bytes, where the build can offload and sees one. Asked only when
        needed: on a CUDA build the query sets up a CUDA context."""
        return gpu_memory_bytes() if self.gpu_available else None

    # --- commands ------------------------------------------------------------------------------

    def load(self, path: Path, options: LoadOptions = LoadOptions()) -> None:
        self.cancel_load()
        self._load_cancel = threading.Event()
        self._requestLoad.emit(Path(path), options, self._load_cancel)

    def cancel_load(self) -> None:
        if self._load_cancel is not None:
            self._load_cancel.set()

    @property
    def generating(self) -> bool:
        return self._active_request is not None

    def generate(self, messages: list[dict], params: SamplingParams) -> bool:
        """Start a reply; refuse (return False) while another is running: never send twice."""
        if self._active_request is not None:
            return False
        self._request_id += 1
        self._active_request = self._request_id
        self._reply_cancel = threading.Event()
        self._requestGenerate.emit(self._request_id, messages, params, self._reply_cancel)
        return True

    def set_template(self, source: str | None) -> None:
        """Apply a template override to the loaded model from the next reply (None: its own)."""
        self._requestTemplate.emit(source)

    def stop(self) -> None:
        """Stop the reply in progress after the current token; its text so far is kept."""
        if self._reply_cancel is not None:
            self._reply_cancel.set()

    def shutdown(self, timeout_ms: int = 10_000) -> None:
        self.stop()
        self.cancel_load()
        self._requestUnload.emit()
        self._thread.quit()
        self._thread.wait(timeout_ms)

    # --- results -------------------------------------------------------------------------------

    def _on_loaded(self, loaded: LoadedModel) -> None:
        self._load_cancel = None
        self.loaded = loaded
        self.modelLoaded.emit(loaded)
        self.loadFinished.emit("")

    def _on_load_failed(self, message: str) -> None:
        self._load_cancel = None
        self.loadFailed.emit(message)
        self.loadFinished.emit(message)

    def _on_prompt_progress(self, request_id: int, done: int, total: int) -> None:
        if request_id == self._active_request:
            self.promptProgress.emit(done, total)

    def _on_chunk(self, request_id: int, text: str) -> None:
        if request_id == self._active_request:
            self.chunk.emit(text)

    def _on_finished(self, request_id: int, text: str, stats: ReplyStats) -> None:
        if request_id == self._active_request:
            self._end_request()
            self.contextUsed.emit(stats.prompt_tokens + stats.completion_tokens)
            self.replyFinished.emit(text, stats)

    def _on_failed(self, request_id: int, message: str) -> None:
        if request_id == self._active_request:
            self._end_request()
            self.failed.emit(message)

    def _end_request(self) -> None:
        self._active_request = None
        self._reply_cancel = None
