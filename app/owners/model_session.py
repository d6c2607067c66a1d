"""The model Hearth is using: which one, its settings, and loading, reloading, cancelling and
unloading.

`ModelSession` is the one owner of the model's lifecycle on the GUI thread. The model list
asks it to load a file, the parameters panel hands it edited settings, the chat session asks
it what the next reply is generated with; none of them talk to each other or to the engine
about the model. It reaches the engine through the bridge and learns the outcome from the
bridge's signals, so every change flows one way: widget → ModelSession → bridge → signals back.

Settings are per model (`app.owners.settings.Settings` keeps them). Context length, GPU layers and
threads take effect when the model is loaded, so changing them offers a reload; a template
override and everything else apply to the next reply. A model whose settings the user never
changed samples as its author recommends (the GGUF's `general.sampling.*` keys, over Hearth's
defaults: engine/options.py's `resolve`, the rule the command line follows too); once changed,
the user's settings are kept.

A model is a file (`LocalModel`) or a server's (`RemoteModel`). A server chooses its context,
device and threads and applies its own chat template, so for a remote model those settings
do not apply: it never needs a reload, and no template override is sent to it. Its system
prompt and sampling settings apply as a file's do.

Before a file loads, its memory plan (engine/memory_plan.py: from the header alone, at the
settings it loads with, against the RAM and VRAM free now) is weighed: a load that does not
fit is not started but handed back as `loadNeedsConfirmation(source, plan)`, so the window can
ask; `load(source, anyway=True)` is the user's "Load anyway". A load that fits, or only just
(tight), goes ahead without asking, the first-run default model's included. The free memory
is read with the current model still loaded: a new model, or a reload, holds both until it is
ready (bridge.py closes the old one after the new one loads). What GPUs there are, and their free
memory, the engine's process says (`offloadSupportChanged` once it has); until then, the plan is
the CPU's.

A local model runs in a process of its own: when that process dies (llama.cpp aborted, the system
killed it for memory), the reply it was writing is kept as interrupted, and the model is loaded
again by itself, as any load (a message sent meanwhile waits for it); the conversation's saved
KV state comes back with it. A second crash before a reply gets through ends the retries:
`engineCrashed(why, False)`, and `reload()` is the user's to ask.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from ..engine import machine
from ..engine.gguf.modelfile import ModelFileError
from ..engine.memory_plan import Fit, MemoryPlan, gpu_layers_for, plan
from ..engine.sampling import ModelDefaults
from ..engine.types import (
    LoadOptions,
    LocalModel,
    ModelDescription,
    ModelSettings,
    ModelSource,
    OffloadSupport,
    RemoteModel,
    ReplyStats,
    StopReason,
)
from ..images.image import ImageError
from ..library import server_keys
from ..library.projectors import projector_for, with_projector
from .bridge import EngineBridge
from .settings import Settings

MAX_CRASHES = 2  # in a row, before a reply gets through: then the model is not loaded again by itself
ASKING_ABOUT_GPUS = OffloadSupport("CPU", False, "Hearth is still asking llama.cpp which GPUs it can use")


class ModelSession(QObject):
    """Owns the current model and its settings.

    Signals:
        loadStarted(ModelSource): a model began loading (the current one stays until it is ready).
        loadProgress(float): 0..1 while it loads.
        modelLoaded(ModelDescription): it is ready; `settings` are now its settings.
        loadFailed(str): why it could not load, for the user; the previous model stays current.
        loadFinished(str): after either outcome: "" when loaded, else what loadFailed said.
        settingsChanged(ModelSettings): the current settings changed (a model loaded with its
            own, or the user edited them).
        reloadNeededChanged(bool): whether the settings differ from those the model was loaded
            with in a way only a reload applies.
        templateChanged(str): the chat template in use now, after an override changed.
        templateFailed(str): an override that does not compile; the previous template stays.
        descriptionChanged(ModelDescription): the current model describes itself differently
            (a server refused llama.cpp's sampling fields: they are not sent to it any more).
        modelUnloaded(): the current model was closed and its memory given back; there is no
            model now, and `settings` are the defaults again.
        loadNeedsConfirmation(ModelSource, MemoryPlan): a load was asked for that does not fit
            the free memory; nothing was started (the current model stays). `load(source,
            anyway=True)` loads it all the same.
        engineCrashed(str, bool): the model's process died (why, for the user); True: it is
            being loaded again (loadStarted follows), False: it crashed again, so it is not, and
            there is no model now (modelUnloaded came first); `reload()` loads it.
        offloadSupportChanged(OffloadSupport): the engine's process said what GPUs it can use.
    """

    loadStarted = Signal(object)
    loadProgress = Signal(float)
    modelLoaded = Signal(object)
    loadFailed = Signal(str)
    loadFinished = Signal(str)
    settingsChanged = Signal(object)
    reloadNeededChanged = Signal(bool)
    templateChanged = Signal(str)
    templateFailed = Signal(str)
    descriptionChanged = Signal(object)
    modelUnloaded = Signal()
    loadNeedsConfirmation = Signal(object, object)
    engineCrashed = Signal(str, bool)
    offloadSupportChanged = Signal(object)

    def __init__(self, bridge: EngineBridge, settings: Settings, parent: QObject | None = None):
        super().__init__(parent)
        self._bridge = bridge
        self._store = settings
        self._current: ModelDescription | None = None
        self._settings = ModelSettings()
        self._loaded_with: ModelSettings | None = None  # the current model's settings at load
        self._applied_template: str | None = None  # the override the current model renders with
        self._loading: tuple[ModelSource, ModelSettings] | None = None
        self._reload_needed = False
        self._crashes = 0  # the engine's crashes since a reply last got through
        self._crashed_source: ModelSource | None = None  # given up on after crashing again: reload() loads it
        self._reloading = False  # the load under way brings back a model whose process died
        bridge.loadProgress.connect(self.loadProgress)
        bridge.modelLoaded.connect(self._on_loaded)
        bridge.loadFailed.connect(self._on_load_failed)
        bridge.templateChanged.connect(self.templateChanged)
        bridge.templateFailed.connect(self.templateFailed)
        bridge.modelUnloaded.connect(self._on_unloaded)
        bridge.modelDescribed.connect(self._on_described)
        bridge.engineCrashed.connect(self._on_engine_crashed)
        bridge.replyFinished.connect(self._on_reply_finished)
        bridge.devicesKnown.connect(lambda report: self.offloadSupportChanged.emit(report.offload))

    # --- state ---------------------------------------------------------------------------------

    @property
    def current(self) -> ModelDescription | None:
        """The loaded model, or None before the first load succeeds."""
        return self._current

    @property
    def settings(self) -> ModelSettings:
        """The settings replies use now: the current model's, or defaults before any model."""
        return self._settings

    @property
    def model_defaults(self) -> ModelDefaults:
        """The current model's own sampling defaults (its author's); none for a server's model
        or before any model."""
        return self._current.model_defaults if self._current is not None else ModelDefaults()

    @property
    def loading(self) -> ModelSource | None:
        """The model being loaded, if a load is under way."""
        return self._loading[0] if self._loading is not None else None

    @property
    def reload_needed(self) -> bool:
        return self._reload_needed

    @property
    def offload_support(self) -> OffloadSupport:
        """Whether models can be offloaded to a GPU at all (the GPU-layers setting means
        anything), and if not, why."""
        report = self._bridge.devices
        return report.offload if report is not None else ASKING_ABOUT_GPUS

    def gpu_memory(self) -> int | None:
        """The GPU memory models may use, in bytes, or None where there is none (or not known yet)."""
        report = self._bridge.devices
        return report.gpu_total if report is not None else None

    def _free_vram(self) -> int | None:
        report = self._bridge.devices
        return report.gpu_free if report is not None else None

    # --- commands ------------------------------------------------------------------------------

    def load(self, source: ModelSource | Path, *, anyway: bool = False) -> None:
        """Load a model (a path is a model file) with its stored settings; a load already under
        way is replaced. A server's model loads on the engine thread like a file (the server is
        asked for its model list there): a server that cannot be reached is a failed load.

        A file whose memory plan does not fit is not loaded unless `anyway`: loadNeedsConfirmation
        says so instead, and the current model (and a load under way) stay."""
        if not isinstance(source, (LocalModel, RemoteModel)):
            source = LocalModel(Path(source))
        settings = self._settings_for(source)
        if not anyway:
            planned = self.memory_plan(source, settings)
            if planned is not None and planned.fit is Fit.DOES_NOT_FIT:
                self.loadNeedsConfirmation.emit(source, planned)
                return
        self._crashes = 0  # a load asked for starts afresh
        self._start_load(source, settings)

    def _start_load(self, source: ModelSource, settings: ModelSettings, reloading: bool = False) -> None:
        """Ask the engine for `source`; `reloading`: it brings back a model whose process died."""
        self._crashed_source, self._reloading = None, reloading
        try:
            options = LoadOptions() if isinstance(source, RemoteModel) else with_projector(source.path,
                                                                                          settings.load_options())
        except ModelFileError:  # the model's own file: the engine says what is wrong with it as it loads
            options = settings.load_options()
        except ImageError as exc:  # a projector that is not this model's, say
            self.loadStarted.emit(source)
            self._reloading = reloading
            self._on_load_failed(str(exc))
            return
        self._loading = (source, settings)
        self._bridge.load(source, options)
        self.loadStarted.emit(source)

    def remembered(self) -> ModelSource | None:
        """The model loaded last, to open at start-up: a file, or a saved server's model with
        its API key from the keyring. It may be gone (a deleted file, a server that is off):
        loading it then fails like any other load, and says why. Reads the keyring: call it
        off the GUI thread."""
        source = self._store.last_source
        if isinstance(source, RemoteModel):
            key = server_keys.load_key(source.server.base_url)
            return replace(source, server=replace(source.server, api_key=key))
        return source

    def reload(self) -> None:
        """Load the current model again, so context length, GPU layers and threads apply (a
        remote model never needs it: the server chose them), or the one whose process crashed
        twice. Like any load, it asks first (loadNeedsConfirmation) when the settings do not fit."""
        source = self._current.source if self._current is not None else self._crashed_source
        if source is not None:
            self.load(source)

    def memory_plan(self, source: ModelSource | None = None,
                    settings: ModelSettings | None = None) -> MemoryPlan | None:
        """What loading `source` (default: the current model) with `settings` (default: the
        ones it would load with now) takes, against the memory free now. None for a server's
        model (the server's memory is its own) and for a file whose header cannot be read
        (its load will say why). GPU layers and flash attention are planned as the engine
        resolves them (memory_plan.gpu_layers_for: none on a CPU build, Auto as many as free
        VRAM holds)."""
        if source is None:
            source = self._current.source if self._current is not None else None
        if not isinstance(source, LocalModel):
            return None
        if settings is None:
            current = self._current is not None and self._current.source == source
            settings = self._settings if current else self._settings_for(source)
        options = settings.load_options()
        try:
            projector = projector_for(source.path, options.mmproj)
        except (ImageError, ModelFileError):
            projector = None  # the load will say why; the model's own plan still holds
        try:
            layers = gpu_layers_for(source.path, options, offloads=self.offload_support.gpu,
                                    free_vram=self._free_vram, projector=projector)
            return plan(source.path, options, gpu_layers=layers, free_ram=machine.free_ram(),
                        free_vram=self._free_vram() if layers else None, projector=projector)
        except ModelFileError:
            return None

    def cancel_load(self) -> None:
        """Stop the load under way; the current model stays (loadFailed says it was cancelled)."""
        self._bridge.cancel_load()

    def unload(self) -> None:
        """Close the current model and free its memory (a load under way is cancelled too);
        modelUnloaded follows once the engine has let go of it."""
        self._bridge.unload()

    def update_settings(self, settings: ModelSettings) -> None:
        """The user changed the settings: keep them for this model and apply what applies now."""
        if settings == self._settings:
            return
        self._settings = settings
        if self._current is not None:
            self._store.save_model_settings(self._current.source.settings_key, settings)
            self._apply_template()
        self.settingsChanged.emit(settings)
        self._set_reload_needed(self._needs_reload())

    # --- the bridge's answers ------------------------------------------------------------------

    def _on_loaded(self, description: ModelDescription) -> None:
        self._reloading = False
        loaded_with = self._loading[1] if self._loading is not None else self._settings_for(description.source)
        self._loading = None
        # Read again: the user may have edited this model's settings while it loaded.
        settings = self._settings_for(description.source, description.model_defaults)
        self._current, self._settings, self._loaded_with = description, settings, loaded_with
        self._applied_template = loaded_with.template_override
        self._apply_template()
        self._store.last_source = description.source
        self.modelLoaded.emit(description)
        self.settingsChanged.emit(settings)
        self._set_reload_needed(self._needs_reload())
        self.loadFinished.emit("")

    def _settings_for(self, source: ModelSource, model_defaults: ModelDefaults = ModelDefaults()) -> ModelSettings:
        """The model's stored settings, merged by the one rule (options.resolve): a model whose
        sampling was never changed samples with its author's defaults, `model_defaults`, known
        once it loaded (a load and a plan use its load options alone)."""
        return self._store.model_settings(source.settings_key, model_defaults)

    def _on_described(self, description: ModelDescription) -> None:
        if self._current is not None and description.source == self._current.source:
            self._current = description
            self.descriptionChanged.emit(description)

    def _on_engine_crashed(self, why: str) -> None:
        """The model's process died: load it again, unless it died again before a reply got
        through, or the user asked for another model meanwhile (that one comes instead)."""
        current = self._current
        if current is None:
            return
        if self._loading is not None and not self._reloading:  # the user's choice comes instead: no reload to offer
            self._on_unloaded()
            return
        self._crashes += 1
        if self._crashes >= MAX_CRASHES:
            self._give_up(current.source, why)
            return
        self._start_load(current.source, self._settings_for(current.source), reloading=True)  # fits: it did
        self.engineCrashed.emit(why, True)  # after the load began: `loading` says what comes back

    def _give_up(self, source: ModelSource, why: str) -> None:
        """No model now; reload() loads `source` when the user asks."""
        self._on_unloaded()
        self._crashed_source = source
        self.engineCrashed.emit(why, False)

    def _on_reply_finished(self, _text: str, stats: ReplyStats) -> None:
        if stats.stop_reason not in (StopReason.INTERRUPTED, StopReason.ERROR):
            self._crashes = 0

    def _on_load_failed(self, message: str) -> None:
        reloading, self._reloading = self._reloading, False
        self._loading = None
        self._apply_template()  # an override edited while the other model loaded
        self.loadFailed.emit(message)
        self.loadFinished.emit(message)
        if reloading and self._current is not None:  # the model that crashed did not come back
            self._crashes = MAX_CRASHES
            self._give_up(self._current.source, message)

    def _on_unloaded(self) -> None:
        if self._current is None:  # nothing was loaded (a cancelled first load, or shutting down)
            return
        self._current, self._loaded_with, self._applied_template = None, None, None
        self._settings = ModelSettings()
        self.modelUnloaded.emit()
        self.settingsChanged.emit(self._settings)
        self._set_reload_needed(False)

    def _needs_reload(self) -> bool:
        current, loaded_with = self._current, self._loaded_with
        return (current is not None and not current.is_remote and loaded_with is not None
                and self._settings.needs_reload_from(loaded_with))

    def _apply_template(self) -> None:
        """Give the current model the template its settings ask for. Not while another model
        loads: the worker would apply it to that one, which is loaded with its own. Never to a
        remote model: the server applies its own."""
        wanted = self._settings.template_override
        current = self._current
        if current is not None and not current.is_remote and self._loading is None and wanted != self._applied_template:
            self._applied_template = wanted
            self._bridge.set_template(wanted)

    def _set_reload_needed(self, needed: bool) -> None:
        if needed != self._reload_needed:
            self._reload_needed = needed
            self.reloadNeededChanged.emit(needed)
