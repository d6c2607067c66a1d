"""Crash reports: written to the log folder when Hearth dies, offered at the next start.

Python exceptions that escape to the top are written by an excepthook; hard crashes inside
llama.cpp or Qt (a segfault) are caught by faulthandler writing into its own file. Neither
needs a console, which a windowed bundle does not have.
"""

from __future__ import annotations

import faulthandler
import logging
import sys
import time
import traceback
from pathlib import Path

from ...owners import paths

log = logging.getLogger(__name__)
FAULT_LOG = "faults.log"
_fault_file = None


def install() -> None:
    """Catch unhandled exceptions and fatal signals from now on."""
    global _fault_file
    folder = paths.log_dir()
    _fault_file = (folder / FAULT_LOG).open("a", encoding="utf-8")
    faulthandler.enable(file=_fault_file, all_threads=True)
    sys.excepthook = _write_report
    import threading

    threading.excepthook = lambda args: _write_report(args.exc_type, args.exc_value, args.exc_traceback)


def _write_report(exc_type, exc_value, exc_traceback) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report = paths.log_dir() / f"crash-{stamp}.txt"
    text = "".join(traceback.format_exception(exc_type, exc_value, exc_traceback))
    report.write_text(f"Hearth crashed at {time.ctime()}\n\n{text}", encoding="utf-8")
    log.critical("unhandled exception, report written to %s\n%s", report, text)


def pending_reports() -> list[Path]:
    """Reports not yet shown to the user (and a fault log with new content)."""
    folder = paths.log_dir()
    reports = sorted(p for p in folder.glob("crash-*.txt"))
    faults = folder / FAULT_LOG
    if faults.exists() and faults.stat().st_size > 0:
        reports.append(faults)
    return reports


def mark_seen(reports: list[Path]) -> None:
    """Move shown reports aside so they are offered once."""
    seen = paths.log_dir() / "seen"
    seen.mkdir(exist_ok=True)
    for report in reports:
        if report.name == FAULT_LOG:
            target = seen / f"faults-{time.strftime('%Y%m%d-%H%M%S')}.log"
            target.write_bytes(report.read_bytes())
            report.write_bytes(b"")
        else:
            report.replace(seen / report.name)
