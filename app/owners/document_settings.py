"""The documents' settings in the settings file: which embedding model indexes and searches
(the default, or a GGUF the user chose), how many sources a reply is given, whether the model
searches itself (a tool) or each question is searched, and the collections a new conversation
starts with. The collections themselves live in the document index
(documents/index.py), not here: the command line and the window share them."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from PySide6.QtCore import QSettings

from ..documents.limits import MAX_TOP, TOP

log = logging.getLogger(__name__)

EMBEDDING_MODEL = "documents/embedding_model"  # a GGUF's path; empty: the default model
SOURCES = "documents/sources_per_reply"
AS_TOOL = "documents/as_tool"  # true: the model searches with search_documents; false: each question is searched
DEFAULT_CHOICE = "documents/default_collections"  # JSON: the collections a new conversation starts with


class DocumentSettings:
    """The embedding model, the sources per reply and the default collections."""

    def __init__(self, store: QSettings):
        self._store = store

    @property
    def embedding_model(self) -> Path | None:
        """The embedding GGUF chosen, None for the default (all-MiniLM-L6-v2)."""
        stored = str(self._store.value(EMBEDDING_MODEL, "") or "")
        return Path(stored) if stored else None

    @embedding_model.setter
    def embedding_model(self, path: Path | None) -> None:
        self._store.setValue(EMBEDDING_MODEL, str(path) if path is not None else "")

    @property
    def sources_per_reply(self) -> int:
        """How many chunks a reply is given (1 to MAX_TOP; TOP unless changed)."""
        try:
            count = int(self._store.value(SOURCES, TOP))
        except (TypeError, ValueError):
            log.warning("ignoring the stored %s", SOURCES)
            return TOP
        return min(max(count, 1), MAX_TOP)

    @sources_per_reply.setter
    def sources_per_reply(self, count: int) -> None:
        self._store.setValue(SOURCES, min(max(int(count), 1), MAX_TOP))

    @property
    def as_tool(self) -> bool:
        """The model searches the collections itself, with a search_documents tool it may call
        (for models that call tools, as Jan does), rather than each question being searched and
        its sources put before it (the default: every model reads them)."""
        return str(self._store.value(AS_TOOL, "false")).lower() == "true"

    @as_tool.setter
    def as_tool(self, on: bool) -> None:
        self._store.setValue(AS_TOOL, "true" if on else "false")

    @property
    def default_choice(self) -> tuple[str, ...]:
        stored = self._store.value(DEFAULT_CHOICE)
        try:
            names = json.loads(stored) if stored else []
        except (TypeError, ValueError) as exc:
            log.warning("ignoring the stored %s: %s", DEFAULT_CHOICE, exc)
            return ()
        return tuple(str(name) for name in names) if isinstance(names, list) else ()

    @default_choice.setter
    def default_choice(self, names: tuple[str, ...]) -> None:
        self._store.setValue(DEFAULT_CHOICE, json.dumps(list(names)))
