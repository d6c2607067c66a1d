"""Serve the loaded model: where other programs reach it (host, port), the API key they need,
and the web pages a browser lets call it (CORS).

This machine only (127.0.0.1) unless the user types another host; then the dialog says that
other computers on the network can reach the model, and Serve waits for an API key. The key is
not saved anywhere: it lasts while Hearth serves, and is asked for again next time.

No web page may call it unless the user lists its site's origin, as `hearth serve --cors-origin`
takes them (serve/origins.py). They go on one line, separated by commas: a list is one or two
origins, and one line keeps Tab moving on and Enter serving as in the other fields. Each is
checked as the user types; while one is not an origin, the problem shows under the field (said
aloud once the user leaves it) and Serve waits. The origins are kept for next time: they are
not secret.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from ...owners.settings import ServeAddress
from ...serve.addresses import is_loopback
from ...serve.origins import check_origins, split_origins
from ..widgets.announce import announce
from ..widgets.colors import Tone, set_tone
from ..widgets.focus_ring import FocusRing
from ..widgets.form_grid import FormGrid

MAX_PORT = 65_535
LOCAL_NOTE = "Only programs on this computer can reach the model."
NETWORK_NOTE = ("Other computers on your network can reach the model at this address. "
                "An API key is required: programs must send it to use the model.")
KEY_NOTE = "The key is not saved: it lasts while Hearth serves."
ORIGINS_NOTE = ("The sites whose web pages may use the model in a browser, separated by commas, "
                "as origins such as http://localhost:3000; * lets every site's pages use it. "
                "With none, no web page can.")


@dataclass(frozen=True)
class ServeRequest:
    """What the dialog asks for: where to serve, the key clients must send (None: none), and
    the origins whose web pages may call it (checked)."""

    address: ServeAddress
    api_key: str | None
    cors_origins: tuple[str, ...] = ()


class ServeDialog(QDialog):
    """The form; `request()` is what it holds once accepted."""

    def __init__(self, address: ServeAddress, model_name: str | None, parent: QWidget | None = None,
                 origins: Sequence[str] = ()):
        """`origins`: those offered again (the settings' serve_origins)."""
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

        self.origins_edit = QLineEdit(", ".join(origins))
        self.origins_edit.setPlaceholderText("none")
        self.origins_edit.setAccessibleName("Web pages (CORS)")  # the label's own words: what voice control users say
        self.origins_edit.setAccessibleDescription(ORIGINS_NOTE)
        self.origins_problem = QLabel()
        self.origins_problem.setWordWrap(True)
        self.origins_problem.setTextFormat(Qt.TextFormat.PlainText)  # it quotes what the user typed
        self.origins_problem.setAccessibleName("Problem with the web pages' origins")
        set_tone(self.origins_problem, Tone.ERROR)
        self.origins_problem.hide()
        origins_note = QLabel(ORIGINS_NOTE)
        origins_note.setWordWrap(True)
        set_tone(origins_note, Tone.MUTED)

        form = FormGrid()
        for text, field in (("&Host", self.host_edit), ("&Port", self.port_spin), ("API &key", self.key_edit),
                            ("&Web pages (CORS)", self.origins_edit)):
            form.add_row(QLabel(text), field)
        form.add_field(self.origins_problem)
        form.add_field(origins_note)

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
        self.setMinimumWidth(self.fontMetrics().averageCharWidth() * 68)  # an origin's problem in few lines
        FocusRing(self)

        self._local: bool | None = None  # what the reach label says now
        self.host_edit.textChanged.connect(lambda _text: self._fields_changed())
        self.key_edit.textChanged.connect(lambda _text: self._fields_changed())
        self.origins_edit.textChanged.connect(lambda _text: self._fields_changed())
        self.origins_edit.editingFinished.connect(self._say_origins_problem)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self._fields_changed()

    def request(self) -> ServeRequest:
        """What was asked for; only once Serve could be pressed (the origins check)."""
        key = self.key_edit.text().strip()
        return ServeRequest(ServeAddress(self.host_edit.text().strip(), self.port_spin.value()), key or None,
                            tuple(check_origins(split_origins(self.origins_edit.text()))))

    def _fields_changed(self) -> None:
        """Say who can reach the model at this host (a host beyond this machine needs a key) and
        what is wrong with the origins typed; Serve waits for both."""
        host = self.host_edit.text().strip()
        local = is_loopback(host)
        if local != self._local:
            self.reach_label.setText(LOCAL_NOTE if local else NETWORK_NOTE)
            set_tone(self.reach_label, Tone.NORMAL if local else Tone.ERROR)
            self.key_edit.setPlaceholderText("optional" if local else "required")
            if self._local is not None:  # changed by typing, away from the label: said aloud
                announce(self.reach_label, self.reach_label.text())
            self._local = local
        problem = self._origins_problem()
        self.origins_problem.setText(problem)
        self.origins_problem.setVisible(bool(problem))
        self.origins_edit.setAccessibleDescription(f"{problem} {ORIGINS_NOTE}" if problem else ORIGINS_NOTE)
        self.serve_button.setEnabled(bool(host) and (local or bool(self.key_edit.text().strip())) and not problem)
        self._fit_height()

    def _fit_height(self) -> None:
        """Grow to fit a note or problem that now takes more lines: Qt does not grow a shown
        window for its word-wrapped labels, it squeezes them until their last lines are cut."""
        needed = self.layout().totalHeightForWidth(self.width())
        if self.isVisible() and needed > self.height():
            self.resize(self.width(), needed)

    def _origins_problem(self) -> str:
        """What is wrong with the origins typed, in words that say how to write one; "" if nothing."""
        try:
            check_origins(split_origins(self.origins_edit.text()))
        except ValueError as exc:
            return str(exc)
        return ""

    def _say_origins_problem(self) -> None:
        """A problem is said once the user leaves the field (or presses Enter, which cannot serve
        while it stands), not at every keystroke: half an origin is always wrong."""
        if problem := self.origins_problem.text():
            announce(self.origins_problem, problem)
