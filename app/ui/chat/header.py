"""The bar at the top of the chat: which model writes the replies, and choosing another one.

LM Studio and Jan put the model selector above the conversation, where the user looks; the
side panel's table stays for the details. The combo box lists the usable models the picker
found, by the name each model gives itself (with the file name beside it where several files
share a name, and in the tooltip), then the models of the servers the user added, each with a
network icon and "remote · <server>"; choosing one asks for it to be loaded, and the bar says
while it loads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QStyle, QWidget

from ...common.text import printable
from ...engine.types import LocalModel, ModelSource, RemoteModel
from ...library.scan import ModelEntry
from ..models.remote_rows import RemoteEntry
from ..models.table import RowKey, row_key
from ..widgets.tooltips import plain_tooltip

_KEY = Qt.ItemDataRole.UserRole
COMBO_MAX_CHARS = 60  # a long name and its file name; beyond that the box would only be emptier


@dataclass(frozen=True)
class _Item:
    """One model in the box: what choosing it asks to load, and how it is shown."""

    key: RowKey
    target: Path | RemoteEntry | RemoteModel  # what modelChosen carries
    name: str
    detail: str  # the file name, or "remote · <server>"
    tooltip: str
    remote: bool


def _file_item(path: Path, name: str) -> _Item:
    return _Item(row_key(path), path, name, printable(path.name), printable(str(path), limit=None), False)


def _remote_item(entry: RemoteEntry) -> _Item:
    return _Item(entry.key, entry, entry.name, entry.location, f"{entry.name} on {entry.server_name} ({entry.address})",
                 True)


def _loaded_item(source: ModelSource, name: str | None) -> _Item:
    """The loaded (or loading) model when the lists do not have it (a file given with --model,
    a server that did not answer this time)."""
    if isinstance(source, LocalModel):
        return _file_item(source.path, name or printable(source.path.name))
    return _Item(row_key(source), source, name or printable(source.model_id, limit=120),
                 f"remote · {printable(source.server.name)}", source.record_name, True)


def _shown(items: list[_Item]) -> list[str]:
    """Each model's shown text: its own name; a file's name added where names repeat; a remote
    model's server always."""
    counts = Counter(item.name for item in items if not item.remote)
    return [f"{item.name} ({item.detail})" if item.remote or counts[item.name] > 1 else item.name for item in items]


class ChatHeader(QWidget):
    """The model selector above the chat.

    Signals:
        modelChosen(Path | RemoteEntry | RemoteModel): the user chose another model to load: a
            file, or a server's model (RemoteServers.source gives it its key).
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
        self._listed: list[_Item] = []  # usable models found: files, then servers' models
        self._current: _Item | None = None
        self._loading: _Item | None = None
        self.combo.activated.connect(self._chosen)

    def set_entries(self, entries: list[ModelEntry], remote: list[RemoteEntry] = ()) -> None:
        """The models found (unusable ones are left out: the side panel says why)."""
        self._listed = [_file_item(entry.path, entry.name) for entry in entries if entry.usable]
        self._listed += [_remote_item(entry) for entry in remote if entry.usable]
        self._fill()

    def set_current(self, source: ModelSource | Path | None, name: str | None = None) -> None:
        """The loaded model (its own name, for one the lists do not have); the load is over."""
        if isinstance(source, Path):
            source = LocalModel(source)
        self._current = _loaded_item(source, name) if source is not None else None
        self._loading = None
        self._fill()

    def set_loading(self, source: ModelSource | Path | None) -> None:
        """A model is loading (shown as chosen, with "Loading…"), or no load is under way."""
        if isinstance(source, Path):
            source = LocalModel(source)
        self._loading = _loaded_item(source, None) if source is not None else None
        self._fill()

    def shown(self) -> Path | RemoteEntry | RemoteModel | None:
        """The model the box shows: a file, or a server's model."""
        key = self.combo.itemData(self.combo.currentIndex(), _KEY) if self.combo.currentIndex() >= 0 else None
        return next((item.target for item in self._items() if item.key == key), None)

    def shown_path(self) -> Path | None:
        """The file the box shows; None for none, or for a server's model."""
        shown = self.shown()
        return shown if isinstance(shown, Path) else None

    def _items(self) -> list[_Item]:
        """The listed models, and the loaded one if they do not have it."""
        items = list(self._listed)
        if self._current is not None and all(item.key != self._current.key for item in items):
            items.append(self._current)
        return items

    def _fill(self) -> None:
        items = self._items()
        self.combo.blockSignals(True)
        self.combo.clear()
        server_icon = self.style().standardIcon(QStyle.StandardPixmap.SP_DriveNetIcon)
        for item, shown in zip(items, _shown(items)):
            if item.remote:
                self.combo.addItem(server_icon, shown, item.key)
            else:
                self.combo.addItem(shown, item.key)
            self.combo.setItemData(self.combo.count() - 1, plain_tooltip(item.tooltip), Qt.ItemDataRole.ToolTipRole)
        selected = self._loading or self._current
        index = next((i for i, item in enumerate(items) if selected and item.key == selected.key), -1)
        self.combo.setCurrentIndex(index)
        self.combo.setEnabled(bool(items))
        if self._loading is not None and index < 0:  # a model the lists do not have (--model)
            placeholder = self._loading.detail if not self._loading.remote else self._loading.name
        else:
            placeholder = "Choose a model" if items else "No models yet: Get models (Ctrl+Shift+G)"
        self.combo.setPlaceholderText(placeholder)
        self.combo.blockSignals(False)
        if selected is None:
            self.combo.setToolTip("")
        else:  # a file's name, or where a server's model is: foreign text, shown as written
            self.combo.setToolTip(plain_tooltip(selected.tooltip if selected.remote else selected.detail))
        self.state.setText("Loading…" if self._loading is not None else "")
        self.state.setVisible(self._loading is not None)

    def _chosen(self, index: int) -> None:
        key = self.combo.itemData(index, _KEY)
        chosen = self._loading or self._current
        if key is None or (chosen is not None and key == chosen.key):
            return
        item = next((item for item in self._items() if item.key == key), None)
        if item is not None:
            self.modelChosen.emit(item.target)
