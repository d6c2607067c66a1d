"""Lines of names and secret values (a server's environment, its HTTP headers), masked until
the user asks to see them.

A server's environment and headers carry API keys and tokens, so their values are not shown to
whoever looks over the user's shoulder: the box shows each line's name with the value masked,
read-only, until "Show values" is ticked; then it is plain text to edit, one NAME=value (or
"Name: value") per line, pasted from a README as it is. A box that starts empty starts shown:
there is nothing to hide, and a masked box could not be typed in.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QCheckBox, QPlainTextEdit, QVBoxLayout, QWidget

_MASK = "•" * 8
# An environment variable's name, and an HTTP header's (RFC 9110's token).
_NAMES = {"=": re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z"), ":": re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")}
_FORMS = {"=": "NAME=value", ":": "Name: value"}


def parse_lines(text: str, separator: str) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """The (name, value) pairs of `text`, one a line (blank lines and "#" comments skipped),
    and the first problem, or None."""
    pairs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, found, value = line.partition(separator)
        name = name.strip()
        if not found or not _NAMES[separator].match(name):
            return (), f"Line {number} is not {_FORMS[separator]}"
        pairs.append((name, value.strip() if separator == ":" else value))
    return tuple(pairs), None


def lines_of(pairs: tuple[tuple[str, str], ...], separator: str) -> str:
    space = " " if separator == ":" else ""
    return "\n".join(f"{name}{separator}{space}{value}" for name, value in pairs)


class SecretLines(QWidget):
    """A box of NAME=value (separator "=") or "Name: value" (":") lines, values masked.

    Signals:
        edited(): the text changed (the dialog checks it again).
    """

    edited = Signal()

    def __init__(self, separator: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._separator = separator
        self._text = ""
        self.box = QPlainTextEdit(self)
        self.box.setTabChangesFocus(True)
        self.box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.box.setFixedHeight(self.box.fontMetrics().lineSpacing() * 4 + 14)
        self.box.setAccessibleName(name)
        self.box.setPlaceholderText(f"One {_FORMS[separator]} a line")
        self.show_values = QCheckBox("Show &values", self)
        self.show_values.setAccessibleDescription(f"Shows the values of {name.lower()}, to read or change them")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.box)
        layout.addWidget(self.show_values, 0, Qt.AlignmentFlag.AlignLeft)
        self.show_values.toggled.connect(self._show)
        self.box.textChanged.connect(self._changed)
        self.set_pairs(())

    def set_pairs(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self._text = lines_of(pairs, self._separator)
        self.show_values.blockSignals(True)
        self.show_values.setChecked(not pairs)
        self.show_values.blockSignals(False)
        self._show(not pairs)

    def text(self) -> str:
        return self.box.toPlainText() if self.show_values.isChecked() else self._text

    def pairs(self) -> tuple[tuple[tuple[str, str], ...], str | None]:
        """The pairs written, and the first problem with them (None: none)."""
        return parse_lines(self.text(), self._separator)

    def _show(self, shown: bool) -> None:
        self.box.blockSignals(True)  # the text kept is self._text, whatever the box shows
        self.box.setReadOnly(not shown)
        self.box.setPlainText(self._text if shown else self._masked())
        self.box.blockSignals(False)
        what = "Each line" if shown else "The values are hidden: tick Show values to read or change them. Each line"
        self.box.setAccessibleDescription(f"{what} is {_FORMS[self._separator]}.")

    def _masked(self) -> str:
        pairs, problem = parse_lines(self._text, self._separator)
        if problem is not None:  # not parsed: hide every line whole
            return "\n".join(_MASK for line in self._text.splitlines() if line.strip())
        return lines_of(tuple((name, _MASK) for name, _value in pairs), self._separator)

    def _changed(self) -> None:
        if not self.box.isReadOnly():
            self._text = self.box.toPlainText()
        self.edited.emit()
