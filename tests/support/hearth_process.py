"""Running Hearth's window as a real process, for the tests that need one (see conftest.py)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 60


def wait_for_log(log: Path, text: str, process: subprocess.Popen | None = None, timeout: float = WAIT_S) -> None:
    """Wait until Hearth's log holds `text`; fail if the process exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while not (log.exists() and text in log.read_text()):
        assert process is None or process.poll() is None, f"Hearth exited before logging {text!r}"
        assert time.monotonic() < deadline, f"Hearth did not log {text!r} within {timeout} s"
        time.sleep(0.1)


@dataclass
class HearthLauncher:
    """`python -m app` on a throwaway profile, opening a file that is not a model, so the
    window is all there is to test. Every process it started is killed after the test."""

    home: Path
    command: list[str]
    env: dict[str, str]
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def log(self) -> Path:
        return self.home / "logs" / "hearth.log"

    def start(self, **popen) -> subprocess.Popen:
        """Start Hearth and return once its window is shown."""
        popen.setdefault("stderr", subprocess.DEVNULL)
        process = subprocess.Popen(self.command, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, **popen)
        self.processes.append(process)
        wait_for_log(self.log, "window shown", process)
        return process
