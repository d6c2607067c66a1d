"""Settings → Tools: the tool servers (MCP) Hearth knows, how each is doing, and the agent
loop's step limit.

The page only shows and edits typed values: set_configs() gives it the servers, set_statuses()
how they are doing, and every change (Add…, Edit…, Remove, a server switched on or off) comes
back as the whole new list through configsEdited, for the owner that keeps them (secrets in the
keyring) and supervises them. Import mcp.json… only picks the file: the owner reads it.

The list is a table read as rows (widgets/row_tables): the tick beside a name switches the
server on or off (Space does it for the selected row, wherever the keyboard is in it), Enter or
a double click edits it, Delete removes it after asking. Names and reasons are the user's or a
server's: shown as item text, never rich text.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QPalette
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...common.text import shorten
from ...tool_servers.limits import MAX_RESULT_CAP_KB, MAX_STEP_LIMIT, RESULT_CAP_BYTES, STEP_LIMIT
from ...tool_servers.types import ServerConfig, ServerState, ServerStatus, Transport
from ..widgets.buttons import described_button
from ..widgets.colors import error_color, mix
from ..widgets.plain_message import ask
from ..widgets.row_tables import as_row_list
from ..widgets.tooltips import plain_tooltip
from .tool_server_editor import ToolServerEditor

EXPLANATION = ("Tool servers give the model tools to call. Hearth asks you before each call runs, unless you "
               "chose to always allow that tool. Choose which servers a conversation may use with the Tools "
               "button beside the message box.")
STEP_HINT = "How many times in a row the model may call tools before it must answer."
RESULT_HINT = "How much of a tool's result the model reads and the conversation keeps; the rest is cut."
SERVER, KIND, STATE = range(3)


def state_words(status: ServerStatus | None, config: ServerConfig) -> str:
    """How a server is doing, in a few words ("Ready · 3 tools", "Failed: …")."""
    if not config.enabled:
        return "Off"
    if status is None or status.state is ServerState.IDLE:
        return "Starts when used"
    if status.state is ServerState.READY:
        count = len(status.tools)
        return f"Ready · {count} tool" + ("" if count == 1 else "s")
    if status.state is ServerState.STARTING:
        return "Starting…"
    if status.state is ServerState.FAILED:
        return f"Failed: {shorten(status.reason or 'no reason given', 100)}"
    return "Off"


class ToolServersPage(QWidget):
    """The Tools group of Settings.

    Signals:
        configsEdited(object): the user changed the servers: the new list of ServerConfig, in
            order (added at the end).
        importRequested(str): Import mcp.json… chose this file.
        stepLimitChanged(int): the step limit the user set.
        resultCapChanged(int): the result limit the user set, in bytes.
    """

    configsEdited = Signal(object)
    importRequested = Signal(str)
    stepLimitChanged = Signal(int)
    resultCapChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._configs: list[ServerConfig] = []
        self._statuses: dict[str, ServerStatus] = {}
        self._filling = False
        self.editor: ToolServerEditor | None = None  # the one open, if any
        explanation = QLabel(EXPLANATION)
        explanation.setWordWrap(True)
        self.table = QTableWidget(0, 3, self)
        self.table.setHorizontalHeaderLabels(["Server", "Kind", "State"])
        as_row_list(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(SERVER, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(KIND, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.setAccessibleName("Tool servers")
        self.table.setAccessibleDescription("Space switches the selected server on or off, Enter edits it, "
                                            "Delete removes it.")
        self.table.setMinimumHeight(150)
        self.add_button = described_button("&Add…", "Add a tool server", self)
        self.edit_button = described_button("&Edit…", "Edit the selected tool server", self)
        self.remove_button = described_button("&Remove", "Remove the selected tool server", self)
        self.import_button = described_button("&Import mcp.json…", "Import tool servers from an mcp.json or "
                                              "claude_desktop_config.json file; they start switched off", self)
        self.steps, steps_row = self._limit("&Step limit:", "Step limit", STEP_HINT, MAX_STEP_LIMIT, STEP_LIMIT)
        self.result_cap, result_row = self._limit("Result &limit:", "Result limit", RESULT_HINT, MAX_RESULT_CAP_KB,
                                                  RESULT_CAP_BYTES // 1024, " KB")

        buttons = QHBoxLayout()
        for button in (self.add_button, self.edit_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.import_button)
        limits = QGridLayout()
        for row, (label, box, hint) in enumerate([steps_row, result_row]):
            limits.addWidget(label, row, 0)
            limits.addWidget(box, row, 1)
            limits.addWidget(hint, row, 2)
        limits.setColumnStretch(2, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(explanation)
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        layout.addLayout(limits)

        self.add_button.clicked.connect(lambda: self._open_editor(None))
        self.edit_button.clicked.connect(self._edit_selected)
        self.remove_button.clicked.connect(self._remove_selected)
        self.import_button.clicked.connect(self._choose_import)
        self.table.itemChanged.connect(self._item_changed)
        self.table.itemActivated.connect(lambda _item: self._edit_selected())
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.installEventFilter(self)
        self.steps.valueChanged.connect(self.stepLimitChanged)
        self.result_cap.valueChanged.connect(lambda kilobytes: self.resultCapChanged.emit(kilobytes * 1024))
        self._outline_ticks()
        self._fill()

    def _limit(self, label: str, name: str, hint: str, most: int, default: int, suffix: str = ""
               ) -> tuple[QSpinBox, tuple[QLabel, QSpinBox, QLabel]]:
        """A limit's spin box (applied on Enter or a step, not at each digit typed: "12" must not
        apply 1 on the way), its label and its hint, for the limits' grid."""
        box = QSpinBox(self)
        box.setRange(1, most)
        box.setSuffix(suffix)
        box.setValue(default)
        box.setKeyboardTracking(False)
        box.setAccessibleName(name)
        box.setAccessibleDescription(hint)
        caption, words = QLabel(label), QLabel(hint)
        caption.setBuddy(box)
        words.setWordWrap(True)
        return box, (caption, box, words)

    # -- the owner's API ---------------------------------------------------------------------

    def set_configs(self, configs: list[ServerConfig]) -> None:
        self._configs = list(configs)
        self._fill()

    def set_statuses(self, statuses: list[ServerStatus]) -> None:
        self._statuses = {status.name: status for status in statuses}
        self._fill()

    def set_step_limit(self, steps: int) -> None:
        self.steps.blockSignals(True)
        self.steps.setValue(steps)
        self.steps.blockSignals(False)

    def set_result_cap(self, size: int) -> None:
        """The result limit in bytes (shown in kilobytes)."""
        self.result_cap.blockSignals(True)
        self.result_cap.setValue(size // 1024)
        self.result_cap.blockSignals(False)

    def configs(self) -> list[ServerConfig]:
        return list(self._configs)

    # -- inside ---------------------------------------------------------------------------------

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._outline_ticks()
            self._fill()  # the failed rows' red
        super().changeEvent(event)

    def _outline_ticks(self) -> None:
        """Fusion outlines a tick box in a list with the window colour, darkened: on a dark
        palette the box of a server switched off did not show at all. The table's window colour
        is taken halfway to the text, so the outline reads in either appearance."""
        palette = QPalette(self.palette())
        text, base = palette.color(QPalette.ColorRole.Text), palette.color(QPalette.ColorRole.Base)
        palette.setColor(QPalette.ColorRole.Window, mix(base, text, 0.6))
        self.table.setPalette(palette)

    def _fill(self) -> None:
        selected = self._selected_row()
        self._filling = True
        self.table.setRowCount(len(self._configs))
        for row, config in enumerate(self._configs):
            status = self._statuses.get(config.name)
            server = QTableWidgetItem(shorten(config.name, 60))
            server.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable)
            server.setCheckState(Qt.CheckState.Checked if config.enabled else Qt.CheckState.Unchecked)
            where = config.url if config.transport is Transport.HTTP else " ".join([config.command, *config.args])
            server.setToolTip(plain_tooltip(f"{config.name}\n{where}"))
            kind = QTableWidgetItem("Address" if config.transport is Transport.HTTP else "Command")
            state = QTableWidgetItem(state_words(status, config))
            if status is not None and status.reason:
                state.setToolTip(plain_tooltip(status.reason))
            if config.enabled and status is not None and status.state is ServerState.FAILED:
                state.setForeground(error_color(self.palette()))
            for column, item in ((SERVER, server), (KIND, kind), (STATE, state)):
                if column != SERVER:
                    item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                self.table.setItem(row, column, item)
        self._filling = False
        if selected is not None and selected < len(self._configs):
            self.table.selectRow(selected)
        self._selection_changed()

    def _selected_row(self) -> int | None:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else None

    def _selection_changed(self) -> None:
        chosen = self._selected_row() is not None
        self.edit_button.setEnabled(chosen)
        self.remove_button.setEnabled(chosen)

    def _changed(self, configs: list[ServerConfig]) -> None:
        self._configs = configs
        self._fill()
        self.configsEdited.emit(list(configs))

    def _item_changed(self, item: QTableWidgetItem) -> None:
        if self._filling or item.column() != SERVER:
            return
        row, enabled = item.row(), item.checkState() == Qt.CheckState.Checked
        if self._configs[row].enabled != enabled:
            configs = list(self._configs)
            configs[row] = replace(configs[row], enabled=enabled)
            self._changed(configs)

    def _open_editor(self, row: int | None) -> None:
        config = self._configs[row] if row is not None else None
        taken = {c.name for i, c in enumerate(self._configs) if i != row}
        self.editor = ToolServerEditor(config, taken, self)
        self.editor.accepted.connect(lambda editor=self.editor: self._edited(row, editor))
        self.editor.finished.connect(lambda _result: setattr(self, "editor", None))
        self.editor.open()  # window-modal, without a nested event loop

    def _edited(self, row: int | None, editor: ToolServerEditor) -> None:
        config = editor.config()
        if config is None:
            return
        configs = list(self._configs)
        if row is None:
            configs.append(config)
        else:
            configs[row] = config
        self._changed(configs)
        self.table.selectRow(configs.index(config))

    def _edit_selected(self) -> None:
        if (row := self._selected_row()) is not None:
            self._open_editor(row)

    def _remove_selected(self) -> None:
        row = self._selected_row()
        if row is None:
            return
        name = shorten(self._configs[row].name, 60)
        if ask(self, "Remove tool server", f"Remove “{name}”? Its settings, and the secrets kept for it, are deleted."):
            self._changed(self._configs[:row] + self._configs[row + 1:])

    def _choose_import(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(self, "Import tool servers", "",
                                                    "MCP configuration (*.json);;All files (*)")
        if path:
            self.importRequested.emit(path)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Space switches the selected server on or off wherever the keyboard is in its row;
        Delete removes it."""
        if watched is self.table and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            row = self._selected_row()
            if row is not None and event.key() == Qt.Key.Key_Space:
                item = self.table.item(row, SERVER)
                checked = item.checkState() == Qt.CheckState.Checked
                item.setCheckState(Qt.CheckState.Unchecked if checked else Qt.CheckState.Checked)
                return True
            if row is not None and event.key() == Qt.Key.Key_Delete:
                self._remove_selected()
                return True
        return False
