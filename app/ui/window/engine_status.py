"""The status bar when the model's process dies (#29): what happened, and what Hearth does about it.

llama.cpp runs in a process of its own, so when it aborts, or the system kills it for memory, the
window stays and says so here, at once and to a screen reader too: "llama.cpp crashed (SIGABRT):
GGML_ASSERT(…). Loading Gemma again…". The reply it was writing is kept, marked interrupted with
the same cause, and a message sent meanwhile waits for the model, as during any load. If it dies
again before a reply gets through, Hearth stops trying and this line offers Reload instead.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QStatusBar, QToolButton, QWidget

from ...common.text import printable
from ...owners.model_session import ModelSession
from ..widgets.announce import announce
from ..widgets.colors import Tone, set_tone

BACK_MS = 20_000  # how long "… was loaded again" stays in the status bar
CAUSE_CHARS = 240


class EngineStatus(QObject):
    """The engine's crashes in the status bar, for ModelDisplay.

    Slots (connected here): ModelSession's engineCrashed and modelLoaded.
    `model_name(record)`: the name a model is shown by.
    """

    def __init__(self, models: ModelSession, status_bar: QStatusBar, model_name: Callable[[str | None], str | None],
                 parent: QObject):
        super().__init__(parent)
        self._models, self._model_name, self._status_bar = models, model_name, status_bar
        self._reloading = False
        self._cause = ""
        self.widget = QWidget()
        self.widget.setAccessibleName("Model process")
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # llama.cpp's own words
        self.label.setWordWrap(False)
        set_tone(self.label, Tone.ERROR)
        self.reload_button = QToolButton()
        self.reload_button.setText("Reload")
        self.reload_button.setAutoRaise(True)
        self.reload_button.setAccessibleName("Reload the model")
        description = "Load the model again; the conversation is kept"
        self.reload_button.setAccessibleDescription(description)
        self.reload_button.setToolTip(description)
        self.reload_button.clicked.connect(self._reload)
        row = QHBoxLayout(self.widget)
        row.setContentsMargins(6, 0, 6, 0)
        row.addWidget(self.reload_button)  # first: a long cause is cut at the window's edge, never the button
        row.addWidget(self.label)
        status_bar.addWidget(self.widget)
        self.widget.hide()
        models.engineCrashed.connect(self._crashed)
        models.modelLoaded.connect(self._back)

    def _crashed(self, why: str, reloading: bool) -> None:
        self._status_bar.clearMessage()  # a temporary message would hide this line
        self._reloading = reloading
        self._cause = cause = printable(why, limit=CAUSE_CHARS)
        loading = self._models.loading
        if reloading and loading is not None:
            text = f"{cause}. Loading {self._model_name(loading.record_name)} again…"
        else:
            text = f"The model was not loaded again: it stopped twice. {cause}."
        self.label.setText(text)
        self.label.setToolTip(text)
        self.reload_button.setVisible(not reloading)
        self.widget.show()
        announce(self.label, text, urgent=True)

    def _back(self, loaded) -> None:
        """The model is back: the status bar's message says so, after the cause (it comes after
        ModelDisplay's "Loaded …", and replaces it)."""
        if self._reloading and self._cause:
            text = f"{self._cause}. {self._model_name(loaded.record_name)} was loaded again."
            self._status_bar.showMessage(text, BACK_MS)
            announce(self.label, text)
        self.widget.hide()
        self._reloading, self._cause = False, ""

    def _reload(self) -> None:
        self.widget.hide()
        self._models.reload()
