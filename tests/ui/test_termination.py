"""SIGTERM and SIGINT close Hearth the way its window's close button does: a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 60


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_termination_signal_closes_the_window_saving_its_settings(tmp_path, number):
    home = tmp_path / "home"
    not_a_model = tmp_path / "not-a-model.gguf"
    not_a_model.write_bytes(b"nothing to load: the window alone is being tested")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HEARTH_HOME=str(home))
    log = home / "logs" / "hearth.log"
    hearth = subprocess.Popen([sys.executable, "-m", "app", "--model", str(not_a_model)], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + WAIT_S
        while not (log.exists() and "window shown" in log.read_text()):
            assert hearth.poll() is None and time.monotonic() < deadline, "Hearth did not start"
            time.sleep(0.1)
        hearth.send_signal(number)
        assert hearth.wait(timeout=WAIT_S) == 0, hearth.stderr.read()
    finally:
        if hearth.poll() is None:
            hearth.kill()
            hearth.wait()
    assert f"received {number.name}" in log.read_text()
    assert "geometry" in (home / "config" / "hearth.ini").read_text()  # what closeEvent saves
    assert "Traceback" not in hearth.stderr.read()
