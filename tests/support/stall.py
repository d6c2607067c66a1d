"""The GUI event loop's longest stall while something happens: a 10 ms QTimer heartbeat whose
longest gap beyond its interval is the longest the window could not respond."""

from __future__ import annotations

from PySide6.QtCore import QElapsedTimer, QTimer

TICK_MS = 10
# What a test lets the window stall while it waits on something slow (a tool server, a call of
# 30 s): a wait would be that thing's own time, seconds or for ever. The ≤ 100 ms figure is
# bench/tool_stalls.py's, measured on a quiet machine: in the suite a second test process and
# the servers' own start-ups share two cores, and their scheduling is not the window's doing
# (a Stop in the agent loop measured 118 ms so once).
STALL_LIMIT_MS = 1000


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
