"""Serve the loaded model: where other programs reach it (host, port) and the API key they need.

This machine only (127.0.0.1) unless the user types another host; then the dialog says that
other computers on the network can reach the model, and Serve waits for an API key. The key is
not saved anywhere: it lasts while Hearth serves, and is asked for again next time.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from ...owners.settings import ServeAddress
from ...serve.addresses import is_loopback
from ..widgets.announce import announce
from ..widgets.colors import Tone, set_tone
from ..widgets.focus_ring import FocusRing
from ..widgets.form_grid import FormGrid

MAX_PORT = 65_535
LOCAL_NOTE = "Only programs on this computer can reach the model."
NETWORK_NOTE = ("Other computers on your network can reach the model at this address. "
                "An API key is required: programs must send it to use the model.")
KEY_NOTE = "The key is not saved: it lasts while Hearth serves."


@dataclass(frozen=True)
class ServeRequest:
    """What the dialog asks for: where to serve, and the key clients must send (None: none)."""

    address: ServeAddress
    api_key: str | None


class ServeDialog(QDialog):
    """The form; `request()` is what it holds once accepted."""

    def __init__(self, address: ServeAddress, model_name: str | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Serve the loaded model")
        served = f"the loaded model ({model_name})" if model_name else "the model loaded in Hearth"
        self.intro_label = intro = QLabel(f"Other programs (editors, scripts, agents) can use {served} through an OpenAI-compatible "
                       "API. They wait in line with your own replies. Whichever model you load is the one served.")
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.PlainText)  # a model's name is foreign text

        self.host_edit = QLineEdit(address.host)
        self.host_edit.setAccessibleName("Host")
        self.host_edit.setAccessibleDescription("The address to listen on: 127.0.0.1 is this computer only")
        self.port_spin = QSpinBox()
        self.port_spin.setRange(0, MAX_PORT)
        self.port_spin.setSpecialValueText("Any free port")
        self.port_spin.setValue(address.port)
        self.port_spin.setAccessibleName("Port")
        self.port_spin.setAccessibleDescription("The port to listen on; 0 picks any free port")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setAccessibleName("API key")
        self.key_edit.setAccessibleDescription(f"Programs send it as 'Authorization: Bearer KEY'. {KEY_NOTE}")

        form = FormGrid()
        for text, field in (("&Host", self.host_edit), ("&Port", self.port_spin), ("API &key", self.key_edit)):
            form.add_row(QLabel(text), field)

        self.reach_label = QLabel()
        self.reach_label.setWordWrap(True)
        self.reach_label.setAccessibleName("Who can reach the model")
        key_label = QLabel(KEY_NOTE)
        key_label.setWordWrap(True)
        set_tone(key_label, Tone.MUTED)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.serve_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.serve_button.setText("&Serve")
        self.serve_button.setAccessibleName("Serve the model")

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.reach_label)
        layout.addWidget(key_label)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(self.fontMetrics().averageCharWidth() * 60)
        FocusRing(self)

        self._local: bool | None = None  # what the reach label says now
        self.host_edit.textChanged.connect(lambda _text: self._fields_changed())
        self.key_edit.textChanged.connect(lambda _text: self._fields_changed())
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self._fields_changed()

    def request(self) -> ServeRequest:
        key = self.key_edit.text().strip()
        return ServeRequest(ServeAddress(self.host_edit.text().strip(), self.port_spin.value()), key or None)

    def _fields_changed(self) -> None:
        """Say who can reach the model at this host; a host beyond this machine needs a key."""
        host = self.host_edit.text().strip()
        local = is_loopback(host)
        if local != self._local:
            self.reach_label.setText(LOCAL_NOTE if local else NETWORK_NOTE)
            set_tone(self.reach_label, Tone.NORMAL if local else Tone.ERROR)
            self.key_edit.setPlaceholderText("optional" if local else "required")
            if self._local is not None:  # changed by typing, away from the label: said aloud
                announce(self.reach_label, self.reach_label.text())
            self._local = local
        self.serve_button.setEnabled(bool(host) and (local or bool(self.key_edit.text().strip())))
