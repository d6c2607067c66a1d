"""Add server: the address, name and API key of an OpenAI-compatible server, tried before saving.

"Test connection" asks the server for its models on a thread of its own (RemoteServers.check)
and says what came back: the models it offers, or what went wrong in the words of a
RemoteError ("… refused the API key (401)"). The dialog stays usable meanwhile; a second test
replaces the first. Save keeps the server's name and address in the settings and its key in
the system keyring (or for this session only, where there is none, which is then said).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...common.text import shorten
from ...engine.types import ServerConfig
from ...owners.remote_servers import RemoteServers, ServerListing
from ..widgets.announce import announce
from ..widgets.colors import Tone, set_tone
from ..widgets.focus_ring import FocusRing
from ..widgets.form_grid import FormGrid

ADDRESS_EXAMPLE = "http://localhost:8080/v1"
MODELS_NAMED = 3  # models named in a successful test's answer


class AddServerDialog(QDialog):
    """The form; `servers` tests and keeps what it holds."""

    def __init__(self, servers: RemoteServers, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Add server")
        self._servers = servers
        self._check: int | None = None  # the test whose answer is awaited

        intro = QLabel("An OpenAI-compatible server: llama.cpp's llama-server, vLLM, Ollama, LM Studio or a "
                       "hosted API. Its models are listed beside your model files.")
        intro.setWordWrap(True)
        self.address_edit = QLineEdit()
        self.address_edit.setPlaceholderText(ADDRESS_EXAMPLE)
        self.address_edit.setAccessibleName("Server address")
        self.address_edit.setAccessibleDescription("The address the server's API starts at, usually ending in /v1")
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("optional, e.g. Lab box")
        self.name_edit.setAccessibleName("Server name")
        self.name_edit.setAccessibleDescription("How Hearth names the server; its host and port if left empty")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("optional")
        self.key_edit.setAccessibleName("API key")
        self.key_edit.setAccessibleDescription("Kept in the system keyring, never in Hearth's settings file")

        form = FormGrid()
        for text, field in (("&Address", self.address_edit), ("&Name", self.name_edit), ("API &key", self.key_edit)):
            form.add_row(QLabel(text), field)

        self.test_button = QPushButton("&Test connection")
        self.test_button.setToolTip("Ask the server for its models, to check the address and the key")
        self.result_label = QLabel()
        self.result_label.setWordWrap(True)
        self.result_label.setTextFormat(Qt.TextFormat.PlainText)  # the server's words
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result_label.setAccessibleName("Connection test result")
        self.result_label.hide()  # until there is something to say (an empty label is a nameless stop)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addStretch(1)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setAccessibleName("Save server")

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addLayout(test_row)
        layout.addWidget(self.result_label)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(self.fontMetrics().averageCharWidth() * 60)
        FocusRing(self)  # the keyboard's place, visible as in the main window

        self.address_edit.textChanged.connect(lambda _text: self._address_edited())
        self.key_edit.textChanged.connect(lambda _text: self._forget_result())
        self.test_button.clicked.connect(lambda _checked=False: self.test_connection())
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        servers.checked.connect(self._on_checked)
        self._address_edited()

    def server(self) -> ServerConfig:
        """The server the fields describe; raises ValueError saying what is wrong with the address."""
        return ServerConfig(self.address_edit.text(), self.name_edit.text(), self.key_edit.text())

    def _address_edited(self) -> None:
        filled = bool(self.address_edit.text().strip())
        self.test_button.setEnabled(filled)
        self.save_button.setEnabled(filled)
        self._forget_result()

    def _forget_result(self) -> None:
        """What a test said is about the fields as they were: an edit makes it stale."""
        self._check = None
        self.result_label.clear()
        self.result_label.hide()

    def test_connection(self) -> None:
        """List the server's models in the background; the answer is shown under the button."""
        try:
            server = self.server()
        except ValueError as exc:
            self._say(str(exc), Tone.ERROR)
            return
        self._check = self._servers.check(server)
        self._say(f"Connecting to {shorten(server.base_url, 120)}…", Tone.MUTED, announced=False)

    def _on_checked(self, number: int, listing: ServerListing) -> None:
        if number != self._check:
            return  # an older test, or one from before an edit
        self._check = None
        if not listing.reachable:
            self._say(listing.error, Tone.ERROR)
            return
        names = ", ".join(model.name for model in listing.models[:MODELS_NAMED])
        more = f" and {len(listing.models) - MODELS_NAMED} more" if len(listing.models) > MODELS_NAMED else ""
        count = len(listing.models)
        offers = f"offers {count} model{'s' if count != 1 else ''}: {names}{more}." if count else "lists no models."
        self._say(f"Connected: the server {offers}", Tone.NORMAL)

    def _say(self, text: str, tone: Tone, announced: bool = True) -> None:
        self.result_label.setText(text)
        set_tone(self.result_label, tone)
        self.result_label.show()
        self._fit()
        if announced:  # the answer arrives away from the focus (on the button)
            announce(self.result_label, text, urgent=tone is Tone.ERROR)

    def _fit(self) -> None:
        """Grow to show a long answer whole: a shown dialog keeps its size, and would squeeze
        the fields to make room for the answer's lines."""
        layout = self.layout()
        layout.activate()
        needed = layout.totalHeightForWidth(self.width())
        if needed > self.height():
            self.resize(self.width(), needed)

    def accept(self) -> None:
        """Save the server (an address that is not one keeps the dialog open, saying why)."""
        try:
            server = self.server()
        except ValueError as exc:
            self._say(str(exc), Tone.ERROR)
            self.address_edit.setFocus(Qt.FocusReason.OtherFocusReason)
            return
        kept = self._servers.add(server)
        super().accept()
        if kept is not None and not kept.persistent:
            QMessageBox.information(self.parentWidget(), "API key", kept.message)
