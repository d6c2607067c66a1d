"""What the window shows of the model: the status bar's line, the selector above the chat, the
picker's state, the empty chat's welcome, and the name every reply is headed by.

A part of MainWindow kept in a file of its own (the window inherits it and connects
ModelSession's signals to these slots); it uses the window's models, picker, chat_header, chat,
session, composer and status-bar labels.

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

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QMessageBox, QVBoxLayout

from ...common.text import printable, shorten
from ...engine.memory_plan import MemoryPlan
from ...engine.types import LocalModel, ModelDescription, ModelSettings, ModelSource, RemoteModel
from ..chat.welcome import Welcome
from ..models import plan_text
from ..models.remote_rows import RemoteEntry
from ..widgets.tooltips import plain_tooltip

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


class ModelDisplay:
    """The model's side of MainWindow."""

    _model_names: dict[str, str]  # a reply's recorded model (its file name) -> the model's own name

    def model_name(self, record: str | None) -> str | None:
        """The name a reply's model is shown by: the model's own name (what the status bar and
        the model list say), found from the file name a reply records; the file name when the
        file is no longer listed."""
        return self._model_names.get(record, record) if record else record

    def _on_models_found(self) -> None:
        entries, remote = self.picker.entries(), self.picker.remote_entries()
        self._model_names.update({entry.path.name: entry.name for entry in entries if entry.usable})
        self._model_names.update({RemoteModel(entry.server, entry.model.model_id).record_name: entry.name
                                  for entry in remote if entry.usable})
        self.chat_header.set_entries(entries, remote)
        current = self.models.current
        if current is not None:
            self.chat_header.set_current(current.source, current.name)
        if self.models.loading is not None:
            self.chat_header.set_loading(self.models.loading)

    def load_chosen(self, chosen: Path | RemoteEntry | RemoteModel) -> None:
        """Load what the model list or the selector offered: a file, or a server's model (with
        its key from the keyring, which RemoteServers reads)."""
        if isinstance(chosen, RemoteEntry):
            chosen = self.servers.source(chosen.server, chosen.model.model_id)
        self.models.load(chosen)

    def on_load_started(self, source: ModelSource) -> None:
        self.picker.set_loading(0.0)
        self.chat_header.set_loading(source)
        self.model_label.setText(f"Loading {source_label(source)}…")
        self.chat.set_welcome(Welcome(self.model_name(source.record_name), loading=True))

    def show_get_models(self) -> None:
        """The "Get models" window, kept between openings (its search stays); the downloads are
        the DownloadManager's, so closing it stops none of them."""
        if self._get_models_dialog is None:
            from ..models.get_models import GetModelsView  # on first use: it imports the Hugging Face client

            dialog = QDialog(self)
            dialog.setWindowTitle("Get models")
            view = GetModelsView(self.downloads, dialog)
            view.set_vram(self.models.gpu_memory())
            layout = QVBoxLayout(dialog)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.addWidget(view)
            dialog.resize(view.sizeHint())
            self._get_models_dialog = dialog
        self._get_models_dialog.show()
        self._get_models_dialog.raise_()

    def on_model_loaded(self, loaded: ModelDescription) -> None:
        self._model_names[loaded.record_name] = loaded.name
        self.picker.set_loading(None)
        self.picker.set_current(loaded.source)
        self.chat_header.set_current(loaded.source, loaded.name)
        self.model_label.setText(status_name(loaded))
        notes = [printable(note, limit=None) for note in loaded.load_notes]  # llama.cpp's words among them
        self.model_label.setToolTip(plain_tooltip("\n".join(
            [loaded.location, f"Template: {loaded.template_name}", *notes])))
        self._guarded(lambda: self._show_context(self.session.context_use()))()
        loaded_line = f"Loaded {loaded.name} ({where_it_runs(loaded)})"
        if notes:
            self.statusBar().showMessage(" ".join([f"{loaded_line}.", *notes]), NOTES_SHOWN_MS)
        else:
            self.statusBar().showMessage(loaded_line, 5000)
        info = loaded.info  # None for a server's model: the server applies its own chat template
        base_model = info is not None and not (info.chat_template or info.named_chat_templates)
        self.chat.set_welcome(Welcome(loaded.name, base_model=base_model))
        self._send_waiting()

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
            self.picker.refresh_fits()

    def on_model_unloaded(self) -> None:
        self.picker.set_current(None)
        self.chat_header.set_current(None)
        self.model_label.setText("No model")
        self.model_label.setToolTip("")
        self.context_label.setText("")
        self.chat.set_welcome(Welcome(None))

    def on_load_failed(self, message: str) -> None:
        self.picker.show_load_error(message)
        loaded = self.models.current
        self.chat_header.set_current(loaded.source if loaded else None, loaded.name if loaded else None)
        self.model_label.setText(status_name(loaded) if loaded else "No model")
        self.statusBar().showMessage(message, 15_000)
        self.chat.set_welcome(Welcome(loaded.name) if loaded else Welcome(None))
        if self.composer.waiting and self.models.loading is None:
            self.composer.stop_waiting("Not sent: the model could not be loaded. Your message is still here.")

    def on_load_needs_confirmation(self, source: ModelSource, plan: MemoryPlan) -> None:
        """Ask before a load that does not fit the free memory: the system may kill Hearth, or
        swap until it is unusable. "Load anyway" loads it; Cancel keeps the current model."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Not enough memory",
                          f"{source_label(source)} needs more memory than is free now.", parent=self)
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
            self.models.load(source, anyway=True)
        else:
            self.statusBar().showMessage(f"Not loaded: {source_label(source)} does not fit the free memory", 10_000)
