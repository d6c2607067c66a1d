"""scripts/tool_screenshots.py keeps working: it writes every picture it promises (to look at
them, run it, or set HEARTH_SCREENSHOTS to a folder to keep this test's)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "tool_screenshots.py"


def test_the_script_writes_each_picture_in_both_appearances(qapp, tmp_path, monkeypatch):
    out = Path(os.environ.get("HEARTH_SCREENSHOTS") or tmp_path)
    spec = importlib.util.spec_from_file_location("tool_screenshots", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    palette, style = qapp.palette(), qapp.style().name()
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), str(out)])
    try:
        assert script.main() == 0
    finally:
        qapp.setPalette(palette)
        qapp.setStyle(style)
    names = {path.name for path in out.glob("*.png") if path.stat().st_size > 1000}
    for picture in ("card-asking", "card-running", "card-result", "card-failed", "card-denied", "picker",
                    "picker-menu", "transcript", "settings-tools", "server-editor"):
        assert {f"{picture}-light.png", f"{picture}-dark.png"} <= names, picture
