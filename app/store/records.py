"""The plain values the store hands out, and the one exception it raises.

Records are frozen snapshots: the GUI may keep them around, but they never change under it;
after a write it asks the store again.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone

from app.common.text import shorten
from app.engine.types import ReplyStats, ReplyStatus

ROLES = ("system", "user", "assistant")
STATUSES = tuple(status.value for status in ReplyStatus)


class StoreError(Exception):
    """What the user can be told: a database from a newer Hearth, a bad import file, a missing
    conversation. The message is written to be shown as it is."""


class DatabaseDamaged(StoreError):
    """Part of the database file cannot be read (damaged pages, a record that makes no sense).

    The rest may still be readable: the window offers to export what it can and to move the
    file aside, so it is told apart from the other errors."""


@dataclass(frozen=True)
class Conversation:
    """One conversation. Timestamps are ISO-8601 UTC strings (they sort as text).

    updated_at follows the content (messages, system prompt), not renames, so that the list,
    newest first, is ordered by activity. deleted_at is set while it sits in the trash.
    """

    id: int
    title: str
    created_at: str
    updated_at: str
    model: str | None
    system_prompt: str
    deleted_at: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "Conversation":
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class StoredMessage:
    """One message of a conversation's tree.

    parent_id is the message it follows (None for a first message); position is its depth, so
    a branch is numbered from 0. It is version `version` of `versions` (1-based, oldest first):
    its siblings are the other edits of a user message, or the other replies to one.
    params are the sampling parameters the reply was generated with, as stored; stats are what
    the engine measured (None where nothing was: user messages, older records).
    """

    id: int
    conversation_id: int
    parent_id: int | None
    position: int
    version: int
    versions: int
    role: str
    content: str
    model: str | None
    params: dict
    stats: ReplyStats | None
    status: ReplyStatus
    created_at: str
    updated_at: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "StoredMessage":
        """The message in row; a row whose JSON or status makes no sense (a damaged page that
        still reads) is DatabaseDamaged, like a page SQLite itself cannot read."""
        computed = ("params", "stats", "status")
        values = {name: row[name] for name in cls.__dataclass_fields__ if name not in computed}
        try:
            stats = json.loads(row["stats_json"])
            return cls(
                **values, params=json.loads(row["params_json"]), status=ReplyStatus(row["status"]),
                stats=ReplyStats.from_dict(stats) if stats else None,
            )
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            raise DatabaseDamaged(f"Message {row['id']} in the conversation database cannot be read ({shorten(str(exc))}).") from exc


@dataclass(frozen=True)
class DeletedVersion:
    """A version deleted with everything below it: what Undo needs to put it back.

    Its rows are marked with `deleted_at` (the same instant for all of them, so a version
    deleted earlier inside it stays deleted); `leaf_id` is the branch that was shown."""

    message_id: int
    conversation_id: int
    deleted_at: str
    leaf_id: int | None
    messages: int  # how many were hidden: the message and those below it


def utc_now() -> str:
    """Now, in the one timestamp format the database uses (fixed width, so text order is time order)."""
    return format_timestamp(datetime.now(timezone.utc))


def format_timestamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def require_choice(what: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise StoreError(f"{what} must be one of {', '.join(choices)}, not {shorten(repr(value))}.")


