"""`hearth serve` run as a user runs it (`python -m app serve …`), for the serving tests and bench.

`Served` starts it on port 0 (a free port it picks and prints), waits for the address line on
stdout, and stops it with a signal, returning the exit status and what it wrote to stderr.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 30


class Served:
    """A running `hearth serve MODEL --port 0 *args`; `base_url` is the address it printed."""

    def __init__(self, model: Path, *args: str, env: dict[str, str] | None = None):
        self.model_id = Path(model).name
        command = [sys.executable, "-m", "app", "serve", str(model), "--port", "0", *args]
        self._process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         env=dict(os.environ, **(env or {})))
        self._stderr: list[bytes] = []
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.base_url = self._address()

    def _read_stderr(self) -> None:
        for line in self._process.stderr:
            self._stderr.append(line)

    def _address(self) -> str:
        found: list[bytes] = []
        reader = threading.Thread(target=lambda: found.append(self._process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_S)
        line = found[0].decode().strip() if found else ""
        if not line.startswith("http://"):
            self.stop(signal.SIGKILL)
            raise RuntimeError(f"hearth serve did not start: {self.stderr[-2000:]}")
        return line

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process.poll() is None

    def send(self, sig: int) -> None:
        self._process.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send `sig` and wait for the process; its exit status."""
        if self._process.poll() is None:
            self._process.send_signal(sig)
        return self.wait(sig)

    def wait(self, sig: int | None = None) -> int:
        """Wait for the process to end (after `sig`, if the caller sent one); its exit status."""
        try:
            return self._process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            raise AssertionError(f"hearth serve did not stop within {STOP_TIMEOUT_S} s (signal: {sig!r})") from None
        finally:
            self._process.stdout.close()


@contextlib.contextmanager
def serving(model: Path, *args: str) -> Iterator[Served]:
    """`hearth serve MODEL *args` for the length of a block (a module's fixture), which must
    then stop cleanly: exit status 0, or its stderr in the failure."""
    server = Served(model, *args)
    yield server
    assert server.stop() == 0, server.stderr


@contextlib.contextmanager
def openai_client(served: Served, timeout: float = 120):
    """The official client pointed at `served`, as a user's script points it (no retries, so a
    failure shows as itself)."""
    import openai

    with openai.OpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=timeout) as client:
        yield client
