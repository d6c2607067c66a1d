"""One Hearth per profile: a real lock file, a real local socket, real processes."""

from __future__ import annotations

import signal
import subprocess
import sys

from support.hearth_process import ROOT, WAIT_S, wait_for_log

from app.ui.app.single_instance import SingleInstance


def test_the_second_instance_is_refused_and_brings_the_first_forward(qtbot, tmp_path):
    first, second = SingleInstance(tmp_path), SingleInstance(tmp_path)
    assert first.acquire()
    try:
        assert not second.acquire()
        with qtbot.waitSignal(first.activationRequested, timeout=5000):
            assert second.activate_running()
    finally:
        first.release()
    assert second.acquire()  # released: the next launch runs
    second.release()


def test_nobody_answering_is_reported(tmp_path):
    other_profile = SingleInstance(tmp_path / "nobody-runs-here")
    assert not other_profile.activate_running()


def test_a_killed_instance_does_not_keep_the_next_one_out(qtbot, tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path\n"
         "from PySide6.QtCore import QCoreApplication\n"
         "from app.ui.app.single_instance import SingleInstance\n"
         "app = QCoreApplication([])\n"
         f"instance = SingleInstance(Path({str(tmp_path)!r}))\n"
         "assert instance.acquire()\n"
         "print('held', flush=True); time.sleep(600)"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert not SingleInstance(tmp_path).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (tmp_path / "hearth.lock").exists()  # left behind, as after a crash
    survivor = SingleInstance(tmp_path)
    assert survivor.acquire()
    with qtbot.waitSignal(survivor.activationRequested, timeout=5000):  # its socket works too
        assert SingleInstance(tmp_path).activate_running()
    survivor.release()


def test_launching_hearth_twice_shows_the_running_window_and_exits(hearth):
    first = hearth.start()
    second = subprocess.run(hearth.command, cwd=ROOT, env=hearth.env, capture_output=True, text=True, timeout=WAIT_S)
    assert second.returncode == 0, second.stderr
    wait_for_log(hearth.log, "another launch of Hearth: showing this window", first)
    assert hearth.log.read_text().count("window shown") == 1  # the second never opened a window
    assert first.poll() is None
