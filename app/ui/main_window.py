"""The main window: conversations (left), the chat (centre), model and parameters (right).

The window lays out widgets and wires them to the owner objects it is given: the open
conversation (`ChatSession`), the model (`ModelSession`) and the downloads (`DownloadManager`),
which outlive it. It holds no chat or model logic of its own and never touches llama.cpp.
"""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog, QInputDialog, QLabel, QMainWindow, QMessageBox, QSplitter, QTabWidget, QVBoxLayout, QWidget,
)

from ..download_manager import DownloadManager
from ..engine.types import LocalModel, ModelDescription
from ..model_session import ModelSession
from ..session import ChatSession, FinishedReply
from ..settings import Settings
from ..store import StoredMessage, StoreError
from .chat_view import ChatView, MessageView
from .composer import Composer
from .conversation_list import ConversationList
from .model_picker import ModelPicker
from .parameters_panel import ParametersPanel
from .shortcuts import SHORTCUTS, ShortcutsDialog

UNDO_SECONDS = 10


def message_view(message: StoredMessage) -> MessageView:
    return MessageView(
        id=message.id, role=message.role, content=message.content, stats=message.stats,
        status=message.status, model=message.model,
    )


class MainWindow(QMainWindow):
    def __init__(self, models: ModelSession, session: ChatSession, settings: Settings, downloads: DownloadManager):
        super().__init__()
        self.setWindowTitle("Hearth")
        self.models = models
        self.session = session
        self.downloads = downloads
        self.store = session.store
        self.settings = settings
        self._get_models_dialog = None

        self.conversations = ConversationList()
        self.chat = ChatView()
        self.composer = Composer()
        self.picker = ModelPicker(settings)
        self.parameters = ParametersPanel(models)
        self.parameters.set_gpu_available(models.gpu_available)

        centre = QWidget()
        centre_layout = QVBoxLayout(centre)
        centre_layout.setContentsMargins(0, 0, 0, 0)
        centre_layout.setSpacing(0)
        centre_layout.addWidget(self.chat, 1)
        centre_layout.addWidget(self.composer)

        self.side_panel = QTabWidget()
        self.side_panel.addTab(self.picker, "Model")
        self.side_panel.addTab(self.parameters, "Parameters")

        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.addWidget(self.conversations)
        self.splitter.addWidget(centre)
        self.splitter.addWidget(self.side_panel)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setCollapsible(1, False)
        self.splitter.setSizes([220, 640, 380])
        self.setCentralWidget(self.splitter)

        self._build_status_bar()
        self._build_menus()
        self._connect()
        self._restore_state()
        self.refresh_conversations()

    # --- construction ------------------------------------------------------------------------

    def _build_status_bar(self) -> None:
        self.model_label = QLabel("No model")
        self.context_label = QLabel("")
        self.speed_label = QLabel("")
        for label in (self.model_label, self.context_label, self.speed_label):
            label.setContentsMargins(6, 0, 6, 0)
        status = self.statusBar()
        status.addPermanentWidget(self.model_label)
        status.addPermanentWidget(self.context_label)
        status.addPermanentWidget(self.speed_label)

    def _action(self, menu, text, slot, shortcut=None, tip=None) -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ApplicationShortcut)
        if tip:
            action.setStatusTip(tip)
        # triggered(bool) would land in a slot's first optional parameter (import_conversation's
        # path was once called with False): menu actions call their slot with no arguments.
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "New chat", self.session.new_conversation, SHORTCUTS["new_chat"])
        self._action(file_menu, "Add model file…", self.picker.add_model_file, SHORTCUTS["add_model"])
        self._action(file_menu, "Add model folder…", self.picker.add_folder)
        self._action(file_menu, "Get models from Hugging Face…", self.show_get_models, "Ctrl+Shift+G")
        file_menu.addSeparator()
        self._action(file_menu, "Import conversation…", self.import_conversation)
        self._action(file_menu, "Export as Markdown…", lambda: self.export_conversation(None, "markdown"))
        self._action(file_menu, "Export as JSON…", lambda: self.export_conversation(None, "json"))
        file_menu.addSeparator()
        self._action(file_menu, "Quit", self.close, QKeySequence.Quit)

        chat_menu = bar.addMenu("&Chat")
        self.stop_action = self._action(chat_menu, "Stop", self.session.stop, SHORTCUTS["stop"])
        self.regenerate_action = self._action(chat_menu, "Regenerate", self.session.regenerate, SHORTCUTS["regenerate"])
        self._action(chat_menu, "Focus the input", self.composer.edit.setFocus, SHORTCUTS["focus_input"])

        view_menu = bar.addMenu("&View")
        self.panel_action = self._action(view_menu, "Model and parameters panel", self.toggle_side_panel, "Ctrl+Shift+M")
        self.panel_action.setCheckable(True)
        self.panel_action.setChecked(True)

        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "Keyboard shortcuts", lambda: ShortcutsDialog(self).exec(), "F1")

    def _connect(self) -> None:
        session, models = self.session, self.models
        self.composer.sendRequested.connect(self.send)
        self.composer.stopRequested.connect(session.stop)
        self.conversations.opened.connect(session.open)
        self.conversations.newRequested.connect(session.new_conversation)
        self.conversations.renameRequested.connect(self.rename_conversation)
        self.conversations.deleteRequested.connect(self.delete_conversation)
        self.conversations.exportRequested.connect(self.export_conversation)
        self.conversations.searchChanged.connect(lambda _text: self.refresh_conversations())

        session.conversationChanged.connect(self.show_conversation)
        session.conversationsChanged.connect(self.refresh_conversations)
        session.messageAdded.connect(lambda message: self.chat.add_message(message_view(message)))
        session.replyStarted.connect(lambda reply: self.chat.begin_reply(reply.id, model=reply.model))
        session.promptProgress.connect(self.chat.show_prompt_progress)
        session.replyChunk.connect(self.chat.append_text)
        session.replyFinished.connect(self.on_reply_finished)
        session.busyChanged.connect(self.on_busy_changed)
        session.error.connect(lambda message: self.statusBar().showMessage(message, 10_000))

        self.chat.editRequested.connect(self.edit_message)
        self.chat.regenerateRequested.connect(session.regenerate)
        self.chat.linkActivated.connect(self.confirm_open_link)
        self.chat.copied.connect(lambda _text: self.statusBar().showMessage("Copied to the clipboard", 2000))

        self.downloads.modelDownloaded.connect(self.picker.rescan)
        self.picker.modelChosen.connect(models.load)
        self.picker.loadCancelRequested.connect(models.cancel_load)
        models.templateChanged.connect(lambda name: self.statusBar().showMessage(f"Chat template: {name}", 5000))
        models.templateFailed.connect(lambda message: self.statusBar().showMessage(message, 10_000))
        models.loadStarted.connect(self.on_load_started)
        models.loadProgress.connect(self.picker.set_loading)
        models.modelLoaded.connect(self.on_model_loaded)
        models.loadFailed.connect(self.on_load_failed)
        if models.current is not None:  # a window opened over a model loaded before it
            self.on_model_loaded(models.current)

    # --- models ------------------------------------------------------------------------------

    def on_load_started(self, source: LocalModel) -> None:
        self.picker.set_loading(0.0)
        self.model_label.setText(f"Loading {source.path.name}…")

    def show_get_models(self) -> None:
        """The "Get models" window, kept between openings (its search stays); the downloads are
        the DownloadManager's, so closing it stops none of them."""
        if self._get_models_dialog is None:
            from PySide6.QtWidgets import QDialog

            from .get_models import GetModelsView

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
        self.picker.set_loading(None)
        self.picker.set_current(loaded.path)
        self.model_label.setText(f"{loaded.name} · {loaded.device.describe()}")
        self.model_label.setToolTip(f"{loaded.path}\nTemplate: {loaded.template_name}")
        self.context_label.setText(f"Context 0 / {loaded.n_ctx:,}")
        self.statusBar().showMessage(f"Loaded {loaded.path.name}", 5000)

    def on_load_failed(self, message: str) -> None:
        self.picker.show_load_error(message)
        loaded = self.models.current
        self.model_label.setText(f"{loaded.name} · {loaded.device.describe()}" if loaded else "No model")
        self.statusBar().showMessage(message, 15_000)

    # --- chat --------------------------------------------------------------------------------

    def send(self, text: str) -> None:
        if self.session.send(text):
            self.composer.clear()

    def show_conversation(self, _conversation_id: int | None) -> None:
        self.chat.set_messages([message_view(m) for m in self.session.messages()])
        self.refresh_conversations()

    def on_reply_finished(self, reply: FinishedReply) -> None:
        stats = reply.stats
        self.chat.finish_reply(reply.text, stats, reply.status)
        if stats.tokens_per_s:
            self.speed_label.setText(f"{stats.tokens_per_s:.1f} tok/s · first token {stats.ttft_s:.2f} s")
        if self.models.current is not None and stats.prompt_tokens:
            used = stats.prompt_tokens + (stats.completion_tokens or 0)
            self.context_label.setText(f"Context {used:,} / {self.models.current.n_ctx:,}")
        if stats.dropped_messages:
            self.statusBar().showMessage(
                f"The conversation was longer than the context window: the oldest "
                f"{stats.dropped_messages} messages were left out of this reply.", 10_000)
        self.refresh_conversations()

    def on_busy_changed(self, busy: bool) -> None:
        self.composer.set_busy(busy)
        self.regenerate_action.setEnabled(not busy)

    def edit_message(self, message_id: int) -> None:
        message = next((m for m in self.session.messages() if m.id == message_id), None)
        if message is None or self.session.busy:
            return
        text, accepted = QInputDialog.getMultiLineText(self, "Edit message", "Change the message and send it again:", message.content)
        if accepted:
            self.session.edit(message_id, text)

    def confirm_open_link(self, url: QUrl) -> None:
        """Links come from model output, which is untrusted: open one only if the user says so."""
        if url.scheme() not in ("http", "https"):
            return
        answer = QMessageBox.question(self, "Open link?", f"Open this link from the reply in your browser?\n\n{url.toString()}")
        if answer == QMessageBox.Yes:
            QDesktopServices.openUrl(url)

    # --- conversations -------------------------------------------------------------------------

    def refresh_conversations(self) -> None:
        query = self.conversations.search.text().strip()
        found = self.store.search(query) if query else self.store.list_conversations()
        self.conversations.set_conversations(found, self.session.conversation_id)

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        self.store.rename(conversation_id, title)
        QTimer.singleShot(0, self.refresh_conversations)

    def delete_conversation(self, conversation_id: int) -> None:
        self._offer_undo(self.session.delete_conversation(conversation_id))

    def _offer_undo(self, deleted) -> None:
        from PySide6.QtWidgets import QPushButton

        button = QPushButton("Undo")
        status = self.statusBar()
        status.showMessage(f"Deleted “{deleted.title or 'New chat'}”", UNDO_SECONDS * 1000)
        status.addWidget(button)

        def undo():
            self.store.restore(deleted.id)
            status.clearMessage()
            button.deleteLater()
            self.refresh_conversations()

        button.clicked.connect(undo)
        QTimer.singleShot(UNDO_SECONDS * 1000, button.deleteLater)
        self._undo_button = button

    def export_conversation(self, conversation_id: int | None, kind: str) -> None:
        conversation_id = conversation_id or self.session.conversation_id
        if conversation_id is None:
            return
        title = self.store.get_conversation(conversation_id).title or "conversation"
        suffix = ".md" if kind == "markdown" else ".json"
        path, _ = QFileDialog.getSaveFileName(self, "Export conversation", title + suffix)
        if path:
            self.write_export(conversation_id, kind, Path(path))

    def write_export(self, conversation_id: int, kind: str, path: Path) -> None:
        if kind == "markdown":
            path.write_text(self.store.export_markdown(conversation_id), encoding="utf-8")
        else:
            data = self.store.export_json(conversation_id)
            path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
        self.statusBar().showMessage(f"Exported to {path}", 5000)

    def import_conversation(self, path: Path | None = None) -> None:
        if path is None:
            chosen, _ = QFileDialog.getOpenFileName(self, "Import conversation", "", "Hearth conversation (*.json)")
            if not chosen:
                return
            path = Path(chosen)
        try:
            conversation_id = self.store.import_json(Path(path).read_bytes())
        except (StoreError, OSError) as exc:
            QMessageBox.warning(self, "Import failed", str(exc))
            return
        self.session.open(conversation_id)

    # --- window state ----------------------------------------------------------------------------

    def toggle_side_panel(self) -> None:
        visible = not self.side_panel.isVisible()
        self.side_panel.setVisible(visible)
        self.panel_action.setChecked(visible)

    def _restore_state(self) -> None:
        geometry, splitter = self.settings.window_state()
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 800)
        if splitter is not None:
            self.splitter.restoreState(splitter)

    def closeEvent(self, event) -> None:
        self.settings.save_window_state(self.saveGeometry(), self.splitter.saveState())
        self.settings.sync()
        self.session.stop()
        super().closeEvent(event)
