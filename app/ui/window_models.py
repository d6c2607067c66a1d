"""What the window shows of the model: the status bar's line, the selector above the chat, the
picker's state, the empty chat's welcome, and the name every reply is headed by.

A part of MainWindow kept in a file of its own (the window inherits it and connects
ModelSession's signals to these slots); it uses the window's models, picker, chat_header, chat,
session, composer and status-bar labels.

One name for a model everywhere: the name the model gives itself ("Gemma 3 270m"), as the
status bar and the model list show it. A reply records the file it was written by (several
files can carry one name); the file name is shown where the name is not enough (the
selector, tooltips).
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QVBoxLayout

from ..engine.text import printable
from ..engine.types import LocalModel, ModelDescription
from .welcome import Welcome


class ModelDisplay:
    """The model's side of MainWindow."""

    _model_names: dict[str, str]  # a reply's recorded model (its file name) -> the model's own name

    def model_name(self, record: str | None) -> str | None:
        """The name a reply's model is shown by: the model's own name (what the status bar and
        the model list say), found from the file name a reply records; the file name when the
        file is no longer listed."""
        return self._model_names.get(record, record) if record else record

    def _on_models_found(self) -> None:
        entries = self.picker.entries()
        self._model_names.update({entry.path.name: entry.name for entry in entries if entry.usable})
        self.chat_header.set_entries(entries)
        current = self.models.current
        if current is not None:
            self.chat_header.set_current(current.path, current.name)
        if self.models.loading is not None:
            self.chat_header.set_loading(self.models.loading.path)

    def on_load_started(self, source: LocalModel) -> None:
        self.picker.set_loading(0.0)
        self.chat_header.set_loading(source.path)
        self.model_label.setText(f"Loading {printable(source.path.name)}…")
        self.chat.set_welcome(Welcome(self.model_name(source.settings_key), loading=True))

    def show_get_models(self) -> None:
        """The "Get models" window, kept between openings (its search stays); the downloads are
        the DownloadManager's, so closing it stops none of them."""
        if self._get_models_dialog is None:
            from .get_models import GetModelsView  # on first use: it imports the Hugging Face client

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
        self.picker.set_current(loaded.path)
        self.chat_header.set_current(loaded.path, loaded.name)
        self.model_label.setText(f"{loaded.name} · {loaded.device.describe()}")
        self.model_label.setToolTip(f"{loaded.path}\nTemplate: {loaded.template_name}")
        self._guarded(lambda: self._show_context(self.session.context_use()))()
        self.statusBar().showMessage(f"Loaded {loaded.name} ({printable(loaded.path.name)})", 5000)
        info = loaded.info
        self.chat.set_welcome(Welcome(loaded.name, base_model=not (info.chat_template or info.named_chat_templates)))
        self._send_waiting()

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
        self.chat_header.set_current(loaded.path if loaded else None, loaded.name if loaded else None)
        self.model_label.setText(f"{loaded.name} · {loaded.device.describe()}" if loaded else "No model")
        self.statusBar().showMessage(message, 15_000)
        self.chat.set_welcome(Welcome(loaded.name) if loaded else Welcome(None))
        if self.composer.waiting and self.models.loading is None:
            self.composer.stop_waiting("Not sent: the model could not be loaded. Your message is still here.")
