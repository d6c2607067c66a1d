"""The status bar's count of the context the open conversation fills, of the model's."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QLabel

from ...conversation.context_use import ContextUse
from ...owners.model_session import ModelSession

# While a reply streams the session estimates at every chunk (up to 40 a second), and each new
# text relays out the status bar: measured (#31), 0.65 ms of the GUI thread per chunk, 40% of
# what a chunk cost it, taken from a generating thread on a small machine. Nobody reads a count
# that changes faster than this.
METER_INTERVAL_MS = 250


class ContextMeter(QObject):
    """Writes a ContextUse into the status bar's label. An estimate is shown at once, then at
    most every METER_INTERVAL_MS while estimates keep coming, the latest one at the end of the
    interval, so the last is never left unshown; the engine's count is shown at once."""

    def __init__(self, label: QLabel, models: ModelSession, parent: QObject):
        super().__init__(parent)
        self._label, self._models = label, models
        self._waiting: ContextUse | None = None  # the latest estimate, until its interval ends
        self._interval = QTimer(self, singleShot=True, interval=METER_INTERVAL_MS)
        self._interval.timeout.connect(self._interval_ended)

    def show(self, use: ContextUse) -> None:
        if use.estimated and self._interval.isActive():
            self._waiting = use
            return
        self._waiting = None
        self._write(use)
        if use.estimated:
            self._interval.start()
        else:
            self._interval.stop()

    def clear(self) -> None:
        """No model: no count."""
        self._waiting = None
        self._interval.stop()
        self._label.setText("")

    def _interval_ended(self) -> None:
        if self._waiting is not None:
            self.show(self._waiting)

    def _write(self, use: ContextUse) -> None:
        current = self._models.current
        if current is None:
            self._label.setText("")
            return
        about = "≈" if use.estimated else ""
        limit = f" / {current.n_ctx:,}" if current.n_ctx else ""  # a server may not say its context length
        self._label.setText(f"Context {about}{use.tokens:,}{limit}")
