"""Beside the message box: which tool servers' tools the model may use in this conversation.

The button says how many tools are offered ("Tools · 5", or "No tools"); its menu lists every
configured server with a tick, its tool count and how it is doing (starting, starts when used,
failed and why), and "Manage tool servers…" for Settings → Tools. A failed or switched-off
server is a greyed row: it cannot be chosen until it works, and its reason is in its tooltip and
in the row's own words, since a menu row has no accessible description of its own; the button's
description also names each failed server, so a screen reader hears it before opening the menu.

Ticking stays in the menu (ui/widgets/tick_menu.py: Space, Enter or a click toggle the row and
leave the menu open), so several servers are chosen in one visit; Esc closes it. Server names
are the user's or an imported file's: shown through shorten(), with "&" doubled so it is no
mnemonic.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QWidget

from ...common.text import shorten
from ...tool_servers.types import ServerState, ServerStatus
from ..widgets.tick_menu import TickMenuButton, menu_text, plural
from ..widgets.tooltips import plain_tooltip

NAME_CHARS = 40
REASON_CHARS = 60


class ToolsPicker(TickMenuButton):
    """The tools button for the open conversation.

    Signals:
        chosenChanged(object): the user ticked or unticked a server: the frozenset of the
            server names now chosen for this conversation.
        manageRequested(): "Manage tool servers…": the window opens Settings → Tools.
    """

    chosenChanged = Signal(object)
    manageRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Tools for this conversation", "Tool servers for this conversation", parent)
        self._statuses: list[ServerStatus] = []
        self._chosen: frozenset[str] = frozenset()
        self.server_menu = self.tick_menu
        self._rebuild()

    # -- the window's API --------------------------------------------------------------------

    def set_statuses(self, statuses: list[ServerStatus]) -> None:
        """Every configured server and how it is doing (its tools, once it is ready)."""
        self._statuses = list(statuses)
        self._rebuild()

    def set_chosen(self, chosen: frozenset[str]) -> None:
        """The servers chosen for the conversation shown (not echoed by chosenChanged)."""
        self._chosen = frozenset(chosen)
        self._rebuild()

    def chosen(self) -> frozenset[str]:
        return self._chosen

    def tool_count(self) -> int:
        """Tools offered to the model here: those of the chosen servers that are ready."""
        return sum(len(s.tools) for s in self._statuses if s.name in self._chosen and s.state is ServerState.READY)

    # -- inside ---------------------------------------------------------------------------------

    def _rebuild(self) -> None:
        menu = self.server_menu
        menu.clear()
        menu.addSection("Tools the model may use here")
        if not self._statuses:
            menu.addAction("No tool servers are configured").setEnabled(False)
        for status in self._statuses:
            menu.addAction(self._row(status))
        menu.addSeparator()
        manage = menu.addAction("&Manage tool servers…")
        manage.setToolTip("Add, change or switch on tool servers (Settings → Tools)")
        manage.triggered.connect(self.manageRequested)
        self._show_count()

    def _row(self, status: ServerStatus) -> QAction:
        name = shorten(status.name, NAME_CHARS)
        reason = shorten(status.reason, REASON_CHARS) if status.reason else ""
        if status.state is ServerState.READY:
            how = plural(len(status.tools), "tool")
        elif status.state is ServerState.STARTING:
            how = "starting…"
        elif status.state is ServerState.IDLE:
            how = "starts when used"
        elif status.state is ServerState.FAILED:
            how = f"failed: {reason}" if reason else "failed"
        else:
            how = "switched off in Settings → Tools"
        action = QAction(menu_text(f"{name} · {how}"), self.server_menu)
        usable = status.state not in (ServerState.FAILED, ServerState.OFF)
        action.setCheckable(True)
        action.setChecked(status.name in self._chosen)
        action.setEnabled(usable)
        if status.state is ServerState.FAILED:
            action.setToolTip(plain_tooltip(f"{status.name} failed: {status.reason or 'no reason given'}"))
        elif status.state is ServerState.OFF:
            action.setToolTip("Switch it on in Settings → Tools to use its tools")
        elif status.skipped:
            action.setToolTip(plain_tooltip("Not offered to the model:\n" + "\n".join(status.skipped)))
        action.toggled.connect(lambda on, server=status.name: self._toggled(server, on))
        return action

    def _toggled(self, server: str, on: bool) -> None:
        chosen = self._chosen | {server} if on else self._chosen - {server}
        if chosen != self._chosen:
            self._chosen = chosen
            self._show_count()
            self.chosenChanged.emit(chosen)

    def _show_count(self) -> None:
        chosen = [s for s in self._statuses if s.name in self._chosen and s.state is not ServerState.OFF]
        count = self.tool_count()
        waiting = [s for s in chosen if s.state in (ServerState.STARTING, ServerState.IDLE)]
        failed = [s for s in chosen if s.state is ServerState.FAILED]
        if not chosen:
            self.show_label("No tools")
            words = "No tools are offered to the model in this conversation."
        else:
            self.show_label(f"Tools · {count}" if count or not waiting else "Tools · …")
            words = f"{plural(count, 'tool')} from {plural(len(chosen), 'server')} offered to the model here."
            if waiting:
                words += f" {plural(len(waiting), 'server')} not started yet."
            for server in failed:
                words += f" {shorten(server.name, NAME_CHARS)} failed: {shorten(server.reason or 'no reason given')}."
        self.setAccessibleDescription(f"{words} Opens a list of the tool servers to choose from.")
        self.setToolTip(plain_tooltip(words))
