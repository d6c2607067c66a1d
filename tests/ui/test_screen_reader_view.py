"""What a screen reader finds, read out of process through AT-SPI (scripts/a11y-check.py): Hearth
on a private X server with its accessibility bridge on, its main window (each side-panel page)
and Get models walked as Orca would walk them. Every control a user can reach has a name.

Skipped where the machine lacks what it needs (Debian: xvfb dbus-x11 at-spi2-core
python3-pyatspi libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1), saying which.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "a11y-check.py"
SYSTEM_PYTHON = "/usr/bin/python3"
PACKAGES = "xvfb dbus-x11 at-spi2-core python3-pyatspi libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1"
TIMEOUT_S = 120


def missing() -> list[str]:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return [SYSTEM_PYTHON]
    lacking = [name for name in ("Xvfb", "dbus-daemon") if shutil.which(name) is None]
    if not os.access("/usr/libexec/at-spi-bus-launcher", os.X_OK):
        lacking.append("at-spi-bus-launcher")
    if subprocess.run([SYSTEM_PYTHON, "-c", "import pyatspi"], capture_output=True).returncode != 0:
        lacking.append("pyatspi")
    return lacking


def test_every_control_a_screen_reader_reaches_has_a_name():
    lacking = missing()
    if lacking:
        pytest.skip(f"needs {', '.join(lacking)} (Debian packages: {PACKAGES})")
    run = subprocess.run([SYSTEM_PYTHON, str(SCRIPT), "--dialogs", "--hearth-python", sys.executable],
                         capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT)
    assert run.returncode in (0, 1), f"the check could not run:\n{run.stderr[-3000:]}"
    nodes = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    windows = {node["window"] for node in nodes}
    assert windows == {"Hearth", "Get models"}, windows
    assert len(nodes) >= 20, "far fewer controls than the window has: the walk went wrong"
    assert any(node["role"] == "spin button" for node in nodes), "the Parameters page was walked too"
    unnamed = [f"{node['role']} in {node['window']}: {node['id'] or node['path']}" for node in nodes if not node["name"]]
    assert not unnamed, f"{len(unnamed)} controls without a name:\n  " + "\n  ".join(unnamed)
    assert run.returncode == 0
