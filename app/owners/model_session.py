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
ready (bridge.py closes the old one after the new one loads).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from ..engine.gguf.modelfile import ModelFileError
from ..engine.llama import machine
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
)
from ..library import server_keys
from .bridge import EngineBridge
from .settings import Settings


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
        bridge.loadProgress.connect(self.loadProgress)
        bridge.modelLoaded.connect(self._on_loaded)
        bridge.loadFailed.connect(self._on_load_failed)
        bridge.templateChanged.connect(self.templateChanged)
        bridge.templateFailed.connect(self.templateFailed)
        bridge.modelUnloaded.connect(self._on_unloaded)
        bridge.modelDescribed.connect(self._on_described)

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
        return self._bridge.offload_support

    def gpu_memory(self) -> int | None:
        """The GPU memory models may use, in bytes, or None where there is none."""
        return self._bridge.gpu_memory()

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
        self._loading = (source, settings)
        options = LoadOptions() if isinstance(source, RemoteModel) else settings.load_options()
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
        remote model never needs it: the server chose them). Like any load, it asks first
        (loadNeedsConfirmation) when the new settings do not fit."""
        if self._current is not None:
            self.load(self._current.source)

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
            layers = gpu_layers_for(source.path, options, offloads=self.offload_support.gpu,
                                    free_vram=machine.free_vram)
            return plan(source.path, options, gpu_layers=layers, free_ram=machine.free_ram(),
                        free_vram=machine.free_vram() if layers else None)
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

    def _on_load_failed(self, message: str) -> None:
        self._loading = None
        self._apply_template()  # an override edited while the other model loaded
        self.loadFailed.emit(message)
        self.loadFinished.emit(message)

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
