"""Logging to a file in the user's log folder (owners/paths.py says where); nothing here assumes a
console exists."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

LOG_NAME = "hearth.log"


def setup_logging(folder: Path, level: int = logging.INFO) -> None:
    """Send all logging (llama.cpp's included) to a rotating file. Idempotent."""
    root = logging.getLogger()
    if any(getattr(h, "_hearth", False) for h in root.handlers):
        return
    handler = logging.handlers.RotatingFileHandler(
        folder / LOG_NAME, maxBytes=2_000_000, backupCount=3, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._hearth = True
    root.addHandler(handler)
    root.setLevel(level)
