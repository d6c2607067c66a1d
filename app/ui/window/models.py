"""What the window shows of the model: the status bar's line, the selector above the chat, the
picker's state, the empty chat's welcome, and the name every reply is headed by.

A controller the window owns, given what it works with: ModelSession (whose signals it
connects to its slots), the saved servers, the downloads, the session (for the context used),
the picker, the selector above the chat, the chat, the status bar and its labels.

One name for a model everywhere: the name the model gives itself ("Gemma 3 270m"), as the
status bar and the model list show it. A reply records the file it was written by (several
files can carry one name); the file name is shown where the name is not enough (the
selector, tooltips). A server's model is named by its id there, and its server is said
beside it ("remote · Lab box"); it has no file, and its context length is the server's
business (the status bar counts tokens without a limit when the server does not say).

A load whose memory plan does not fit is asked about first (ModelSession decides and emits
loadNeedsConfirmation; here the question is put, with the plan's numbers): "Load anyway" loads
it, Cancel keeps the current model. What a load had to give up (a refused mlock, say:
ModelDescription.load_notes) is said in the status bar after it loads, and kept in the model
name's tooltip.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDialog, QLabel, QMessageBox, QStatusBar, QVBoxLayout, QWidget

from ...common.text import printable, shorten
from ...engine.memory_plan import MemoryPlan
from ...engine.types import LocalModel, ModelDescription, ModelSettings, ModelSource, RemoteModel
from ...owners.chat_session import ChatSession
from ...owners.downloads import DownloadManager
from ...owners.model_session import ModelSession
from ...owners.remote_servers import RemoteServers
from ..chat.header import ChatHeader
from ..chat.view import ChatView
from ..chat.welcome import Welcome
from ..models import plan_text
from ..models.picker import ModelPicker
from ..models.remote_rows import RemoteEntry
from ..widgets.tooltips import plain_tooltip
from .context_meter import ContextMeter
from .engine_status import EngineStatus
from .store_problems import StoreProblemBanner, guarded

STATUS_NAME_CHARS = 60
NOTES_SHOWN_MS = 30_000  # a load's notes are read, not glanced at


def source_label(source: ModelSource) -> str:
    """A model as the status bar says it is loading: a file's name, a remote model's id and server."""
    return printable(source.path.name) if isinstance(source, LocalModel) else source.record_name


def status_name(loaded: ModelDescription) -> str:
    """The status bar's model: its name (a server's id can be a long path, shortened here and
    whole in the tooltip) and what it runs on."""
    return f"{shorten(loaded.name, STATUS_NAME_CHARS)} · {loaded.device.describe()}"


def where_it_runs(loaded: ModelDescription) -> str:
    """What the "Loaded …" message adds to the name: the file, or the server."""
    if isinstance(loaded.source, RemoteModel):
        return f"on {printable(loaded.source.server.name)}"
    return printable(loaded.source.path.name)


class ModelDisplay(QObject):
    """The model's side of MainWindow.

    Slots (connected here): ModelSession's loadStarted, loadProgress, modelLoaded,
    modelUnloaded, loadFailed, loadNeedsConfirmation, settingsChanged (the fit column),
    templateChanged and templateFailed; the session's contextChanged (its ContextMeter); the picker's
    modelChosen, scanFinished, loadCancelRequested and unloadRequested; the selector's
    modelChosen; the downloads' modelDownloaded; offloadSupportChanged (the fit column again).
    The engine's crashes are EngineStatus's (engine_status.py). MessageSending (sending.py) connects what is
    done besides (a message waiting for the load) after these. The window calls model_name for
    every reply it shows, and show_get_models from its menu and the welcome.
    """

    def __init__(self, models: ModelSession, servers: RemoteServers, downloads: DownloadManager,
                 session: ChatSession, picker: ModelPicker, chat_header: ChatHeader, chat: ChatView,
                 status_bar: QStatusBar, model_label: QLabel, context_label: QLabel,
                 store_banner: StoreProblemBanner, window: QWidget):
        """`window`: the parent of the dialogs this opens."""
        super().__init__(window)
        self._models, self._servers, self._downloads, self._session = models, servers, downloads, session
        self._picker, self._chat_header, self._chat = picker, chat_header, chat
        self._status_bar, self._model_label = status_bar, model_label
        self.context_meter = ContextMeter(context_label, models, self)
        self._store_banner, self._window = store_banner, window
        self._model_names: dict[str, str] = {}  # a reply's recorded model (its file name) -> the model's own name
        self.get_models_dialog: QDialog | None = None
        self._fits_planned_with: ModelSettings | None = None
        downloads.modelDownloaded.connect(picker.rescan)
        picker.modelChosen.connect(self.load_chosen)
        picker.loadCancelRequested.connect(models.cancel_load)
        picker.unloadRequested.connect(models.unload)
        picker.scanFinished.connect(self._on_models_found)
        chat_header.modelChosen.connect(self.load_chosen)
        models.templateChanged.connect(lambda name: status_bar.showMessage(f"Chat template: {name}", 5000))
        models.templateFailed.connect(lambda message: status_bar.showMessage(message, 10_000))
        models.loadStarted.connect(self.on_load_started)
        models.loadProgress.connect(picker.set_loading)
        models.modelLoaded.connect(self.on_model_loaded)
        models.loadFailed.connect(self.on_load_failed)
        models.loadNeedsConfirmation.connect(self.on_load_needs_confirmation)
        # The fit column: each file at its saved settings, against the memory free now.
        picker.set_planner(lambda path: models.memory_plan(LocalModel(path)))
        for changed in (models.modelLoaded, models.modelUnloaded):
            changed.connect(self.fits_are_stale)
        models.settingsChanged.connect(self.replan_fits)
        models.modelUnloaded.connect(self.on_model_unloaded)
        session.contextChanged.connect(self.context_meter.show)
        models.offloadSupportChanged.connect(lambda _support: (self.fits_are_stale(), self.replan_fits(models.settings)))
        self.engine_status = EngineStatus(models, status_bar, self.model_name, self)
        if models.current is not None:  # a window opened over a model loaded before it
            self.on_model_loaded(models.current)
        else:
            chat.set_welcome(Welcome(None))

    def model_name(self, record: str | None) -> str | None:
        """The name a reply's model is shown by: the model's own name (what the status bar and
        the model list say), found from the file name a reply records; the file name when the
        file is no longer listed."""
        return self._model_names.get(record, record) if record else record

    def _on_models_found(self) -> None:
        entries, remote = self._picker.entries(), self._picker.remote_entries()
        self._model_names.update({entry.path.name: entry.name for entry in entries if entry.usable})
        self._model_names.update({RemoteModel(entry.server, entry.model.model_id).record_name: entry.name
                                  for entry in remote if entry.usable})
        self._chat_header.set_entries(entries, remote)
        current = self._models.current
        if current is not None:
            self._chat_header.set_current(current.source, current.name)
        if self._models.loading is not None:
            self._chat_header.set_loading(self._models.loading)

    def load_chosen(self, chosen: Path | RemoteEntry | RemoteModel) -> None:
        """Load what the model list or the selector offered: a file, or a server's model (with
        its key from the keyring, which RemoteServers reads)."""
        if isinstance(chosen, RemoteEntry):
            chosen = self._servers.source(chosen.server, chosen.model.model_id)
        self._models.load(chosen)

    def on_load_started(self, source: ModelSource) -> None:
        self._picker.set_loading(0.0)
        self._chat_header.set_loading(source)
        self._model_label.setText(f"Loading {source_label(source)}…")
        self._chat.set_welcome(Welcome(self.model_name(source.record_name), loading=True))

    def show_get_models(self) -> None:
        """The "Get models" window, kept between openings (its search stays); the downloads are
        the DownloadManager's, so closing it stops none of them."""
        if self.get_models_dialog is None:
            from ..models.get_models import GetModelsView  # on first use: it imports the Hugging Face client

            dialog = QDialog(self._window)
            dialog.setWindowTitle("Get models")
            view = GetModelsView(self._downloads, dialog)
            view.set_vram(self._models.gpu_memory())
            layout = QVBoxLayout(dialog)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.addWidget(view)
            dialog.resize(view.sizeHint())
            self.get_models_dialog = dialog
        self.get_models_dialog.show()
        self.get_models_dialog.raise_()

    def on_model_loaded(self, loaded: ModelDescription) -> None:
        self._model_names[loaded.record_name] = loaded.name
        self._picker.set_loading(None)
        self._picker.set_current(loaded.source)
        self._chat_header.set_current(loaded.source, loaded.name)
        self._model_label.setText(status_name(loaded))
        notes = [printable(note, limit=None) for note in loaded.load_notes]  # llama.cpp's words among them
        self._model_label.setToolTip(plain_tooltip("\n".join(
            [loaded.location, f"Template: {loaded.template_name}", *notes])))
        guarded(lambda: self.context_meter.show(self._session.context_use()), self._store_banner)()
        loaded_line = f"Loaded {loaded.name} ({where_it_runs(loaded)})"
        if notes:
            self._status_bar.showMessage(" ".join([f"{loaded_line}.", *notes]), NOTES_SHOWN_MS)
        else:
            self._status_bar.showMessage(loaded_line, 5000)
        info = loaded.info  # None for a server's model: the server applies its own chat template
        base_model = info is not None and not (info.chat_template or info.named_chat_templates)
        self._chat.set_welcome(Welcome(loaded.name, base_model=base_model))

    def fits_are_stale(self, *_loaded) -> None:
        """A load or unload changed the free memory: the fit column is planned again at the
        settingsChanged ModelSession sends right after."""
        self._fits_planned_with = None

    def replan_fits(self, settings: ModelSettings) -> None:
        """Plan the model list's fit column again when what it depends on changed: the free
        memory (a load, an unload) or the current model's load settings. Not for a sampling or
        system-prompt edit, which is a settingsChanged on every keystroke: planning every
        listed file on the GUI thread for it would be wasted."""
        planned_with, self._fits_planned_with = self._fits_planned_with, settings
        if planned_with is None or settings.needs_reload_from(planned_with):
            self._picker.refresh_fits()

    def on_model_unloaded(self) -> None:
        self._picker.set_current(None)
        self._chat_header.set_current(None)
        self._model_label.setText("No model")
        self._model_label.setToolTip("")
        self.context_meter.clear()
        self._chat.set_welcome(Welcome(None))

    def on_load_failed(self, message: str) -> None:
        self._picker.show_load_error(message)
        loaded = self._models.current
        self._chat_header.set_current(loaded.source if loaded else None, loaded.name if loaded else None)
        self._model_label.setText(status_name(loaded) if loaded else "No model")
        self._status_bar.showMessage(message, 15_000)
        self._chat.set_welcome(Welcome(loaded.name) if loaded else Welcome(None))

    def on_load_needs_confirmation(self, source: ModelSource, plan: MemoryPlan) -> None:
        """Ask before a load that does not fit the free memory: the system may kill Hearth, or
        swap until it is unusable. "Load anyway" loads it; Cancel keeps the current model."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Not enough memory",
                          f"{source_label(source)} needs more memory than is free now.", parent=self._window)
        box.setTextFormat(Qt.TextFormat.PlainText)  # a file name is foreign text
        box.setInformativeText(f"{plan_text.details(plan)}\n\nLoading it anyway may make the computer swap "
                               "until it is unusable, or the system may close Hearth. A shorter context "
                               "or a quantized KV cache (Parameters → Model) takes less.")
        load = box.addButton("Load anyway", QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        box.exec()
        if box.clickedButton() is load:
            self._models.load(source, anyway=True)
        else:
            self._status_bar.showMessage(f"Not loaded: {source_label(source)} does not fit the free memory", 10_000)
