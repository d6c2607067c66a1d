"""What the window shows of "Serve the loaded model": the File menu's action, the dialog it opens,
the status bar's address, and a reply of the user's that waits for served requests.

A part of MainWindow kept in a file of its own (the window inherits it); it uses the window's
local_server (app.owners.local_server.LocalServer), settings, session, models, chat and status bar.

The action is checked while Hearth serves (or is starting to): checking it asks where to serve,
unchecking it stops. The address stays in the status bar while serving, as a label whose
context menu (and File → Copy the server address) copies it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QMenu, QToolButton, QWidget

from ...common.text import printable
from ...owners.local_server import LocalServer
from ..dialogs.serve import ServeDialog
from ..widgets.announce import announce

SERVE_TIP = "Let other programs use the loaded model through an OpenAI-compatible API"
ADDRESS_TIP = ("Other programs use the loaded model at this address (an OpenAI-compatible API, as base_url). "
               "Right-click to copy it or to stop serving.")


class ServingDisplay:
    """The serving side of MainWindow."""

    local_server: LocalServer
    serve_action: QAction
    copy_address_action: QAction

    def _build_serving_status(self) -> None:
        """The status bar's address (hidden until serving), first among the permanent widgets."""
        self.serving_label = QLabel()
        self.serving_label.setTextFormat(Qt.TextFormat.PlainText)
        self.serving_label.setAccessibleName("Server address")
        self.serving_label.setToolTip(ADDRESS_TIP)
        self.serving_label.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.serving_label.customContextMenuRequested.connect(self._serving_menu)
        self.serving_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_address_button = QToolButton()
        self.copy_address_button.setText("Copy")
        self.copy_address_button.setAutoRaise(True)
        self.copy_address_button.setAccessibleName("Copy the server address")
        self.copy_address_button.setToolTip("Copy the address other programs use")
        self.copy_address_button.clicked.connect(lambda _checked=False: self.copy_server_address())
        self.serving_status = QWidget()
        row = QHBoxLayout(self.serving_status)
        row.setContentsMargins(6, 0, 6, 0)
        row.setSpacing(4)
        row.addWidget(self.serving_label)
        row.addWidget(self.copy_address_button)
        self.serving_status.hide()
        self.statusBar().insertPermanentWidget(0, self.serving_status)

    def _add_serving_actions(self, menu: QMenu) -> None:
        self.serve_action = self._action(menu, "Serve the loaded model…", self.toggle_serving, tip=SERVE_TIP)
        self.serve_action.setCheckable(True)
        self.copy_address_action = self._action(menu, "Copy the server address", self.copy_server_address)
        self.copy_address_action.setEnabled(False)

    def _connect_serving(self) -> None:
        server = self.local_server
        server.started.connect(self._on_serving_started)
        server.stopped.connect(self._on_serving_stopped)
        server.failed.connect(self._on_serving_failed)
        self._waiting_said = ""  # what the status bar says of a waiting reply, to clear it
        self.session.waitingChanged.connect(self._show_reply_waiting)
        if server.serving:  # a window opened while Hearth serves
            self._on_serving_started(server.url)

    def toggle_serving(self) -> None:
        """The action: stop serving, or ask where to serve and start."""
        server = self.local_server
        if server.active:
            server.stop()
        else:
            current = self.models.current
            dialog = ServeDialog(self.settings.serve_address, printable(current.name) if current else None, self)
            if dialog.exec() == QDialog.DialogCode.Accepted:
                request = dialog.request()
                self.settings.serve_address = request.address
                server.start(request.address.host, request.address.port, request.api_key)
                self.statusBar().showMessage("Starting the server…", 5000)
        self.serve_action.setChecked(server.active)

    def copy_server_address(self) -> None:
        url = self.local_server.url
        if url:
            QGuiApplication.clipboard().setText(url)
            self.statusBar().showMessage(f"Copied {url}", 3000)

    def _serving_menu(self, position) -> None:
        menu = QMenu(self.serving_label)
        menu.addAction("Copy address", self.copy_server_address)
        menu.addAction("Stop serving", self.local_server.stop)
        menu.exec(self.serving_label.mapToGlobal(position))

    def _on_serving_started(self, url: str) -> None:
        reach = " (reachable from the network)" if self.local_server.on_network else ""
        self.serving_label.setText(f"Serving at {url}{reach}")
        self.serving_status.show()
        self.serve_action.setChecked(True)
        self.copy_address_action.setEnabled(True)
        message = f"Serving the loaded model at {url}"
        self.statusBar().showMessage(message, 5000)
        announce(self.serving_label, message)

    def _on_serving_stopped(self, reason: str) -> None:
        self._serving_off()
        message = reason or "Stopped serving the model."
        self.statusBar().showMessage(message, 10_000 if reason else 5000)
        announce(self.serving_label, message, urgent=bool(reason))

    def _on_serving_failed(self, message: str) -> None:
        self._serving_off()
        self.statusBar().showMessage(message, 15_000)
        announce(self.serving_label, message, urgent=True)

    def _serving_off(self) -> None:
        self.serving_status.hide()
        self.serving_label.clear()
        self.serve_action.setChecked(False)
        self.copy_address_action.setEnabled(False)

    def _show_reply_waiting(self, reason: str) -> None:
        """A reply of the user's in line behind served requests: said until it begins."""
        status = self.statusBar()
        if reason:
            status.showMessage(reason)
            announce(self.chat, reason)
        elif self._waiting_said and status.currentMessage() == self._waiting_said:
            status.clearMessage()
        self._waiting_said = reason
