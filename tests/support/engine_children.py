"""Hearth's engine processes (engine/process) as /proc shows them: the tests' way to find the
child a bridge or backend started, kill it as a crash would, and see what it maps."""

from __future__ import annotations

import os
from pathlib import Path

from app.engine.process import CHILD_FLAG


def our_engine_children(parent: int | None = None) -> list[int]:
    """The engine children of `parent` (default: this process; never another test worker's), from /proc."""
    parent = os.getpid() if parent is None else parent
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent \
                    and CHILD_FLAG.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def maps(pid: int | str, path: Path) -> bool:
    """Whether process `pid` ("self": this one) has `path` mapped, as llama.cpp maps a model's file
    while it holds it."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as lines:
            return any(line.rstrip("\n").endswith(str(path)) for line in lines)
    except OSError:  # the process is gone
        return False
