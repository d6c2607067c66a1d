"""Run every benchmark in turn (`make bench`); each prints its figures and writes bench/results/*.json."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SCRIPTS = [
    "engine_vs_raw.py", "context_overflow.py", "branch_prefix.py", "gui_path.py", "view_update.py", "event_loop_stall.py",
    "open_conversation.py", "remote_chat.py", "serve_speed.py", "lookup_decoding.py",
    "resume.py", "memory_plan.py", "grammar.py", "tool_prompt.py", "tool_loop.py", "tool_stalls.py",
    "docs_search.py", "docs_recall.py", "docs_ttft.py", "docs_window.py", "engine_process.py", "window_process.py",
    "image_turns.py",
]


def main() -> int:
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    failed = 0
    for script in SCRIPTS:
        print(f"== {script}", flush=True)
        failed |= subprocess.run([sys.executable, str(BENCH / script)], env=env).returncode != 0
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
