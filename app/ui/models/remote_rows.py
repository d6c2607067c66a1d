"""The model list's rows for remote servers: one per model a server lists, or one for a server
that could not be listed (it is off, refuses the key, is not a server…), saying why.

Kept beside `table.py`, which shows both kinds of row: this file says what a remote row
shows in each column, how it sorts and what it tells a screen reader. A server's words (model
ids, its name, its errors) are foreign text, shown through `printable`/`plain_tooltip`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...common.text import printable
from ...engine.types import RemoteModel, ServerConfig
from ...owners.remote_servers import ServerListing
from ..widgets.tooltips import plain_tooltip

if TYPE_CHECKING:
    from ...engine.remote.models import RemoteModelInfo

NOT_GIVEN = "—"  # a figure a server does not give (its size on disk, its parameters)
NO_MODELS = "The server lists no models."


@dataclass(frozen=True)
class RemoteEntry:
    """One remote row: a server's model, or (model None) the server itself, with why it can't
    be used."""

    server: ServerConfig  # as saved: without its key
    model: RemoteModelInfo | None
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.model is not None

    @property
    def name(self) -> str:
        return self.model.name if self.model is not None else self.server_name

    @property
    def server_name(self) -> str:
        return printable(self.server.name)

    @property
    def location(self) -> str:
        """The second line under the name: where the model runs."""
        return f"remote · {self.server_name}"

    @property
    def key(self) -> str:
        """The row's identity across listings: its model's settings key, or the server's."""
        if self.model is None:
            return f"server:{self.server.base_url}"
        return RemoteModel(self.server, self.model.model_id).settings_key

    @property
    def address(self) -> str:
        return printable(self.server.base_url, limit=None)


def remote_rows(listings: list[ServerListing]) -> list[RemoteEntry]:
    """Each listing's rows: its models, or one row saying why there are none."""
    rows: list[RemoteEntry] = []
    for listing in listings:
        if listing.error is not None or not listing.models:
            rows.append(RemoteEntry(listing.server, None, listing.error or NO_MODELS))
        else:
            rows += [RemoteEntry(listing.server, model) for model in listing.models]
    return rows


def context_text(entry: RemoteEntry) -> str:
    length = entry.model.context_length if entry.model is not None else None
    return f"{length:,}" if length else NOT_GIVEN


def summary(entry: RemoteEntry) -> str:
    """The selected row's line under the list."""
    length = entry.model.context_length if entry.model is not None else None
    context = f"{length:,} tokens of context" if length else "context length not given by the server"
    return f"Remote model on {entry.server_name} · {context} · the server's own chat template"


def tooltip(entry: RemoteEntry) -> str:
    if entry.model is None:
        return plain_tooltip(f"{entry.address}\n\n{entry.error}")
    return plain_tooltip(f"{printable(entry.model.model_id, limit=None)}\non {entry.server_name} ({entry.address})")


def accessible_text(entry: RemoteEntry) -> str:
    """What a screen reader says for the row's name cell: the name, that it is remote and where,
    and what sighted users see as ⚠."""
    if entry.model is None:
        return f"Server {entry.server_name}, can't be used"
    return f"{entry.name}, remote model on {entry.server_name}"
