"""`make bundle`, started in the background as soon as the suite knows it will run the bundle's
tests, so that its half-minute build overlaps the other tests instead of preceding its own.

The build is a subprocess (PyInstaller spends most of it copying and compressing files), so
on two cores it mostly uses the core the single-threaded tests leave idle.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT_S = 1800


@dataclass(frozen=True)
class BuildResult:
    returncode: int
    output: str
    seconds: float


class _Build:
    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._log = None
        self._started = 0.0

    def start(self) -> None:
        """Start `make bundle` once; later calls do nothing."""
        if self._process is not None:
            return
        # The build copies the default model into the bundle; assembling it here first means the
        # tests' own first use and the build's never write the same file at once.
        from app.library.default_model import ensure_default_model

        ensure_default_model()
        self._log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", prefix="hearth-bundle-")
        self._started = time.monotonic()
        self._process = subprocess.Popen(["make", "bundle"], cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, text=True)

    def wait(self) -> BuildResult:
        """The build's result, starting it now if nothing did (a test run on its own)."""
        self.start()
        returncode = self._process.wait(timeout=BUILD_TIMEOUT_S)
        self._log.seek(0)
        return BuildResult(returncode, self._log.read(), time.monotonic() - self._started)

    def abandon(self) -> None:
        """End a build nobody waited for (the run was interrupted or its tests deselected)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()


build = _Build()
