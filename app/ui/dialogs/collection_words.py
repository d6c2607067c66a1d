"""What Settings → Documents and the status bar say about a document collection, worded once.

The page's table and the window's status bar speak of the same runs ("Indexing “notes”: 12 of
40 files", "“notes” indexed: 38 files, 2 failed"), and a screen reader hears the same words, so
they are made here from the typed values the DocumentLibrary gives (CollectionSummary, Progress,
IndexReport). A collection's name and paths are the user's text: they go through
common/text.py (one line, printable, short) and are only ever shown as plain text.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ...common.text import printable, shorten
from ...documents.index import CollectionSummary
from ...documents.indexing import IndexReport, Progress

NAME_CHARS = 40  # of a collection's name in a sentence, a cell or the status bar
ROOT_CHARS = 60  # of a folder's name in the table's Folders cell
WAITING = "Waiting"
UNFINISHED = "Not finished: will go on"
UNFINISHED_TIP = ("Its last indexing was cut short (Hearth quit, or it was cancelled). Hearth goes on with it at "
                  "its next start; Update goes on now. What was done stays.")


def quoted(name: str) -> str:
    """A collection's name for a sentence: “notes”, cut short."""
    return f"“{shorten(name, NAME_CHARS)}”"


def count(number: int, noun: str) -> str:
    """"1 file", "12 files"."""
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def progress_words(step: Progress | None) -> str:
    """"12 of 40 files" (nothing counted yet: "starting")."""
    if step is None:
        return "starting"
    return f"{step.done:,} of {count(step.total, 'file')}"


def running_words(name: str, step: Progress | None) -> str:
    """The status bar's and the progress bar's line: "Indexing “notes”: 12 of 40 files"."""
    return f"Indexing {quoted(name)}: {progress_words(step)}"


def state_words(summary: CollectionSummary | None, running: bool, waiting: bool, step: Progress | None) -> str:
    """The table's State cell: "Indexing 12 of 40 files…", "Waiting", "Not finished: will go on",
    else when it was last indexed."""
    if running:
        return "Indexing…" if step is None else f"Indexing {progress_words(step)}…"
    if waiting:
        return WAITING
    if summary is None:  # made by a run that has not been read back yet
        return ""
    if not summary.collection.finished:
        return UNFINISHED
    return f"Indexed {when(summary.collection.finished_at)}"


def when(stamp: str | None, now: datetime | None = None) -> str:
    """The index's UTC ISO time in local time: "today, 14:05", else "2025-05-14, 14:05" (as the
    Hub's lists write dates: no locale's month names in an English interface)."""
    try:
        moment = datetime.fromisoformat(stamp or "").astimezone()
    except ValueError:
        return "earlier"
    today = (now or datetime.now().astimezone()).date()
    return moment.strftime("today, %H:%M" if moment.date() == today else "%Y-%m-%d, %H:%M")


def roots_words(roots: tuple[Path, ...]) -> str:
    """The Folders cell: the folders' and files' own names ("notes, papers"), the paths being in
    its tooltip and in the list under the table."""
    names = [printable(root.name or str(root), None) for root in roots]
    return shorten(", ".join(names), ROOT_CHARS) if names else "—"


def path_words(path: Path) -> str:
    """A path for a list row: on one line, printable (long ones are elided by the view)."""
    return printable(str(path), None)


def ended_words(name: str, report: IndexReport, summary: CollectionSummary | None, last: Progress | None) -> str:
    """How a run ended: "“notes” indexed: 38 files, 2 failed", or "Indexing “notes” stopped after
    12 of 40 files". The counts are the collection's own once it is read back, else the run's."""
    if report.cancelled:
        where = f" after {progress_words(last)}" if last is not None else ""
        return f"Indexing {quoted(name)} stopped{where}."
    files = summary.stats.files if summary is not None else report.indexed + report.unchanged
    failed = summary.stats.failed if summary is not None else len(report.failed)
    words = f"{quoted(name)} indexed: {count(files, 'file')}"
    return words + (f", {failed:,} failed" if failed else "")


def failed_of(summary: CollectionSummary | None, report: IndexReport) -> int:
    """How many files of the collection could not be read after the run."""
    return summary.stats.failed if summary is not None else len(report.failed)
