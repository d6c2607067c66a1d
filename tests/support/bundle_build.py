"""`make bundle`, started in the background as soon as the suite knows it will run the bundle's
tests, so that its half-minute build overlaps the other tests instead of preceding its own.

Run on its own, the suite's process starts the build when it has collected the bundle's tests.
Run in workers (pytest-xdist, as `make test` does), every worker collects every test, so the
controlling process starts the one build before the workers exist and publishes its result in
a file named by HEARTH_BUNDLE_RESULT, which the workers inherit and the bundle's tests wait for.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1800
RESULT_ENV = "HEARTH_BUNDLE_RESULT"


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
        from app.owners.paths import default_model

        default_model()
        self._log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", prefix="hearth-bundle-")
        self._started = time.monotonic()
        self._process = subprocess.Popen(["make", "bundle"], cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, text=True)

    def start_for_workers(self) -> None:
        """Start the build for test workers yet to be spawned: its result goes to a file they
        find through RESULT_ENV."""
        self.start()
        result = Path(tempfile.mkdtemp(prefix="hearth-bundle-")) / "result.json"
        os.environ[RESULT_ENV] = str(result)
        threading.Thread(target=self._publish, args=(result,), name="bundle-build", daemon=True).start()

    def _publish(self, path: Path) -> None:
        written = path.with_suffix(".partial")
        written.write_text(json.dumps(asdict(self._finished())), encoding="utf-8")
        written.replace(path)  # whole, or not there

    def wait(self) -> BuildResult:
        """The build's result: the controlling process's when it builds for the workers, else
        this process's own, started now if nothing did (a test run on its own)."""
        shared = os.environ.get(RESULT_ENV)
        if shared and self._process is None:
            path, deadline = Path(shared), time.monotonic() + BUILD_TIMEOUT_S
            while not path.exists() and time.monotonic() < deadline:
                time.sleep(0.5)
            return BuildResult(**json.loads(path.read_text(encoding="utf-8")))
        self.start()
        return self._finished()

    def _finished(self) -> BuildResult:
        returncode = self._process.wait(timeout=BUILD_TIMEOUT_S)
        self._log.seek(0)
        return BuildResult(returncode, self._log.read(), time.monotonic() - self._started)

    def abandon(self) -> None:
        """End a build nobody waited for (the run was interrupted or its tests deselected)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()


build = _Build()
