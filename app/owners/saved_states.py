"""Where the window and `hearth chat --conversation` keep conversations' saved KV states.

One folder in the cache location, shared by both (the GUI and a CLI call may use it at once:
`StateCache` replaces files whole), within the disk budget the user set in Settings. The cache
location is the right home: a state is rebuilt by reading the conversation again, so the
system may clear it, and it never holds anything the conversation does not.
"""

from __future__ import annotations

import logging

from ..engine.kv.cache import StateCache
from . import paths
from .settings import Settings

log = logging.getLogger(__name__)

FOLDER_NAME = "kv-state"


def open_state_cache(settings: Settings) -> StateCache | None:
    """The cache, or None (logged) where its folder cannot be made: replies are then only
    slower to resume, which is no reason to stop anything."""
    try:
        return StateCache(paths.cache_dir() / FOLDER_NAME, disk_budget=settings.saved_state_budget)
    except OSError as exc:
        log.warning("conversations' KV states will not be saved: %s", exc)
        return None
