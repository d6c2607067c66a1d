"""The bar at the top of the chat: which model writes the replies, and choosing another one.

LM Studio and Jan put the model selector above the conversation, where the user looks; the
side panel's table stays for the details. The combo box lists the usable models the picker
found, by the name each model gives itself (with the file name beside it where several files
share a name, and in the tooltip); choosing one asks for it to be loaded, and the bar says
while it loads.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from ..engine.text import printable
from ..library import scan
from ..library.scan import ModelEntry

_PATH = Qt.ItemDataRole.UserRole
COMBO_MAX_CHARS = 60  # a long name and its file name; beyond that the box would only be emptier


def _names(entries: list[tuple[Path, str]]) -> list[str]:
    """Each model's shown name: its own, with the file name added where names repeat."""
    counts = Counter(name for _path, name in entries)
    return [name if counts[name] == 1 else f"{name} ({printable(path.name)})" for path, name in entries]


def _same(a: Path, b: Path) -> bool:
    """One file, however it was reached (a link, the Hugging Face cache's snapshot names)."""
    return a == b or scan.resolved(a) == scan.resolved(b)


class ChatHeader(QWidget):
    """The model selector above the chat.

    Signals:
        modelChosen(Path): the user chose another model to load.
    """

    modelChosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel("&Model:")
        self.combo = QComboBox()
        self.label.setBuddy(self.combo)
        self.combo.setAccessibleName("Model")
        self.combo.setAccessibleDescription("The model that writes the replies; choosing another one loads it")
        self.combo.setPlaceholderText("Choose a model")
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(18)
        self.combo.setMaximumWidth(self.combo.fontMetrics().averageCharWidth() * COMBO_MAX_CHARS)
        self.state = QLabel()  # "Loading …"
        self.state.setTextFormat(Qt.TextFormat.PlainText)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.addWidget(self.label)
        layout.addWidget(self.combo, 1)
        layout.addWidget(self.state)
        layout.addStretch(0)
        self._entries: list[tuple[Path, str]] = []  # usable models found, then the loaded one if not among them
        self._current: Path | None = None
        self._loading: Path | None = None
        self.combo.activated.connect(self._chosen)

    def set_entries(self, entries: list[ModelEntry]) -> None:
        """The models found (unusable ones are left out: the side panel says why)."""
        self._entries = [(entry.path, entry.name) for entry in entries if entry.usable]
        self._fill()

    def set_current(self, path: Path | None, name: str | None = None) -> None:
        """The loaded model (its own name, for a file the scan did not find); the load is over."""
        self._current, self._loading = path, None
        if path is not None and not any(_same(known, path) for known, _name in self._entries):
            self._entries.append((path, name or path.name))
        self._fill()

    def set_loading(self, path: Path | None) -> None:
        """A model is loading (shown as chosen, with "Loading…"), or no load is under way."""
        self._loading = path
        self._fill()

    def shown_path(self) -> Path | None:
        index = self.combo.currentIndex()
        return self.combo.itemData(index, _PATH) if index >= 0 else None

    def _fill(self) -> None:
        self.combo.blockSignals(True)
        self.combo.clear()
        for (path, _name), shown in zip(self._entries, _names(self._entries)):
            self.combo.addItem(shown, path)
            self.combo.setItemData(self.combo.count() - 1, str(path), Qt.ItemDataRole.ToolTipRole)
        selected = self._loading or self._current
        index = next((i for i, (path, _name) in enumerate(self._entries) if selected and _same(path, selected)), -1)
        self.combo.setCurrentIndex(index)
        self.combo.setEnabled(bool(self._entries))
        if self._loading is not None and index < 0:  # a file the scan did not list (--model)
            placeholder = printable(self._loading.name)
        else:
            placeholder = "Choose a model" if self._entries else "No models yet: Get models (Ctrl+Shift+G)"
        self.combo.setPlaceholderText(placeholder)
        self.combo.blockSignals(False)
        self.combo.setToolTip(printable(selected.name) if selected is not None else "")
        self.state.setText("Loading…" if self._loading is not None else "")
        self.state.setVisible(self._loading is not None)

    def _chosen(self, index: int) -> None:
        path = self.combo.itemData(index, _PATH)
        chosen = self._loading or self._current
        if path is not None and not (chosen is not None and _same(path, chosen)):
            self.modelChosen.emit(path)
