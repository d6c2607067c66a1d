"""`hearth --self-test` in a subprocess, exactly as a user or a bundle runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_self_test_passes_and_saves_a_screenshot(tmp_path, gemma_path):
    shot = tmp_path / "shot.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env.pop("HEARTH_HOME", None)  # the self-test makes its own throwaway profile
    result = subprocess.run([sys.executable, "-m", "app", "--self-test", "--screenshot", str(shot)],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    line = result.stdout.strip().splitlines()[-1]
    assert line.startswith("self-test passed in") and "stopped reply kept" in line
    assert line.endswith("the model's process killed mid-reply and the model loaded again")
    assert shot.stat().st_size > 10_000
