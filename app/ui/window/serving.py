"""What the window shows of "Serve the loaded model": the File menu's action, the dialog it opens,
the status bar's address (and which web pages may call it), and a reply of the user's that waits
for served requests.

A controller the window owns, given what it works with: the LocalServer
(app.owners.local_server), the settings (where to serve, which pages may call it), the models (the loaded one's name),
the session (a reply waiting), the chat (where a waiting reply is announced) and the status bar.

The action is checked while Hearth serves (or is starting to): checking it asks where to serve,
unchecking it stops. The address stays in the status bar while serving, as a label whose
context menu (and File → Copy the server address) copies it.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QMenu, QStatusBar, QToolButton, QWidget

from ...common.text import printable
from ...owners.chat_session import ChatSession
from ...owners.local_server import LocalServer
from ...owners.model_session import ModelSession
from ...owners.settings import Settings
from ...serve.origins import pages_may_call
from ..chat.view import ChatView
from ..dialogs.serve import ServeDialog
from ..widgets.announce import announce
from .menu_actions import MenuActions

SERVE_TIP = "Let other programs use the loaded model through an OpenAI-compatible API"
ADDRESS_TIP = ("Other programs use the loaded model at this address (an OpenAI-compatible API, as base_url). "
               "Right-click to copy it or to stop serving.")


class ServingDisplay(QObject):
    """The serving side of MainWindow.

    Slots (connected here): the LocalServer's started, stopped and failed; the session's
    waitingChanged. Its File menu actions (serve_action, copy_address_action) are made here and
    put in the menu by the window; its status bar address (serving_status: serving_label and
    copy_address_button) is put in the status bar here, first among the permanent widgets.
    """

    def __init__(self, local_server: LocalServer, settings: Settings, models: ModelSession, session: ChatSession,
                 chat: ChatView, status_bar: QStatusBar, menu_actions: MenuActions, window: QWidget):
        """`window`: the parent of the dialog this opens."""
        super().__init__(window)
        self._server, self._settings, self._models = local_server, settings, models
        self._chat, self._status_bar, self._window = chat, status_bar, window
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
        status_bar.addPermanentWidget(self.serving_status)  # the first permanent widget: made before the others

        self.serve_action = menu_actions.make("Serve the loaded model…", self.toggle_serving, tip=SERVE_TIP)
        self.serve_action.setCheckable(True)
        self.copy_address_action = menu_actions.make("Copy the server address", self.copy_server_address)
        self.copy_address_action.setEnabled(False)

        local_server.started.connect(self._on_serving_started)
        local_server.stopped.connect(self._on_serving_stopped)
        local_server.failed.connect(self._on_serving_failed)
        self._waiting_said = ""  # what the status bar says of a waiting reply, to clear it
        session.waitingChanged.connect(self._show_reply_waiting)
        if local_server.serving:  # a window opened while Hearth serves
            self._on_serving_started(local_server.url)

    def toggle_serving(self) -> None:
        """The action: stop serving, or ask where to serve and start."""
        server = self._server
        if server.active:
            server.stop()
        else:
            current = self._models.current
            dialog = ServeDialog(self._settings.serve_address, printable(current.name) if current else None, self._window,
                                 origins=self._settings.serve_origins)
            if dialog.exec() == QDialog.DialogCode.Accepted:
                request = dialog.request()
                self._settings.serve_address, self._settings.serve_origins = request.address, request.cors_origins
                server.start(request.address.host, request.address.port, request.api_key, request.cors_origins)
                self._status_bar.showMessage("Starting the server…", 5000)
        self.serve_action.setChecked(server.active)

    def copy_server_address(self) -> None:
        url = self._server.url
        if url:
            QGuiApplication.clipboard().setText(url)
            self._status_bar.showMessage(f"Copied {url}", 3000)

    def _serving_menu(self, position) -> None:
        menu = QMenu(self.serving_label)
        menu.addAction("Copy address", self.copy_server_address)
        menu.addAction("Stop serving", self._server.stop)
        menu.exec(self.serving_label.mapToGlobal(position))

    def _on_serving_started(self, url: str) -> None:
        reach = " (reachable from the network)" if self._server.on_network else ""
        pages = f"; {said}" if (said := pages_may_call(self._server.cors_origins)) else ""
        self.serving_label.setText(f"Serving at {url}{reach}{pages}")
        self.serving_status.show()
        self.serve_action.setChecked(True)
        self.copy_address_action.setEnabled(True)
        message = f"Serving the loaded model at {url}{pages}"
        self._status_bar.showMessage(message, 5000)
        announce(self.serving_label, message)

    def _on_serving_stopped(self, reason: str) -> None:
        self._serving_off()
        message = reason or "Stopped serving the model."
        self._status_bar.showMessage(message, 10_000 if reason else 5000)
        announce(self.serving_label, message, urgent=bool(reason))

    def _on_serving_failed(self, message: str) -> None:
        self._serving_off()
        self._status_bar.showMessage(message, 15_000)
        announce(self.serving_label, message, urgent=True)

    def _serving_off(self) -> None:
        self.serving_status.hide()
        self.serving_label.clear()
        self.serve_action.setChecked(False)
        self.copy_address_action.setEnabled(False)

    def _show_reply_waiting(self, reason: str) -> None:
        """A reply of the user's in line behind served requests: said until it begins."""
        status = self._status_bar
        if reason:
            status.showMessage(reason)
            announce(self._chat, reason)
        elif self._waiting_said and status.currentMessage() == self._waiting_said:
            status.clearMessage()
        self._waiting_said = reason
