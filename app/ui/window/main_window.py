"""The main window: conversations (left), the chat (centre), model and parameters (right).

The window lays out widgets and wires them to the owner objects it is given: the open
conversation (`ChatSession`), the model (`ModelSession`), the downloads (`DownloadManager`),
the saved servers (`RemoteServers`) and the model served to other programs (`LocalServer`),
which outlive it. It holds no chat or model logic of
its own and never touches llama.cpp.

A reply goes on being written when another conversation is opened; opening its conversation
again shows it as far as it got, still streaming. A message sent while the model loads, or
while a reply is being written in another conversation, waits in the message box (which says
so) and is sent when it can be.

Store errors (a damaged or full database, a bad import) are shown in one place, the banner
above the chat (ui/store_problems.py), whichever slot meets them; window_files.py holds what
the window does with conversation files and a damaged database; window_versions.py what it does
with the versions of messages, branches, the context boundary and opening at a search's hit.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence, QTextCursor
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ...conversation.context_use import ContextUse
from ...engine.kv.cache import StateCache
from ...engine.types import LocalModel, ModelSettings
from ...owners.chat_session import ChatSession, FinishedReply
from ...owners.downloads import DownloadManager
from ...owners.local_server import LocalServer
from ...owners.model_session import ModelSession
from ...owners.remote_servers import RemoteServers
from ...owners.settings import Settings
from ...store import Conversation, StoredMessage, StoreError, shorten
from ..app.appearance import appearance_menu
from ..chat.composer import Composer
from ..chat.header import ChatHeader
from ..chat.view import ChatView, MessageView
from ..chat.welcome import Welcome
from ..dialogs.settings import SettingsDialog
from ..models.picker import ModelPicker
from ..models.sort_menu import sort_menu
from ..parameters.panel import ParametersPanel
from ..widgets.focus_ring import FocusRing
from .conversation_list import ConversationList, shown_title
from .files import ConversationFiles
from .focus_order import next_in_order
from .models import ModelDisplay
from .serving import ServingDisplay
from .shortcuts import SHORTCUTS, ShortcutsDialog, shortcut_rows
from .splitter import PanelSplitter
from .store_problems import StoreProblemBanner, reports_store_errors
from .undo_bar import UndoBar
from .versions import VersionActions

log = logging.getLogger(__name__)

# Messages read from the store when a conversation opens, and per "Show earlier messages"
# beyond them: the view renders a page of these at a time.
MESSAGES_LOADED = 200
# The first search results that show what matched under their titles.
SNIPPETS_SHOWN = 100
UNDO_TITLE_CHARS = 40  # of a deleted conversation's title, in the narrow undo bar


class MainWindow(ModelDisplay, ServingDisplay, ConversationFiles, VersionActions, QMainWindow):
    """Signals:
        importFinished(object): an import ended: the new conversation's id, or None when it
            failed (the reason was shown).
    """

    importFinished = Signal(object)

    def __init__(self, models: ModelSession, session: ChatSession, settings: Settings, downloads: DownloadManager,
                 servers: RemoteServers | None = None, local_server: LocalServer | None = None,
                 states: StateCache | None = None):
        """`servers`: the saved remote servers; None gives the window its own over `settings`.
        `local_server`: what serves the model to other programs; None gives the window its own,
        which stops when the window closes. `states`: the conversations' saved KV states the
        engine uses, for File → Settings (None: there are none; Settings says so)."""
        super().__init__()
        self.setWindowTitle("Hearth")
        self.models = models
        self.session = session
        self.downloads = downloads
        self.store = session.store
        self.settings = settings
        self.servers = servers if servers is not None else RemoteServers(settings, self)
        self._own_local_server = local_server is None
        self.local_server = local_server if local_server is not None else LocalServer(session.bridge, models, self)
        self.states = states
        self._get_models_dialog = None
        self._settings_dialog: SettingsDialog | None = None
        self._imports_running = 0  # imports on worker threads, each with its own connection
        self._model_names: dict[str, str] = {}  # a reply's recorded model (its file name) -> the model's own name
        self.actions_with_keys: list[QAction] = []
        self._shown_id: int | None = None  # the conversation the chat shows

        self.conversations = ConversationList()
        self.undo_bar = UndoBar()
        self.store_banner = StoreProblemBanner()
        self.chat_header = ChatHeader()
        self.chat = ChatView()
        self.composer = Composer()
        self.picker = ModelPicker(settings, self.servers)
        self.parameters = ParametersPanel(models)
        self.parameters.set_offload_support(models.offload_support)

        self.left_panel = QWidget()
        left_layout = QVBoxLayout(self.left_panel)
        left_layout.setContentsMargins(0, 0, 0, 6)
        left_layout.addWidget(self.conversations, 1)
        left_layout.addWidget(self.undo_bar)

        centre = QWidget()
        centre_layout = QVBoxLayout(centre)
        centre_layout.setContentsMargins(0, 0, 0, 0)
        centre_layout.setSpacing(0)
        centre_layout.addWidget(self.store_banner)
        centre_layout.addLayout(self._in_the_reading_column(self.chat_header))
        centre_layout.addWidget(self.chat, 1)
        centre_layout.addLayout(self._in_the_reading_column(self.composer))

        self.side_panel = QTabWidget()
        self.side_panel.addTab(self.picker, "Model")
        self.side_panel.addTab(self.parameters, "Parameters")
        self.side_panel.setAccessibleName("Model and parameters")

        self.splitter = PanelSplitter(self.left_panel, centre, self.side_panel)
        self.setCentralWidget(self.splitter)

        self.focus_ring = FocusRing(self)
        self._build_status_bar()
        self._build_menus()
        self._connect()
        self._restore_state()
        self.refresh_conversations()
        # Tab goes round these, in this order (focus_order.py)
        self.focus_regions = [self.composer, self.store_banner, self.chat_header, self.chat, self.side_panel,
                              self.left_panel]

    # --- construction ------------------------------------------------------------------------

    def _build_status_bar(self) -> None:
        self.model_label = QLabel("No model")
        self.model_label.setTextFormat(Qt.TextFormat.PlainText)  # a model's name, or a server's id: foreign text
        self.context_label = QLabel("")
        self.context_label.setToolTip("How much of the model's context window the conversation fills, in tokens "
                                      "(≈: estimated while a reply is written)")
        self.speed_label = QLabel("")
        for label in (self.model_label, self.context_label, self.speed_label):
            label.setContentsMargins(6, 0, 6, 0)
        status = self.statusBar()
        status.addPermanentWidget(self.model_label)
        status.addPermanentWidget(self.context_label)
        status.addPermanentWidget(self.speed_label)
        self._build_serving_status()

    def _in_the_reading_column(self, widget: QWidget) -> QHBoxLayout:
        """On a wide window the messages keep to a centred column (chat_browser.py): the model
        selector above them and the message box below keep to it too, not to the window's
        edges. The widget, centred in a row, as wide as the column at most."""
        widget.setMaximumWidth(self.chat.column_width())
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addStretch(0)
        row.addWidget(widget, 1)
        row.addStretch(0)
        return row

    def _action(self, menu, text, slot, shortcut=None, tip=None) -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ApplicationShortcut)
            self.actions_with_keys.append(action)
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
        self._action(file_menu, "New chat", self.new_chat, SHORTCUTS["new_chat"])
        self._action(file_menu, "Add model file…", self.picker.add_model_file, SHORTCUTS["add_model"])
        self._action(file_menu, "Add model folder…", self.picker.add_folder)
        self._action(file_menu, "Add server…", self.picker.add_server,
                     tip="Use the models of an OpenAI-compatible server")
        self._add_serving_actions(file_menu)
        self._action(file_menu, "Get models from Hugging Face…", self.show_get_models, SHORTCUTS["get_models"])
        file_menu.addSeparator()
        self._action(file_menu, "Import conversation…", self.import_conversation)
        self._action(file_menu, "Export as Markdown…", lambda: self.export_conversation(None, "markdown"))
        self._action(file_menu, "Export as JSON…", lambda: self.export_conversation(None, "json"))
        file_menu.addSeparator()
        # QKeySequence.Preferences, as macOS binds it; Qt binds it nowhere else, so spelled out.
        self._action(file_menu, "Settings…", self.show_settings, SHORTCUTS["settings"])
        self._action(file_menu, "Quit", self.close, QKeySequence.Quit)

        edit_menu = bar.addMenu("&Edit")
        self.undo_action = self._action(edit_menu, "Undo delete", self.undo_bar.undo, SHORTCUTS["undo_delete"])
        # Only while the bar offers it; a text box with focus keeps Ctrl+Z for its own undo.
        self.undo_action.setShortcutContext(Qt.WindowShortcut)
        self.undo_action.setEnabled(False)

        chat_menu = bar.addMenu("&Chat")
        self.stop_action = self._action(chat_menu, "Stop", self.session.stop, SHORTCUTS["stop"])
        self.regenerate_action = self._action(chat_menu, "Regenerate", self.session.regenerate, SHORTCUTS["regenerate"])
        self._add_version_actions(chat_menu)
        chat_menu.addSeparator()
        self._action(chat_menu, "Focus the message box", self.composer.edit.setFocus, SHORTCUTS["focus_input"])

        view_menu = bar.addMenu("&View")
        self.conversations_action = self._action(
            view_menu, "Conversations", lambda: self._toggle(self.left_panel, self.conversations_action),
            SHORTCUTS["conversations_panel"])
        self.panel_action = self._action(
            view_menu, "Model and parameters panel", lambda: self._toggle(self.side_panel, self.panel_action),
            SHORTCUTS["side_panel"])
        for action in (self.conversations_action, self.panel_action):
            action.setCheckable(True)
            action.setChecked(True)
        view_menu.addMenu(sort_menu("&Sort models by", self.picker.view, self))
        view_menu.addSeparator()
        view_menu.addMenu(appearance_menu(self, self.settings))

        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "Keyboard shortcuts", self.show_shortcuts, SHORTCUTS["shortcuts"])

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
        self.conversations.opened.connect(self.open_conversation)
        self.conversations.newRequested.connect(self.new_chat)
        self.conversations.renameRequested.connect(self.rename_conversation)
        self.conversations.deleteRequested.connect(self.delete_conversation)
        self.conversations.exportRequested.connect(self.export_conversation)
        self.conversations.searchChanged.connect(lambda _text: self.refresh_conversations())
        self.undo_bar.offerChanged.connect(self.undo_action.setEnabled)

        session.conversationChanged.connect(self.show_conversation)
        session.conversationsChanged.connect(self.refresh_conversations)
        session.messageAdded.connect(lambda message: self.chat.add_message(self.message_view(message)))
        session.replyStarted.connect(lambda reply: self.chat.begin_reply(
            reply.id, model=self.model_name(reply.model), version=reply.version, versions=reply.versions))
        session.promptProgress.connect(self._show_prompt_progress)
        session.replyChunk.connect(self._show_chunk)
        session.replyFinished.connect(self.on_reply_finished)
        session.busyChanged.connect(self.on_busy_changed)
        session.contextChanged.connect(self._show_context)
        session.error.connect(lambda message: self.statusBar().showMessage(message, 10_000))
        session.error.connect(self.chat.announce_error)
        session.storeFailed.connect(self.show_store_error)
        self.store_banner.export_button.clicked.connect(self.choose_export_folder)
        self.store_banner.move_aside_button.clicked.connect(self.confirm_start_fresh)
        self.chat.earlierRequested.connect(self.load_earlier_messages)

        self.chat.editSubmitted.connect(self.submit_edit)
        self.chat.promptChosen.connect(self.use_prompt)
        self.chat.getModelsRequested.connect(self.show_get_models)
        self.chat.regenerateRequested.connect(self._guarded(session.regenerate))
        self._connect_versions()
        self.chat.linkActivated.connect(self.confirm_open_link)
        self.chat.copied.connect(lambda _text: self.statusBar().showMessage("Copied to the clipboard", 2000))

        self.downloads.modelDownloaded.connect(self.picker.rescan)
        self.picker.modelChosen.connect(self.load_chosen)
        self.picker.loadCancelRequested.connect(models.cancel_load)
        self.picker.unloadRequested.connect(models.unload)
        self.picker.scanFinished.connect(self._on_models_found)
        self.chat_header.modelChosen.connect(self.load_chosen)
        models.templateChanged.connect(lambda name: self.statusBar().showMessage(f"Chat template: {name}", 5000))
        models.templateFailed.connect(lambda message: self.statusBar().showMessage(message, 10_000))
        models.loadStarted.connect(self.on_load_started)
        models.loadProgress.connect(self.picker.set_loading)
        models.modelLoaded.connect(self.on_model_loaded)
        models.loadFailed.connect(self.on_load_failed)
        models.loadNeedsConfirmation.connect(self.on_load_needs_confirmation)
        # The fit column: each file at its saved settings, against the memory free now.
        self.picker.set_planner(lambda path: models.memory_plan(LocalModel(path)))
        self._fits_planned_with: ModelSettings | None = None
        for changed in (models.modelLoaded, models.modelUnloaded):
            changed.connect(self.fits_are_stale)
        models.settingsChanged.connect(self.replan_fits)
        models.modelUnloaded.connect(self.on_model_unloaded)
        if models.current is not None:  # a window opened over a model loaded before it
            self.on_model_loaded(models.current)
        else:
            self.chat.set_welcome(Welcome(None))
        self._connect_serving()

    # --- chat --------------------------------------------------------------------------------

    @reports_store_errors
    def send(self, text: str) -> None:
        """Send text, or let it wait in the box while the model loads or a reply is being
        written in another conversation (the box says so)."""
        if self.composer.waiting:
            return
        waits_for = self._send_waits_for()
        if waits_for is not None:
            self.composer.wait(waits_for)
        elif self.session.send(text):
            self.composer.clear()

    def _send_waits_for(self) -> str | None:
        """Why a message cannot be sent now but can soon, or None."""
        loading = self.models.loading
        if loading is not None:
            name = self.model_name(loading.record_name)
            return f"Will send when {name} has loaded."
        reply_in = self.session.reply_conversation_id
        if reply_in is not None and reply_in != self.session.conversation_id:
            title = shown_title(self.store.get_conversation(reply_in).title)
            return f"Will send when the reply in “{title}” is finished (Esc stops it)."
        return None

    @reports_store_errors
    def _send_waiting(self) -> None:
        """Send the message waiting in the box, if nothing holds it back any more."""
        if self.composer.waiting and self._send_waits_for() is None:
            self.composer.stop_waiting()
            self.send(self.composer.text())

    def new_chat(self) -> None:
        """A new conversation (the open one, if nothing was said in it yet), ready to type in."""
        self._guarded(self.session.new_conversation)()
        self.composer.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def message_view(self, message: StoredMessage) -> MessageView:
        return MessageView(
            id=message.id, role=message.role, content=message.content, stats=message.stats,
            status=message.status, model=self.model_name(message.model),
            version=message.version, versions=message.versions,
        )

    @reports_store_errors
    def show_conversation(self, conversation_id: int | None) -> None:
        """Show the branch shown's newest MESSAGES_LOADED messages (older ones are read when
        asked for; more when a message further up must be in view: window_versions), and the
        line above which the model saw nothing in its last reply; a reply still being written in
        it is shown as far as it got, and goes on streaming."""
        if self.composer.waiting and conversation_id != self._shown_id:
            self.composer.stop_waiting("Not sent: another conversation was opened. Your message is still here.")
        self._shown_id = conversation_id
        if conversation_id is None:
            self.chat.set_messages([])
        else:
            page = self.store.recent_messages(conversation_id, self._messages_to_hand_over(conversation_id, MESSAGES_LOADED))
            reply = self.session.reply_so_far()
            streaming = reply is not None and reply.conversation_id == conversation_id
            shown = [m for m in page.messages if not (streaming and m.id == reply.message_id)]
            self.chat.set_messages([self.message_view(m) for m in shown], page.earlier)
            if streaming:
                written = self.store.message(reply.message_id)
                self.chat.begin_reply(reply.message_id, model=self.model_name(reply.model),
                                      version=written.version, versions=written.versions)
                self.chat.append_text(reply.text)
            self._show_context_boundary()
        self._show_busy()
        self.refresh_conversations()

    def _reply_is_shown(self) -> bool:
        reply_in = self.session.reply_conversation_id
        return reply_in is not None and reply_in == self.session.conversation_id

    def _show_chunk(self, text: str) -> None:
        if self._reply_is_shown():
            self.chat.append_text(text)

    def _show_prompt_progress(self, done: int, total: int) -> None:
        if self._reply_is_shown():
            self.chat.show_prompt_progress(done, total)

    def on_busy_changed(self, busy: bool) -> None:
        self._show_busy()
        if not busy:
            self._send_waiting()

    def _show_busy(self) -> None:
        """Stop in place of Send while the open conversation's reply is written; Regenerate
        only when no reply is being written anywhere (one runs at a time); the version actions
        when they can act."""
        self.composer.set_busy(self._reply_is_shown())
        self.regenerate_action.setEnabled(not self.session.busy)
        self._enable_version_actions()

    def _show_context(self, use: ContextUse) -> None:
        current = self.models.current
        if current is None:
            self.context_label.setText("")
            return
        about = "≈" if use.estimated else ""
        limit = f" / {current.n_ctx:,}" if current.n_ctx else ""  # a server may not say its context length
        self.context_label.setText(f"Context {about}{use.tokens:,}{limit}")

    @reports_store_errors
    def load_earlier_messages(self) -> None:
        conversation_id = self.session.conversation_id
        shown = self.chat.oldest_message_id()
        if conversation_id is None or shown is None:
            return
        page = self.store.recent_messages(conversation_id, MESSAGES_LOADED, before=self.store.message(shown).position)
        self.chat.prepend_messages([self.message_view(m) for m in page.messages], page.earlier)

    def on_reply_finished(self, reply: FinishedReply) -> None:
        stats = reply.stats
        if reply.conversation_id == self.session.conversation_id:
            self.chat.finish_reply(reply.text, stats, reply.status)
            if stats.tokens_per_s:
                self.speed_label.setText(f"{stats.tokens_per_s:.1f} tok/s · first token {stats.ttft_s:.2f} s")
            self._show_context_boundary()
            if stats.dropped_messages:  # the line in the chat stays; this says it as it happens
                self.statusBar().showMessage(
                    f"The oldest {stats.dropped_messages} messages did not fit the context window: "
                    f"see the line in the chat.", 10_000)
        self.refresh_conversations()

    @reports_store_errors
    def submit_edit(self, message_id: int, text: str) -> None:
        """The transcript's editor sent a changed message: it becomes a new version of the
        message (the old one keeps what followed it), answered from there. Not while a reply is
        being written (the editor stays open, nothing is lost)."""
        if self.session.busy:
            self.statusBar().showMessage("A reply is being written: stop it (Esc) or let it finish, then send the edit.", 10_000)
            return
        self.session.edit(message_id, text)

    def use_prompt(self, text: str) -> None:
        """An example prompt from the welcome: into the message box, to send or change."""
        self.composer.edit.setPlainText(text)
        self.composer.edit.moveCursor(QTextCursor.MoveOperation.End)
        self.composer.edit.setFocus(Qt.FocusReason.OtherFocusReason)

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
        if not query:
            self.conversations.set_conversations(self.store.list_conversations(), self.session.conversation_id)
            return
        found = self.store.search(query)
        snippets = self.store.search_snippets(query, [c.id for c in found[:SNIPPETS_SHOWN]])
        self.conversations.set_conversations(found, self.session.conversation_id, snippets, query)

    @reports_store_errors
    def rename_conversation(self, conversation_id: int, title: str) -> None:
        self.store.rename(conversation_id, title)
        QTimer.singleShot(0, self.refresh_conversations)

    @reports_store_errors
    def delete_conversation(self, conversation_id: int) -> None:
        """Move it to the trash (a reply being written in it stops) and offer Undo."""
        was_open = conversation_id == self.session.conversation_id
        deleted = self.session.delete_conversation(conversation_id)
        self.undo_bar.offer(f"Deleted “{shorten(shown_title(deleted.title), UNDO_TITLE_CHARS)}”.",
                            lambda: self.restore_conversation(deleted, was_open))

    @reports_store_errors
    def restore_conversation(self, deleted: Conversation, reopen: bool) -> None:
        self.store.restore(deleted.id)
        if reopen:
            self.session.open(deleted.id)
        else:
            self.refresh_conversations()
        self.statusBar().showMessage(f"Restored “{shown_title(deleted.title)}”", 5000)

    # --- window state ----------------------------------------------------------------------------

    def show_shortcuts(self) -> None:
        """Help → Keyboard shortcuts: every action with keys (from the actions themselves), and
        the keys that are not actions."""
        ShortcutsDialog(shortcut_rows(self.actions_with_keys), self).exec()

    def show_settings(self) -> None:
        """File → Settings…: one window, kept between openings, beside the chat (its changes
        apply at once, so it need not block the window)."""
        if self._settings_dialog is None:
            self._settings_dialog = SettingsDialog(self.settings, self.states, self)
        self._settings_dialog.show()
        self._settings_dialog.raise_()
        self._settings_dialog.activateWindow()

    def focusNextPrevChild(self, next: bool) -> bool:  # noqa: A002 (Qt's name)
        """Tab and Shift+Tab go round the regions in focus_regions' order."""
        target = next_in_order(self.focus_regions, QApplication.focusWidget(), next)
        if target is None:
            return super().focusNextPrevChild(next)
        target.setFocus(Qt.FocusReason.TabFocusReason if next else Qt.FocusReason.BacktabFocusReason)
        return True

    def _toggle(self, panel: QWidget, action: QAction) -> None:
        visible = panel.isHidden()
        panel.setVisible(visible)
        action.setChecked(visible)
        self.splitter.give_chat_room()

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
        if self._own_local_server:
            self.local_server.shutdown()
        super().closeEvent(event)
