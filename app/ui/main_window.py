"""The main window: conversations (left), the chat (centre), model and parameters (right).

The window lays out widgets and wires them to the owner objects it is given: the open
conversation (`ChatSession`), the model (`ModelSession`) and the downloads (`DownloadManager`),
which outlive it. It holds no chat or model logic of its own and never touches llama.cpp.

Store errors (a damaged or full database, a bad import) are shown in one place, the banner
above the chat (ui/store_problems.py), whichever slot meets them; a damaged database offers
to export what is readable and to move the file aside and start afresh.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog, QInputDialog, QLabel, QMainWindow, QMessageBox, QPushButton, QSplitter,
    QTabWidget, QVBoxLayout, QWidget,
)

from ..download_manager import DownloadManager
from ..engine.types import LocalModel, ModelDescription
from ..model_session import ModelSession
from ..session import ChatSession, FinishedReply
from ..settings import Settings
from ..store import ConversationStore, DatabaseDamaged, StoredMessage, StoreError, import_file, shorten
from ..store.schema import move_aside, quick_check
from .background import run_in_background
from .chat_view import ChatView, MessageView
from .composer import Composer
from .conversation_list import TITLE_SHOWN_CHARS, ConversationList, shown_title
from .model_picker import ModelPicker
from .parameters_panel import ParametersPanel
from .shortcuts import SHORTCUTS, ShortcutsDialog
from .store_problems import StoreProblemBanner, reports_store_errors

log = logging.getLogger(__name__)

UNDO_SECONDS = 10
# Messages read from the store when a conversation opens, and per "Show earlier messages"
# beyond them: the view renders a page of these at a time.
MESSAGES_LOADED = 200
_UNSAFE_IN_FILE_NAMES = re.compile(r'[\x00-\x1f<>:"/\\|?*]+')


def export_file_name(title: str) -> str:
    """A title as a file name: shortened, no path separators or characters a file system refuses."""
    return _UNSAFE_IN_FILE_NAMES.sub("_", shorten(title, TITLE_SHOWN_CHARS)).strip(" .") or "conversation"


def message_view(message: StoredMessage) -> MessageView:
    return MessageView(
        id=message.id, role=message.role, content=message.content, stats=message.stats,
        status=message.status, model=message.model,
    )


class MainWindow(QMainWindow):
    """Signals:
        importFinished(object): an import ended: the new conversation's id, or None when it
            failed (the reason was shown).
    """

    importFinished = Signal(object)

    def __init__(self, models: ModelSession, session: ChatSession, settings: Settings, downloads: DownloadManager):
        super().__init__()
        self.setWindowTitle("Hearth")
        self.models = models
        self.session = session
        self.downloads = downloads
        self.store = session.store
        self.settings = settings
        self._get_models_dialog = None
        self._imports_running = 0  # imports on worker threads, each with its own connection

        self.conversations = ConversationList()
        self.store_banner = StoreProblemBanner()
        self.chat = ChatView()
        self.composer = Composer()
        self.picker = ModelPicker(settings)
        self.parameters = ParametersPanel(models)
        self.parameters.set_gpu_available(models.gpu_available)

        centre = QWidget()
        centre_layout = QVBoxLayout(centre)
        centre_layout.setContentsMargins(0, 0, 0, 0)
        centre_layout.setSpacing(0)
        centre_layout.addWidget(self.store_banner)
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
        action.triggered.connect(lambda _checked=False: self._guarded(slot)())
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

    def _guarded(self, call):
        """call (a session method the window connects to) with its StoreError shown in the banner."""

        def guarded(*args):
            try:
                return call(*args)
            except StoreError as exc:
                self.show_store_error(exc)
                return None

        return guarded

    def _connect(self) -> None:
        session, models = self.session, self.models
        self.composer.sendRequested.connect(self.send)
        self.composer.stopRequested.connect(session.stop)
        self.conversations.opened.connect(self._guarded(session.open))
        self.conversations.newRequested.connect(self._guarded(session.new_conversation))
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
        session.storeFailed.connect(self.show_store_error)
        self.store_banner.export_button.clicked.connect(self.choose_export_folder)
        self.store_banner.move_aside_button.clicked.connect(self.confirm_start_fresh)
        self.chat.earlierRequested.connect(self.load_earlier_messages)

        self.chat.editRequested.connect(self.edit_message)
        self.chat.regenerateRequested.connect(self._guarded(session.regenerate))
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

    @reports_store_errors
    def send(self, text: str) -> None:
        if self.session.send(text):
            self.composer.clear()

    @reports_store_errors
    def show_conversation(self, conversation_id: int | None) -> None:
        """Show the newest MESSAGES_LOADED messages; older ones are read when asked for."""
        if conversation_id is None:
            self.chat.set_messages([])
        else:
            page = self.store.recent_messages(conversation_id, MESSAGES_LOADED)
            self.chat.set_messages([message_view(m) for m in page.messages], page.earlier)
        self.refresh_conversations()

    @reports_store_errors
    def load_earlier_messages(self) -> None:
        conversation_id = self.session.conversation_id
        shown = self.chat.oldest_message_id()
        if conversation_id is None or shown is None:
            return
        page = self.store.recent_messages(conversation_id, MESSAGES_LOADED, before=self.store.message(shown).position)
        self.chat.prepend_messages([message_view(m) for m in page.messages], page.earlier)

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

    @reports_store_errors
    def edit_message(self, message_id: int) -> None:
        if self.session.busy:
            return
        message = self.store.message(message_id)
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

    @reports_store_errors
    def refresh_conversations(self) -> None:
        query = self.conversations.search.text().strip()
        found = self.store.search(query) if query else self.store.list_conversations()
        self.conversations.set_conversations(found, self.session.conversation_id)

    @reports_store_errors
    def rename_conversation(self, conversation_id: int, title: str) -> None:
        self.store.rename(conversation_id, title)
        QTimer.singleShot(0, self.refresh_conversations)

    @reports_store_errors
    def delete_conversation(self, conversation_id: int) -> None:
        self._offer_undo(self.session.delete_conversation(conversation_id))

    def _offer_undo(self, deleted) -> None:
        from PySide6.QtWidgets import QPushButton

        button = QPushButton("Undo")
        status = self.statusBar()
        status.showMessage(f"Deleted “{shown_title(deleted.title)}”", UNDO_SECONDS * 1000)
        status.addWidget(button)

        @self._guarded
        def undo():
            self.store.restore(deleted.id)
            status.clearMessage()
            button.deleteLater()
            self.refresh_conversations()

        button.clicked.connect(undo)
        QTimer.singleShot(UNDO_SECONDS * 1000, button.deleteLater)
        self._undo_button = button

    @reports_store_errors
    def export_conversation(self, conversation_id: int | None, kind: str) -> None:
        conversation_id = conversation_id or self.session.conversation_id
        if conversation_id is None:
            return
        suffix = ".md" if kind == "markdown" else ".json"
        name = export_file_name(self.store.get_conversation(conversation_id).title) + suffix
        path, _ = QFileDialog.getSaveFileName(self, "Export conversation", name)
        if path:
            self.write_export(conversation_id, kind, Path(path))

    @reports_store_errors
    def write_export(self, conversation_id: int, kind: str, path: Path) -> None:
        if kind == "markdown":
            text = self.store.export_markdown(conversation_id)
        else:
            text = json.dumps(self.store.export_json(conversation_id), ensure_ascii=False, indent=2)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            QMessageBox.warning(self, "Export failed", f"Can't write {shorten(str(path))}: {exc.strerror or exc}.")
            return
        self.statusBar().showMessage(f"Exported to {shorten(str(path))}", 5000)

    def import_conversation(self, path: Path | None = None) -> None:
        """Import an export file on a worker thread (a large one takes seconds to read and
        check), then open it; every failure is one message and imports nothing."""
        if path is None:
            chosen, _ = QFileDialog.getOpenFileName(self, "Import conversation", "", "Hearth conversation (*.json)")
            if not chosen:
                return
            path = Path(chosen)
        path, database = Path(path), self.store.path
        self.statusBar().showMessage(f"Importing {shorten(path.name)}…")
        self._imports_running += 1
        run_in_background(lambda: import_file(database, path), lambda result, error: self._imported(path, result, error), self)

    def _imported(self, path: Path, conversation_id: int | None, error: Exception | None) -> None:
        self._imports_running -= 1
        self.statusBar().clearMessage()
        if error is not None:
            if not isinstance(error, StoreError):  # a case the checks missed: still a message, logged
                log.error("importing %s failed", path, exc_info=error)
            self.store_banner.show_problem(f"Could not import {shorten(path.name)}: {shorten(str(error), 300)}", False)
            self.importFinished.emit(None)
            return
        self._guarded(self.session.open)(conversation_id)
        self.statusBar().showMessage(f"Imported {shorten(path.name)}", 5000)
        self.importFinished.emit(conversation_id)

    # --- a damaged database ------------------------------------------------------------------------

    def show_store_error(self, error: StoreError) -> None:
        damaged = isinstance(error, DatabaseDamaged)
        text = shorten(str(error), 400)
        if damaged:
            text += (" Some conversations may not open or be found. Export what is readable, or move the "
                     "file aside (it is kept) and start with an empty one.")
        self.store_banner.show_problem(text, damaged)

    def check_database(self) -> None:
        """PRAGMA quick_check on a worker thread (it reads the whole file), so that damage is
        said at start-up rather than when a conversation fails to open."""
        path = self.store.path
        run_in_background(lambda: quick_check(path), self._checked, self)

    def _checked(self, problems: list[str] | None, error: Exception | None) -> None:
        if error is None and problems:
            self.show_store_error(DatabaseDamaged(
                f"The conversation database {self.store.path} is damaged ({problems[0]})."))

    def choose_export_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export readable conversations to")
        if folder:
            self.export_readable(Path(folder))

    def export_readable(self, folder: Path) -> tuple[int, int]:
        """Write each conversation that can still be read as JSON into folder; returns how many
        were written and how many could not be read."""
        try:
            conversations = self.store.list_conversations()
        except StoreError as exc:
            self.show_store_error(exc)
            return 0, 0
        written = failed = 0
        for conversation in conversations:
            target = folder / f"{conversation.id} {export_file_name(conversation.title)}.json"
            try:
                data = self.store.export_json(conversation.id)
                target.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
                written += 1
            except (StoreError, OSError):
                failed += 1
        unread = f"; {failed} could not be read" if failed else ""
        self.statusBar().showMessage(f"Exported {written} conversations to {shorten(str(folder))}{unread}.", 15_000)
        return written, failed

    @reports_store_errors
    def confirm_start_fresh(self) -> None:
        answer = QMessageBox.question(
            self, "Start with an empty database?",
            f"Hearth will rename {self.store.path.name} (keeping it beside the new one) and start with "
            "an empty conversation database.")
        if answer == QMessageBox.Yes:
            self.start_fresh()

    def start_fresh(self) -> Path | None:
        """Move the damaged database aside (never deleted) and carry on with an empty one;
        returns where the old one went."""
        path = self.store.path
        if self._imports_running:  # its own connection writes to the file by name
            self.store_banner.show_problem(
                "An import is still being written into the database; move it aside when it has finished.", True)
            return None
        self.store.close()
        try:
            moved = move_aside(path)
            fresh = ConversationStore(path)
        except (OSError, StoreError) as exc:
            self.store = self.session.store = ConversationStore(path)  # as it was, or StoreError
            self.show_store_error(StoreError(f"Could not move {path} aside: {shorten(str(exc))}."))
            return None
        self.store = fresh
        self.session.replace_store(fresh)
        self.store_banner.show_problem(f"The damaged database was moved to {moved}; Hearth started an empty one.", False)
        return moved

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
