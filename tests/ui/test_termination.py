"""SIGTERM and SIGINT close Hearth the way its window's close button does: a real process."""

from __future__ import annotations

import signal
import subprocess

import pytest
from support.hearth_process import WAIT_S


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_termination_signal_closes_the_window_saving_its_settings(hearth, number):
    process = hearth.start(stderr=subprocess.PIPE, text=True)
    process.send_signal(number)
    assert process.wait(timeout=WAIT_S) == 0, process.stderr.read()
    assert f"received {number.name}" in hearth.log.read_text()
    assert "geometry" in (hearth.home / "config" / "hearth.ini").read_text()  # what closeEvent saves
    assert "Traceback" not in process.stderr.read()
