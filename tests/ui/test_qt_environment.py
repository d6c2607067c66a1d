"""Qt as Hearth makes it (application.create_application, QT_ENVIRONMENT), checked in fresh
interpreters: the variables Qt reads once must be set before it first reads them, which a test
process whose QApplication already painted cannot show.

Qt's raster engine hands a tall fill to a pool of threads ("Thread (pooled)"), whose wakes take
a decoding thread's place while a reply streams (#31). Painting a tall text pane makes Qt start
that pool where it is on; in Hearth's application it never starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PAINT_A_TALL_PANE = """
import os
from PySide6.QtWidgets import QApplication, QTextBrowser
from app.ui.app.application import create_application
app = create_application() if {hearths} else QApplication([])
pane = QTextBrowser()
pane.resize(400, 1200)
pane.setPlainText("A line of the transcript.\\n" * 400)
pane.show()
app.processEvents()
pane.grab()
print(sum(open(f"/proc/self/task/{{task}}/comm").read().strip() == "Thread (pooled)"
          for task in os.listdir("/proc/self/task")))
"""


def pooled_threads_after_painting(hearths: bool) -> int:
    environment = {name: value for name, value in os.environ.items() if name != "QT_NO_GUI_THREADPOOL"}
    done = subprocess.run([sys.executable, "-c", PAINT_A_TALL_PANE.format(hearths=hearths)], cwd=ROOT,
                          env={**environment, "QT_QPA_PLATFORM": "offscreen"}, capture_output=True, text=True,
                          check=True, timeout=60)
    return int(done.stdout.split()[-1])


def test_hearths_application_fills_on_its_own_thread_and_wakes_no_pool():
    assert pooled_threads_after_painting(hearths=True) == 0
    assert pooled_threads_after_painting(hearths=False) > 0  # what the test would miss: Qt's own default
