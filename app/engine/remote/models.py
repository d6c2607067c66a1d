"""Which models a server offers: `GET {base}/models`, read into typed entries.

Servers agree on `{"data": [{"id": ...}, ...]}` and little else; a few say how long a context
their model takes, each in its own field (vLLM's `max_model_len`, llama.cpp's `llama-server`
under `meta.n_ctx_train`, OpenRouter's and LM Studio's `context_length`). Entries that are not
objects with a text id are skipped, not fatal: one odd entry should not hide the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...common.text import printable
from ..types import RemoteModel, ServerConfig
from .errors import bad_response
from .http import RemoteTimeouts, get_json, open_client, where

MAX_MODELS = 10_000  # a server that lists more is not describing models
MAX_ID_LENGTH = 1_000


@dataclass(frozen=True)
class RemoteModelInfo:
    """One model a server lists. `model_id` is the server's text, kept exactly (it is what a
    request must name); `name` is the same made safe to show."""

    model_id: str
    owned_by: str | None = None
    context_length: int | None = None  # when the server says

    @property
    def name(self) -> str:
        return printable(self.model_id, limit=120)

    def to_json(self) -> dict:
        return {"id": self.model_id, "owned_by": self.owned_by, "context_length": self.context_length}

    def source(self, server: ServerConfig) -> RemoteModel:
        return RemoteModel(server, self.model_id)


def list_models(server: ServerConfig, timeouts: RemoteTimeouts = RemoteTimeouts()) -> list[RemoteModelInfo]:
    """The server's models in the order it lists them; raises RemoteError. Blocks: call it off
    the GUI thread."""
    with open_client(server, timeouts) as client:
        return parse_models(get_json(client, server, "models"), where(server))


def parse_models(data, where: str) -> list[RemoteModelInfo]:
    """Read a `/models` answer; raises RemoteError if it is not a list of models at all."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise bad_response(where, 'the model list has no "data" list')
    models = []
    for entry in entries[:MAX_MODELS]:
        if not isinstance(entry, dict):
            continue
        model_id = entry.get("id")
        if not isinstance(model_id, str) or not model_id or len(model_id) > MAX_ID_LENGTH:
            continue
        owner = entry.get("owned_by")
        models.append(RemoteModelInfo(
            model_id, printable(owner, limit=80) if isinstance(owner, str) else None, _context_length(entry)))
    return models


def _context_length(entry: dict) -> int | None:
    meta = entry.get("meta")
    for value in (entry.get("max_model_len"), entry.get("context_length"),
                  meta.get("n_ctx_train") if isinstance(meta, dict) else None):
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 40:
            return value
    return None
