"""What a download reports while it runs: progress snapshots, a smoothed speed, byte counts in words.

Why a module of its own: the window, the downloads panel and `hearth pull` show these
snapshots and sizes without downloading anything, so they import this light module rather
than the download loop and huggingface_hub with it; the loop (`downloads`) feeds a Reporter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from app.library.quants import RemoteModel

_PROGRESS_INTERVAL_S = 0.1  # at most ten progress callbacks a second
_SPEED_SAMPLE_S = 0.5
_SPEED_SMOOTHING = 0.3  # weight of the newest sample in the moving average


@dataclass(frozen=True)
class DownloadProgress:
    """A snapshot for a progress bar. Byte counts cover all parts of a split model."""

    model_name: str
    file_name: str  # the part being fetched now
    bytes_done: int
    bytes_total: int
    speed: float  # bytes per second, smoothed; 0 until measured and while paused
    eta_seconds: float | None
    paused: bool = False

    @property
    def fraction(self) -> float:
        return self.bytes_done / self.bytes_total if self.bytes_total else 1.0


ProgressCallback = Callable[[DownloadProgress], None]


class _SpeedMeter:
    """Bytes per second as an exponential moving average of half-second samples.

    Raw per-chunk rates jump around with TCP bursts; the average keeps the ETA readable.
    """

    def __init__(self):
        self.speed = 0.0
        self.restart()

    def restart(self) -> None:
        """Forget the time spent paused; the average itself is kept."""
        self._sample_start = time.monotonic()
        self._sample_bytes = 0

    def add(self, nbytes: int) -> None:
        self._sample_bytes += nbytes
        elapsed = time.monotonic() - self._sample_start
        if elapsed >= _SPEED_SAMPLE_S:
            rate = self._sample_bytes / elapsed
            self.speed = rate if self.speed == 0 else self.speed + _SPEED_SMOOTHING * (rate - self.speed)
            self.restart()


class Reporter:
    """Turns bytes received into throttled DownloadProgress callbacks."""

    def __init__(self, model: RemoteModel, callback: ProgressCallback | None):
        self._model = model
        self._callback = callback
        self._meter = _SpeedMeter()
        self._last_emit = 0.0
        self.file_name = model.name
        self.done = 0

    def add(self, nbytes: int, counts_for_speed: bool = True) -> None:
        self.done += nbytes
        if counts_for_speed:
            self._meter.add(nbytes)
        if time.monotonic() - self._last_emit >= _PROGRESS_INTERVAL_S:
            self.emit()

    def emit(self, paused: bool = False) -> None:
        self._last_emit = time.monotonic()
        if self._callback is None:
            return
        speed = 0.0 if paused else self._meter.speed
        remaining = self._model.size - self.done
        self._callback(DownloadProgress(
            model_name=self._model.name,
            file_name=self.file_name,
            bytes_done=self.done,
            bytes_total=self._model.size,
            speed=speed,
            eta_seconds=remaining / speed if speed > 0 else None,
            paused=paused,
        ))

    def resumed(self) -> None:
        self._meter.restart()
