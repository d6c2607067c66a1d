"""Add… or Edit… in Settings → Tools: one tool server, a command Hearth starts (stdio) or an
address it connects to (Streamable HTTP).

The arguments are one line split as a shell would (shlex), so a path with spaces is quoted as
in a terminal; the environment and the headers are lines whose values are secrets, masked until
asked for (secret_lines). OK is offered only once the server can be saved, and a line under the
fields says what is missing: a name (one no other server has), a command, an http(s) address, a
line the arguments or the secrets cannot be read from.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from urllib.parse import urlsplit

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ...tool_servers.limits import CALL_TIMEOUT_S, MAX_CALL_TIMEOUT_S
from ...tool_servers.types import ServerConfig, Transport
from ..widgets.colors import Tone, set_tone
from ..widgets.escape import claims_escape
from ..widgets.focus_ring import FocusRing
from .secret_lines import SecretLines

_KINDS = [(Transport.STDIO, "A command Hearth starts (stdio)"), (Transport.HTTP, "An address (Streamable HTTP)")]


def _form() -> QFormLayout:
    form = QFormLayout()
    form.setContentsMargins(0, 0, 0, 0)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


def _field(edit: QLineEdit, name: str, placeholder: str = "") -> QLineEdit:
    edit.setAccessibleName(name)
    edit.setPlaceholderText(placeholder)
    return edit


class ToolServerEditor(QDialog):
    """One server's settings; `config` None adds a new one. `taken`: the names of the other
    servers, which this one may not take. After accept(), config() is the server as edited."""

    def __init__(self, config: ServerConfig | None, taken: set[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit tool server" if config is not None else "Add a tool server")
        FocusRing(self)
        self._original = config or ServerConfig("", Transport.STDIO)
        self._taken = taken
        self._labels: list[QLabel] = []
        self.name_edit = _field(QLineEdit(self), "Name", "What Hearth calls it, e.g. files")
        self.kind = QComboBox(self)
        self.kind.setAccessibleName("Kind of server")
        for transport, words in _KINDS:
            self.kind.addItem(words, transport)

        self.command_edit = _field(QLineEdit(), "Command", "e.g. uvx or npx, or a program's path")
        self.args_edit = _field(QLineEdit(), "Arguments", 'e.g. mcp-server-time --local-timezone "Europe/Zurich"')
        self.args_edit.setAccessibleDescription("Split into arguments as a shell would: quote one that holds spaces")
        self.cwd_edit = _field(QLineEdit(), "Working folder", "Hearth's own, if empty")
        browse = QPushButton("C&hoose…")
        browse.setAccessibleName("Choose the working folder")
        browse.setAutoDefault(False)
        browse.clicked.connect(self._choose_folder)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.cwd_edit, 1)
        folder_row.addWidget(browse)
        self.env = SecretLines("=", "Environment variables")
        stdio = QWidget()
        form = _form()
        stdio.setLayout(form)
        self._row(form, "&Command:", self.command_edit)
        self._row(form, "&Arguments:", self.args_edit)
        folder_label = QLabel("&Working folder:")
        folder_label.setBuddy(self.cwd_edit)
        self._labels.append(folder_label)
        form.addRow(folder_label, folder_row)
        self._row(form, "&Environment:", self.env, buddy=self.env.box)

        self.url_edit = _field(QLineEdit(), "Address", "https://example.com/mcp")
        self.headers = SecretLines(":", "Headers")
        http = QWidget()
        form = _form()
        http.setLayout(form)
        self._row(form, "A&ddress:", self.url_edit)
        self._row(form, "&Headers:", self.headers, buddy=self.headers.box)
        self.pages = QStackedWidget(self)
        for page in (stdio, http):
            page.layout().setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
            holder = QWidget()
            column = QVBoxLayout(holder)
            column.setContentsMargins(0, 0, 0, 0)
            column.addWidget(page)
            column.addStretch(1)  # the shorter page keeps its fields together at the top
            self.pages.addWidget(holder)

        self.timeout = QDoubleSpinBox(self)
        self.timeout.setRange(1.0, MAX_CALL_TIMEOUT_S)
        self.timeout.setDecimals(0)
        self.timeout.setSuffix(" s")
        self.timeout.setAccessibleName("Call timeout")
        self.timeout.setAccessibleDescription("How long one call may take before it fails and the model is told so")
        self.timeout.setMinimumWidth(self.timeout.sizeHint().width() + 24)
        self.problem = QLabel(self)
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        self.problem.setWordWrap(True)
        set_tone(self.problem, Tone.ERROR)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        top = _form()
        self._row(top, "&Name:", self.name_edit)
        self._row(top, "&Kind:", self.kind)
        bottom = _form()
        bottom.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        self._row(bottom, "Call &timeout:", self.timeout)
        # Three forms (the fields of either kind of server between them), one column of labels.
        width = max(label.sizeHint().width() for label in self._labels)
        for label in self._labels:
            label.setMinimumWidth(width)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.pages)
        layout.addLayout(bottom)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self._show(self._original)
        for edit in (self.name_edit, self.command_edit, self.args_edit, self.cwd_edit, self.url_edit):
            edit.textChanged.connect(self._check)
        for lines in (self.env, self.headers):
            lines.edited.connect(self._check)
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self._check()
        self.resize(560, self.sizeHint().height())

    def config(self) -> ServerConfig | None:
        """The server as the fields say, or None while they do not make one (problem says why)."""
        return self._read()[0]

    # -- inside ---------------------------------------------------------------------------------

    def _row(self, form: QFormLayout, text: str, field: QWidget, buddy: QWidget | None = None) -> None:
        label = QLabel(text)
        label.setBuddy(buddy or field)
        self._labels.append(label)
        form.addRow(label, field)

    def _show(self, config: ServerConfig) -> None:
        self.name_edit.setText(config.name)
        self.kind.setCurrentIndex(0 if config.transport is Transport.STDIO else 1)
        self.pages.setCurrentIndex(self.kind.currentIndex())
        self.command_edit.setText(config.command)
        self.args_edit.setText(shlex.join(config.args))
        self.cwd_edit.setText(config.cwd or "")
        self.env.set_pairs(config.env)
        self.url_edit.setText(config.url)
        self.headers.set_pairs(config.headers)
        self.timeout.setValue(config.call_timeout_s or CALL_TIMEOUT_S)

    def _read(self) -> tuple[ServerConfig | None, str]:
        name = self.name_edit.text().strip()
        if not name:
            return None, "Give the server a name."
        if name in self._taken:
            return None, "Another server has this name."
        transport = self.kind.currentData()
        common = dict(name=name, transport=transport, call_timeout_s=self.timeout.value())
        if transport is Transport.STDIO:
            command = self.command_edit.text().strip()
            if not command:
                return None, "Say which command starts the server."
            try:
                args = tuple(shlex.split(self.args_edit.text()))
            except ValueError as error:
                return None, f"The arguments cannot be split: {error}."
            env, problem = self.env.pairs()
            if problem is not None:
                return None, f"Environment: {problem}."
            cwd = self.cwd_edit.text().strip() or None
            fields = dict(command=command, args=args, env=env, cwd=cwd, url="", headers=())
        else:
            url = self.url_edit.text().strip()
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                return None, "The address must start with http:// or https:// and name a host."
            headers, problem = self.headers.pairs()
            if problem is not None:
                return None, f"Headers: {problem}."
            fields = dict(url=url, headers=headers, command="", args=(), env=(), cwd=None)
        return replace(self._original, **common, **fields), ""

    def _check(self) -> None:
        config, problem = self._read()
        self.ok_button.setEnabled(config is not None)
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))

    def _kind_changed(self, index: int) -> None:
        self.pages.setCurrentIndex(index)
        self._check()

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Working folder", self.cwd_edit.text())
        if folder:
            self.cwd_edit.setText(folder)

    def accept(self) -> None:
        if self.config() is not None:
            super().accept()

    def event(self, event: QEvent) -> bool:
        """Esc cancels: claimed before the main window's application-wide Esc (Stop) takes it."""
        return claims_escape(event) or super().event(event)
