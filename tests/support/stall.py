"""The GUI event loop's longest stall while something happens: a 10 ms QTimer heartbeat whose
longest gap beyond its interval is the longest the window could not respond."""

from __future__ import annotations

from PySide6.QtCore import QElapsedTimer, QTimer

TICK_MS = 10


class StallMeter:
    def __init__(self):
        self.longest_ms = 0
        self._clock = QElapsedTimer()
        self._timer = QTimer(interval=TICK_MS)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.longest_ms = 0
        self._clock.start()
        self._timer.start()

    def stop(self) -> int:
        """The longest stall since start, in milliseconds."""
        self._timer.stop()
        return self.longest_ms

    def _tick(self) -> None:
        self.longest_ms = max(self.longest_ms, self._clock.restart() - TICK_MS)
