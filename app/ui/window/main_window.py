"""The main window: conversations (left), the chat (centre), model and parameters (right).

The window lays out widgets and wires them to the owner objects it is given: the open
conversation (`ChatSession`), the model (`ModelSession`), the downloads (`DownloadManager`),
the saved servers (`RemoteServers`) and the model served to other programs (`LocalServer`),
which outlive it. It holds no chat or model logic of its own and never touches llama.cpp.

A reply goes on being written when another conversation is opened; opening its conversation
again shows it as far as it got, still streaming. A message sent while the model loads, or
while a reply is written elsewhere, waits in the message box (sending.py).

Store errors (a damaged or full database, a bad import) are shown in one place, the banner
above the chat (store_problems.py), whichever slot meets them. The window's jobs beyond laying
out and the chat itself are controllers it owns, each given what it works with: what it shows
of the model (models.py), serving it (serving.py), conversation files and a damaged database
(files.py), sending (sending.py), tool calls and the tools button (tool_calls.py), and the versions of
messages, branches, the context boundary and opening at a search's hit (versions.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

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

from ...engine.kv.cache import StateCache
from ...owners.chat_session import ChatSession
from ...owners.downloads import DownloadManager
from ...owners.local_server import LocalServer
from ...owners.model_session import ModelSession
from ...owners.remote_servers import RemoteServers
from ...owners.replies import FinishedReply
from ...owners.settings import Settings
from ...store import Conversation, ConversationStore, StoredMessage, shorten
from ..chat.composer import Composer
from ..chat.header import ChatHeader
from ..chat.view import ChatView, MessageView
from ..dialogs.settings import SettingsDialog
from ..models.picker import ModelPicker
from ..models.sort_menu import sort_menu
from ..parameters.panel import ParametersPanel
from ..widgets.focus_ring import FocusRing
from ..widgets.shortcuts import SHORTCUTS, ShortcutsDialog, shortcut_rows
from .appearance import appearance_menu
from .citations import Citations
from .conversation_list import ConversationList, shown_title
from .documents import DocumentsDisplay
from .files import ConversationFiles
from .focus_order import next_in_order
from .indexing_status import IndexingStatus
from .menu_actions import MenuActions
from .models import ModelDisplay
from .sending import MessageSending
from .serving import ServingDisplay
from .splitter import PanelSplitter
from .store_problems import StoreProblemBanner, guarded, reports_store_errors
from .tool_calls import ToolCallDisplay
from .undo_bar import UndoBar
from .versions import VersionActions, open_reply_is_shown

log = logging.getLogger(__name__)

# Messages read from the store when a conversation opens, and per "Show earlier messages"
# beyond them: the view renders a page of these at a time.
MESSAGES_LOADED = 200
# The first search results that show what matched under their titles.
SNIPPETS_SHOWN = 100
UNDO_TITLE_CHARS = 40  # of a deleted conversation's title, in the narrow undo bar


class MainWindow(QMainWindow):
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
        self.settings = settings
        self.servers = servers if servers is not None else RemoteServers(settings, self)
        self._own_local_server = local_server is None
        self.local_server = local_server if local_server is not None else LocalServer(session.bridge, models, self)
        self.states = states
        self._settings_dialog: SettingsDialog | None = None
        self._shown_id: int | None = None  # the conversation the chat shows

        self.conversations = ConversationList()
        self.undo_bar = UndoBar()
        self.store_banner = StoreProblemBanner()
        self.chat_header = ChatHeader()
        self.chat = ChatView(read_image=lambda ref: self.session.store.image(ref))  # the store in use when asked
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
        self.menu_actions = MenuActions(self, self.store_banner)
        self.actions_with_keys = self.menu_actions.with_keys
        status = self.statusBar()
        self.versions = VersionActions(session, self.chat, self.conversations, self.undo_bar, self.composer, status,
                                       self.store_banner, self.menu_actions, self)
        self.previous_version_action, self.next_version_action, self.delete_version_action, self.branch_action = (
            self.versions.actions())
        self.model_display = ModelDisplay(models, self.servers, downloads, session, self.picker, self.chat_header,
                                          self.chat, status, self.model_label, self.context_label, self.store_banner, self)
        self.serving = ServingDisplay(self.local_server, settings, models, session, self.chat, status,
                                      self.menu_actions, self)
        self.serving_status = self.serving.serving_status
        self.serving_label, self.copy_address_button = self.serving.serving_label, self.serving.copy_address_button
        self.sending = MessageSending(self.composer, session, models, self.model_display.model_name, self.store_banner, self)
        self.files = ConversationFiles(session, self.store_banner, status, self)
        self.tool_calls = ToolCallDisplay(session, self.chat, self.composer, self.show_conversation, self.show_settings, self)
        self.documents = DocumentsDisplay(session, self, self.chat, self.composer, status, self.show_settings)
        self.indexing_status = IndexingStatus(session, status, self.show_settings, self)
        self.citations = Citations(session, self.chat, self)  # a reply's source opened from its citation
        self.files.importFinished.connect(self.importFinished)
        self._build_menus()
        self._connect()
        self._restore_state()
        self.refresh_conversations()
        # Tab goes round these, in this order (focus_order.py); the status bar's buttons last
        self.focus_regions = [self.composer, self.store_banner, self.chat_header, self.chat, self.side_panel,
                              self.left_panel, self.statusBar()]

    # --- construction ------------------------------------------------------------------------

    def _build_status_bar(self) -> None:
        self.model_label = QLabel("No model")
        self.model_label.setTextFormat(Qt.TextFormat.PlainText)  # a model's name, or a server's id: foreign text
        self.context_label = QLabel("")
        self.context_label.setToolTip("How much of the model's context window the conversation fills, in tokens "
                                      "(≈: estimated while a reply is written)")
        self.speed_label = QLabel("")
        status = self.statusBar()
        for label in (self.model_label, self.context_label, self.speed_label):
            label.setContentsMargins(6, 0, 6, 0)
            status.addPermanentWidget(label)

    def _in_the_reading_column(self, widget: QWidget) -> QHBoxLayout:
        """On a wide window the messages keep to a centred column (ui/chat/browser.py): the model
        selector above them and the message box below keep to it too, not to the window's
        edges. The widget, centred in a row, as wide as the column at most."""
        widget.setMaximumWidth(self.chat.column_width())
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addStretch(0)
        row.addWidget(widget, 1)
        row.addStretch(0)
        return row

    @property
    def store(self) -> ConversationStore:
        """The conversations' store: the session's (moving a damaged database aside replaces it)."""
        return self.session.store

    def _build_menus(self) -> None:
        bar, add = self.menuBar(), self.menu_actions.add
        file_menu = bar.addMenu("&File")
        add(file_menu, "New chat", self.new_chat, SHORTCUTS["new_chat"])
        add(file_menu, "Add model file…", self.picker.add_model_file, SHORTCUTS["add_model"])
        add(file_menu, "Add model folder…", self.picker.add_folder)
        add(file_menu, "Add server…", self.picker.add_server,
                     tip="Use the models of an OpenAI-compatible server")
        self.menu_actions.place(file_menu, self.serving.serve_action, self.serving.copy_address_action)
        add(file_menu, "Get models from Hugging Face…", self.model_display.show_get_models, SHORTCUTS["get_models"])
        file_menu.addSeparator()
        add(file_menu, "Import conversation…", self.files.import_conversation)
        add(file_menu, "Export as Markdown…", lambda: self.files.export_conversation(None, "markdown"))
        add(file_menu, "Export as JSON…", lambda: self.files.export_conversation(None, "json"))
        file_menu.addSeparator()
        # QKeySequence.Preferences, as macOS binds it; Qt binds it nowhere else, so spelled out.
        add(file_menu, "Settings…", self.show_settings, SHORTCUTS["settings"])
        add(file_menu, "Quit", self.close, QKeySequence.Quit)

        edit_menu = bar.addMenu("&Edit")
        self.undo_action = add(edit_menu, "Undo delete", self.undo_bar.undo, SHORTCUTS["undo_delete"])
        # Only while the bar offers it; a text box with focus keeps Ctrl+Z for its own undo.
        self.undo_action.setShortcutContext(Qt.WindowShortcut)
        self.undo_action.setEnabled(False)

        chat_menu = bar.addMenu("&Chat")
        self.stop_action = add(chat_menu, "Stop", self.session.stop, SHORTCUTS["stop"])
        self.regenerate_action = add(chat_menu, "Regenerate", self.session.regenerate, SHORTCUTS["regenerate"])
        self.menu_actions.place(chat_menu, *self.versions.actions())
        chat_menu.addSeparator()
        add(chat_menu, "Focus the message box", self.composer.edit.setFocus, SHORTCUTS["focus_input"])

        view_menu = bar.addMenu("&View")
        self.conversations_action = add(
            view_menu, "Conversations", lambda: self._toggle(self.left_panel, self.conversations_action),
            SHORTCUTS["conversations_panel"])
        self.panel_action = add(
            view_menu, "Model and parameters panel", lambda: self._toggle(self.side_panel, self.panel_action),
            SHORTCUTS["side_panel"])
        for action in (self.conversations_action, self.panel_action):
            action.setCheckable(True)
            action.setChecked(True)
        view_menu.addMenu(sort_menu("&Sort models by", self.picker.view, self))
        view_menu.addSeparator()
        view_menu.addMenu(appearance_menu(self, self.settings))

        help_menu = bar.addMenu("&Help")
        add(help_menu, "Keyboard shortcuts", self.show_shortcuts, SHORTCUTS["shortcuts"])

    def _connect(self) -> None:
        session = self.session
        self.composer.stopRequested.connect(session.stop)
        self.conversations.opened.connect(self.versions.open_conversation)
        self.conversations.newRequested.connect(self.new_chat)
        self.conversations.renameRequested.connect(self.rename_conversation)
        self.conversations.deleteRequested.connect(self.delete_conversation)
        self.conversations.exportRequested.connect(self.files.export_conversation)
        self.conversations.searchChanged.connect(lambda _text: self.refresh_conversations())
        self.undo_bar.offerChanged.connect(self.undo_action.setEnabled)

        session.conversationChanged.connect(self.show_conversation)
        session.conversationsChanged.connect(self.refresh_conversations)
        session.messageAdded.connect(lambda message: self.tool_calls.shows(message)
                                     or self.chat.add_message(self.message_view(message)))
        session.replyStarted.connect(lambda reply: self.chat.begin_reply(
            reply.id, model=self.model_display.model_name(reply.model), version=reply.version, versions=reply.versions))
        session.promptProgress.connect(self._show_prompt_progress)
        session.replyChunk.connect(self._show_chunk)
        session.replyFinished.connect(self.on_reply_finished)
        session.busyChanged.connect(self.on_busy_changed)
        session.error.connect(lambda message: self.statusBar().showMessage(message, 10_000))
        session.error.connect(self.chat.announce_error)
        session.storeFailed.connect(self.store_banner.show_error)
        self.store_banner.export_button.clicked.connect(self.files.choose_export_folder)
        self.store_banner.move_aside_button.clicked.connect(self.files.confirm_start_fresh)
        self.chat.earlierRequested.connect(self.load_earlier_messages)

        self.chat.editSubmitted.connect(self.submit_edit)
        self.chat.promptChosen.connect(self.use_prompt)
        self.chat.getModelsRequested.connect(self.model_display.show_get_models)
        self.chat.regenerateRequested.connect(guarded(session.regenerate, self.store_banner))
        self.chat.linkActivated.connect(self.confirm_open_link)
        self.chat.copied.connect(lambda _text: self.statusBar().showMessage("Copied to the clipboard", 2000))

    # --- chat --------------------------------------------------------------------------------

    def send(self, text: str) -> None:
        """Send text, or let it wait in the box (MessageSending)."""
        self.sending.send(text)

    def new_chat(self) -> None:
        """A new conversation (the open one, if nothing was said in it yet), ready to type in."""
        guarded(self.session.new_conversation, self.store_banner)()
        self.composer.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def message_view(self, message: StoredMessage) -> MessageView:
        return MessageView(
            id=message.id, role=message.role, content=message.content, stats=message.stats,
            status=message.status, model=self.model_display.model_name(message.model),
            version=message.version, versions=message.versions, tool_calls=message.tool_calls,
            tool_result=message.tool_result, sources=message.sources, images=message.images)

    @reports_store_errors
    def show_conversation(self, conversation_id: int | None) -> None:
        """Show the branch shown's newest MESSAGES_LOADED messages (older ones are read when
        asked for; more when a message further up must be in view: versions.py), and the
        line above which the model saw nothing in its last reply; a reply still being written in
        it is shown as far as it got, and goes on streaming."""
        if conversation_id != self._shown_id:
            self.sending.stop_waiting_for("Not sent: another conversation was opened. Your message is still here.")
        self._shown_id = conversation_id
        if conversation_id is None:
            self.chat.set_messages([])
        else:
            page = self.store.recent_messages(conversation_id, self.versions.messages_to_hand_over(conversation_id, MESSAGES_LOADED))
            reply = self.session.reply_so_far()
            streaming = reply is not None and reply.conversation_id == conversation_id
            shown = [m for m in page.messages if not (streaming and m.id == reply.message_id)]
            self.chat.set_messages([self.message_view(m) for m in shown], page.earlier)
            if streaming:
                written = self.store.message(reply.message_id)
                self.chat.begin_reply(reply.message_id, model=self.model_display.model_name(reply.model),
                                      version=written.version, versions=written.versions)
                self.chat.append_text(reply.text)
            self.versions.show_context_boundary()
        self._show_busy()
        self.refresh_conversations()

    def _show_chunk(self, text: str) -> None:
        if open_reply_is_shown(self.session):
            self.chat.append_text(text)

    def _show_prompt_progress(self, done: int, total: int) -> None:
        if open_reply_is_shown(self.session):
            self.chat.show_prompt_progress(done, total)

    def on_busy_changed(self, busy: bool) -> None:
        self._show_busy()
        if not busy:
            self.sending.send_waiting()

    def _show_busy(self) -> None:
        """Stop in place of Send while the open conversation's reply is written; Regenerate
        only when no reply is being written anywhere (one runs at a time); the version actions
        when they can act."""
        self.composer.set_busy(open_reply_is_shown(self.session))
        self.regenerate_action.setEnabled(not self.session.busy)
        self.versions.enable_actions()

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
            self.versions.show_context_boundary()
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
            return self.statusBar().showMessage(
                "A reply is being written: stop it (Esc) or let it finish, then send the edit.", 10_000)
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
        if QMessageBox.question(self, "Open link?", f"Open this link from the reply in your browser?\n\n{url.toString()}") == QMessageBox.Yes:
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

    # --- what tests and the application call by the window's name --------------------------------

    def import_conversation(self, path: Path | None = None) -> None:
        """Import an export file and open it; None asks for one (ConversationFiles)."""
        self.files.import_conversation(path)

    def write_export(self, conversation_id: int, kind: str, path: Path) -> None:
        """Export a conversation as "markdown" or "json" to path (ConversationFiles)."""
        self.files.write_export(conversation_id, kind, path)

    def check_database(self) -> None:
        """Say at start-up whether the database is damaged (ConversationFiles)."""
        self.files.check_database()

    def export_readable(self, folder: Path) -> tuple[int, int]:
        """Export each readable conversation into folder: (written, unreadable) (ConversationFiles)."""
        return self.files.export_readable(folder)

    def start_fresh(self) -> Path | None:
        """Move a damaged database aside and start an empty one; where it went (ConversationFiles)."""
        return self.files.start_fresh()

    # --- window state ----------------------------------------------------------------------------

    def show_shortcuts(self) -> None:
        """Help → Keyboard shortcuts: every action with keys (from the actions themselves), and
        the keys that are not actions."""
        ShortcutsDialog(shortcut_rows(self.actions_with_keys), self).exec()

    def show_settings(self, page: str | None = None) -> None:
        """File → Settings…, open at the tab `page` ("tools", "documents"; None: as it was left)."""
        if self._settings_dialog is None:
            self._settings_dialog = SettingsDialog.of_session(self.settings, self.states, self.session, self)
        self._settings_dialog.show_page(page)
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
