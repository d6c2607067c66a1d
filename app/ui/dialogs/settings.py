"""File → Settings…: the settings that belong to no model or conversation, one group each.

Every change applies at once and is written to the settings file, so the dialog has no OK or
Apply, only Close (Esc). A tab per group: the tool servers (MCP: ToolsGroup, over the
application's ToolServerManager), the document collections (DocumentsPage, over the
application's DocumentLibrary), and the conversations' saved KV states (#14), whose disk
budget and Clear act on the running `StateCache` the engine shares.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ...common.units import GIB, MIB, byte_size
from ...engine.kv.cache import StateCache
from ...owners.chat_session import ChatSession
from ...owners.documents import DocumentLibrary
from ...owners.settings import Settings
from ...owners.tool_servers import ToolServerManager
from ..widgets.escape import claims_escape
from ..widgets.focus_ring import FocusRing
from ..widgets.plain_message import tell
from .documents_page import DocumentsPage
from .tool_servers import ToolServersPage

MAX_BUDGET_GIB = 1024.0  # the budget is memory-like: binary, as the settings file's MiB are
BUDGET_STEP_GIB = 0.5
EXPLANATION = (
    "Hearth keeps the model's reading of each conversation, so going back to one is instant instead of "
    "reading it all again. These saved states can always be rebuilt: clearing them loses nothing but that time."
)
BUDGET_HINT = "The least recently used go first; 0 keeps none on disk."
NOT_KEPT = ("There is no system keyring to keep the servers' environment and header values in, so they are "
            "kept until Hearth quits: enter them again next time.")
NO_FOLDER = "The folder for saved states could not be made, so none are kept while Hearth runs (see the log)."


def size_text(size: int) -> str:
    """"412 MiB", "1.3 GiB": in the units the budget is set in."""
    return byte_size(size, memory=True)


class SavedStatesGroup(QGroupBox):
    """Saved conversation states: what they are, the size on disk, the disk budget, Clear.

    `states` None: the cache's folder could not be made; the group says so, its controls
    disabled (the budget is still shown: it applies from the next start).

    Signals:
        statesChanged(bool): the budget changed (False) or every state was cleared (True), in
            `states`: the engine's process, which keeps states of its own, is told.
    """

    statesChanged = Signal(bool)

    def __init__(self, settings: Settings, states: StateCache | None, parent: QWidget | None = None):
        super().__init__("Saved conversation states", parent)
        self.settings = settings
        self.states = states

        explanation = QLabel(EXPLANATION if states is not None else f"{EXPLANATION}\n\n{NO_FOLDER}")
        explanation.setWordWrap(True)

        self.size_label = QLabel()
        self.size_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        size_caption = QLabel("On disk:")
        size_caption.setBuddy(self.size_label)

        self.budget = QDoubleSpinBox()
        self.budget.setRange(0.0, MAX_BUDGET_GIB)
        self.budget.setDecimals(1)
        self.budget.setSingleStep(BUDGET_STEP_GIB)
        self.budget.setSuffix(" GiB")
        self.budget.setSpecialValueText("None on disk")  # shown at 0
        self.budget.setValue(settings.saved_state_budget / GIB)
        # Applied on Enter, an arrow step or leaving the box, not at each digit typed: typing
        # "10" must not shrink the cache to 1 GiB on the way.
        self.budget.setKeyboardTracking(False)
        self.budget.setAccessibleName("Disk budget for saved states")
        self.budget.setAccessibleDescription(f"The most disk space saved states may take. {BUDGET_HINT}")
        budget_caption = QLabel("&Disk budget:")
        budget_caption.setBuddy(self.budget)
        budget_hint = QLabel(BUDGET_HINT)
        budget_hint.setWordWrap(True)

        self.clear_button = QPushButton("&Clear saved states")
        self.clear_button.setAccessibleName("Clear saved states")
        self.clear_button.setAccessibleDescription(
            "Deletes every saved state now. Nothing is lost: a conversation is read again when it is next used.")
        self.clear_button.setToolTip(self.clear_button.accessibleDescription())
        self.clear_button.setAutoDefault(False)  # Enter in the budget box applies it, never clears

        budget_row = QHBoxLayout()
        budget_row.addWidget(self.budget)
        budget_row.addWidget(budget_hint, 1)
        size_row = QHBoxLayout()
        size_row.addWidget(self.size_label, 1)
        size_row.addWidget(self.clear_button)
        form = QFormLayout()
        form.addRow(budget_caption, budget_row)
        form.addRow(size_caption, size_row)
        layout = QVBoxLayout(self)
        layout.addWidget(explanation)
        layout.addLayout(form)

        if states is None:
            for control in (self.budget, self.clear_button):
                control.setEnabled(False)
        self.budget.valueChanged.connect(self._budget_changed)
        self.clear_button.clicked.connect(self._clear)
        self.refresh()

    def refresh(self) -> None:
        """Show the size on disk now (the engine may have saved a state since)."""
        if self.states is None:
            self.size_label.setText("Nothing (not saved this session)")
            return
        size, count = self.states.usage()
        if count == 0 and size == 0:
            self.size_label.setText("Nothing saved")
        else:
            noun = "conversation" if count == 1 else "conversations"
            self.size_label.setText(f"{size_text(size)} in {count} {noun}")

    def _budget_changed(self, gigabytes: float) -> None:
        budget = round(gigabytes * GIB / MIB) * MIB  # whole megabytes, as the settings file keeps it
        self.settings.saved_state_budget = budget
        self.settings.sync()
        if self.states is not None:
            self.states.disk_budget = budget
            self.statesChanged.emit(False)
        self.refresh()

    def _clear(self) -> None:
        if self.states is not None:
            self.states.clear()
            self.statesChanged.emit(True)
        self.refresh()


class ToolsGroup(QGroupBox):
    """Tool servers (MCP): the page of ToolServersPage over the application's ToolServerManager,
    whose changes apply at once (a server switched off stops; one switched on starts when used)."""

    def __init__(self, servers: ToolServerManager, parent: QWidget | None = None):
        super().__init__("Tool servers", parent)
        self.servers = servers
        self.page = ToolServersPage()
        self.page.set_configs(servers.servers())
        self.page.set_statuses(servers.statuses())
        self.page.set_step_limit(servers.step_limit)
        self.page.set_result_cap(servers.result_cap_bytes)
        self.page.configsEdited.connect(self._edited)
        self.page.importRequested.connect(self._import)
        self.page.stepLimitChanged.connect(lambda steps: setattr(servers, "step_limit", steps))
        self.page.resultCapChanged.connect(lambda size: setattr(servers, "result_cap_bytes", size))
        servers.serversChanged.connect(lambda: self.page.set_configs(servers.servers()))
        servers.statusChanged.connect(lambda _status: self.page.set_statuses(servers.statuses()))
        QVBoxLayout(self).addWidget(self.page)

    def _edited(self, configs) -> None:
        if not self.servers.set_servers(configs):
            tell(self, "Tool servers", NOT_KEPT, warning=True)

    def _import(self, path: str) -> None:
        """Add a file's servers, switched off; a file that does not read says why and adds none."""
        try:
            added = self.servers.import_file(Path(path))
        except (ValueError, OSError) as exc:
            tell(self, "Import tool servers", f"Nothing was imported: {exc}", warning=True)
            return
        tell(self, "Import tool servers", f"{len(added)} servers were added, each switched off: "
             "switch on those you trust." if added else "The file lists no servers.")
        if not self.servers.secrets_kept:
            tell(self, "Tool servers", NOT_KEPT, warning=True)


class SettingsDialog(QDialog):
    """The settings window: a tab per group (the tool servers' and the documents', where the
    window has them; the saved states'). One window, kept by the main window between openings
    (`show_settings`) and shown beside the chat: its changes apply at once, so it need not block
    the window."""

    def __init__(self, settings: Settings, states: StateCache | None, servers: ToolServerManager | None = None,
                 parent: QWidget | None = None, documents: DocumentLibrary | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        FocusRing(self)
        self.saved_states = SavedStatesGroup(settings, states)
        self.tools = ToolsGroup(servers) if servers is not None else None
        self.documents = DocumentsPage(documents) if documents is not None else None
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Settings groups")
        if self.tools is not None:
            self.tabs.addTab(self.tools, "&Tools")
        if self.documents is not None:
            self.tabs.addTab(self.documents, "D&ocuments")
        self.tabs.addTab(self.saved_states, "Saved &states")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        # Enter applies a typed budget; as the default button, Close would also shut the dialog.
        buttons.button(QDialogButtonBox.StandardButton.Close).setAutoDefault(False)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)
        # The Documents tab's lists would make it taller than a small screen: they scroll.
        self.resize(620 if self.documents is None else 720, min(self.sizeHint().height(), 640))

    @classmethod
    def of_session(cls, settings: Settings, states: StateCache | None, session: ChatSession,
                   parent: QWidget | None = None) -> SettingsDialog:
        """The dialog over what the session has beside the settings: its tool servers and its
        document collections, each where it has them."""
        servers = session.tools.servers if session.tools is not None else None
        library = session.documents.library if session.documents is not None else None
        dialog = cls(settings, states, servers, parent, documents=library)
        if states is not None:
            dialog.saved_states.statesChanged.connect(
                lambda cleared: session.bridge.saved_states_changed(states.place(), cleared))
        return dialog

    def show_page(self, page: str | None) -> None:
        """Open at the "tools" tab (the tools button's "Manage tool servers…") or the "documents"
        one (the status bar's indexing), else as left."""
        chosen = {"tools": self.tools, "documents": self.documents}.get(page or "")
        if chosen is not None:
            self.tabs.setCurrentWidget(chosen)

    def event(self, event: QEvent) -> bool:
        """Esc closes the dialog: claimed before the main window's application-wide Esc (Stop)
        takes it, since the dialog does not block that window."""
        return claims_escape(event) or super().event(event)

    def showEvent(self, event) -> None:
        self.saved_states.refresh()
        super().showEvent(event)

    def done(self, result: int) -> None:
        """Closing (Close, Esc) keeps a budget typed but not yet entered, as leaving the box would."""
        self.saved_states.budget.interpretText()
        super().done(result)
