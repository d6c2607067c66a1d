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
from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, ReplyStatus
from app.images.image import ImageError, ImageRef

ROLES = ("system", "user", "assistant", "tool")
STATUSES = tuple(status.value for status in ReplyStatus)


class StoreError(Exception):
    """What the user can be told: a database from a newer Hearth, a bad import file, a missing
    conversation. The message is written to be shown as it is."""


class DatabaseDamaged(StoreError):
    """Part of the database file cannot be read (damaged pages, a record that makes no sense).

    The rest may still be readable: the window offers to export what it can and to move the
    file aside, so it is told apart from the other errors."""


class MissingImage(StoreError, ImageError):
    """A stored image whose file is gone or no longer holds its bytes. Both kinds of error: the
    store's callers show it as they show any StoreError, and whatever sends images refuses it
    as it refuses any image that cannot be used. The conversation and the message still open."""


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
    tool_servers: tuple[str, ...] | None = None  # whose tools its model may call; None: never chosen
    collections: tuple[str, ...] | None = None  # the document collections it asks; None: never chosen

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "Conversation":
        chosen = ("tool_servers", "collections")
        fields = {name: row[name] for name in cls.__dataclass_fields__ if name not in chosen}
        keys = row.keys()
        return cls(**fields, tool_servers=_names(row["tool_servers_json"] if "tool_servers_json" in keys else None),
                   collections=_names(row["collections_json"] if "collections_json" in keys else None))


def _names(stored: str | None) -> tuple[str, ...] | None:
    """A JSON list of names as stored; a hand-damaged one reads as never chosen."""
    try:
        names = json.loads(stored) if stored is not None else None
    except ValueError:
        return None
    return tuple(str(name) for name in names) if isinstance(names, list) else None


@dataclass(frozen=True)
class Source:
    """A passage of the user's documents a reply was given to read and cite (as [n], n its place
    in the message's sources): its file's path, its page where the format has pages, its heading
    and its text as it was indexed. Untrusted text: the user's file."""

    path: str
    text: str
    page: int | None = None
    heading: str = ""
    by_tool: bool = False  # found by the model's own search_documents call: in its result, not before the question

    def to_dict(self) -> dict:
        return {"path": self.path, "page": self.page, "heading": self.heading, "text": self.text,
                **({"tool": True} if self.by_tool else {})}

    @classmethod
    def from_dict(cls, data: dict) -> "Source":
        page = data.get("page")
        return cls(str(data["path"]), str(data["text"]), int(page) if page is not None else None,
                   str(data.get("heading") or ""), data.get("tool") is True)


def sources_to_json(sources: tuple[Source, ...]) -> str:
    return json.dumps([source.to_dict() for source in sources], ensure_ascii=False)


def sources_from_json(stored: str) -> tuple[Source, ...]:
    return tuple(Source.from_dict(entry) for entry in json.loads(stored or "[]"))


@dataclass(frozen=True)
class ToolResult:
    """What running one tool call gave: the text the model reads next, as a message with role
    "tool" answering the call `call_id` of tool `name`. `error` says the tool failed or the user
    refused to run it (the text says which): the model is told as plainly as of a result."""

    call_id: str
    name: str
    content: str
    error: bool = False

    def to_openai(self) -> dict:
        """The message as the engine and OpenAI's wire form read it."""
        return {"role": "tool", "tool_call_id": self.call_id, "name": self.name, "content": self.content}


@dataclass(frozen=True)
class StoredMessage:
    """One message of a conversation's tree.

    parent_id is the message it follows (None for a first message); position is its depth, so
    a branch is numbered from 0. It is version `version` of `versions` (1-based, oldest first):
    its siblings are the other edits of a user message, or the other replies to one.
    params are the sampling parameters the reply was generated with, as stored; stats are what
    the engine measured (None where nothing was: user messages, older records).
    tool_calls are the calls an assistant reply ended with, in order; a message with role
    "tool" has its tool_result (whose content is the message's content). images are what a user
    message was sent with, in order: references only, ConversationStore.image reads the bytes.
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
    tool_calls: tuple[ToolCall, ...] = ()
    tool_result: ToolResult | None = None
    sources: tuple[Source, ...] = ()  # a user message's: the passages its reply was given
    images: tuple[ImageRef, ...] = ()  # a user message's, in order

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "StoredMessage":
        """The message in row; a row whose JSON or status makes no sense (a damaged page that
        still reads) is DatabaseDamaged, like a page SQLite itself cannot read."""
        computed = ("params", "stats", "status", "tool_calls", "tool_result", "sources", "images")
        values = {name: row[name] for name in cls.__dataclass_fields__ if name not in computed}
        result = None
        if row["role"] == "tool":
            result = ToolResult(row["tool_call_id"], row["tool_name"], row["content"], bool(row["tool_error"]))
        try:
            stats = json.loads(row["stats_json"])
            return cls(
                **values, params=json.loads(row["params_json"]), status=ReplyStatus(row["status"]),
                stats=ReplyStats.from_dict(stats) if stats else None,
                tool_calls=calls_from_json(row["tool_calls_json"]), tool_result=result,
                sources=sources_from_json(row["sources_json"]) if "sources_json" in row.keys() else (),
                images=refs_from_column(row["images"]) if "images" in row.keys() else (),
            )
        except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as exc:
            raise DatabaseDamaged(f"Message {row['id']} in the conversation database cannot be read ({shorten(str(exc))}).") from exc


@dataclass(frozen=True)
class MessagePage:
    """The newest messages of the branch shown (or those before a position), oldest first, and
    how many older ones there are on it: a conversation may hold a hundred thousand."""

    messages: list[StoredMessage]
    earlier: int


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


def refs_from_column(text: str | None) -> tuple[ImageRef, ...]:
    """A message's images as image_links.IMAGES_COLUMN reads them ("position digest type width
    height" entries, comma-separated, in no set order), in order (raises ValueError when the
    text is not that)."""
    if not text:
        return ()
    entries = sorted((int(position), digest, media_type, int(width), int(height))
                     for position, digest, media_type, width, height in (entry.split(" ") for entry in text.split(",")))
    return tuple(ImageRef(digest, media_type, width, height) for _, digest, media_type, width, height in entries)


def calls_to_json(calls: tuple[ToolCall, ...]) -> str:
    """A reply's calls as stored: their order is their index."""
    return json.dumps([call_record(call) for call in calls], ensure_ascii=False)


def call_record(call: ToolCall) -> dict:
    """One call as the database keeps it, and as a JSON export (version 3) writes it."""
    return {"id": call.id, "name": call.name, "arguments": call.arguments, "problem": call.problem}


def calls_from_json(text: str) -> tuple[ToolCall, ...]:
    """The calls as calls_to_json stored them (raises ValueError, TypeError or KeyError when
    the text is not that)."""
    stored = json.loads(text)
    if not isinstance(stored, list):
        raise TypeError("tool calls are not a list")
    calls = tuple(ToolCall(index, call["id"], call["name"], call["arguments"], call["problem"])
                  for index, call in enumerate(stored))
    for call in calls:
        if not all(isinstance(value, str) for value in (call.id, call.name, call.arguments, call.problem or "")):
            raise TypeError(f"tool call {call.index}'s id, name, arguments or problem is not text")
    return calls


def calls_search_text(calls: tuple[ToolCall, ...]) -> str:
    """What a search reads of a reply's calls: each one's name and arguments, a line each."""
    return "\n".join(f"{call.name}\n{call.arguments}" for call in calls)


def utc_now() -> str:
    """Now, in the one timestamp format the database uses (fixed width, so text order is time order)."""
    return format_timestamp(datetime.now(timezone.utc))


def format_timestamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def unanswered(calls: tuple[ToolCall, ...], result: ToolResult) -> str | None:
    """Why `result` cannot follow a reply that made `calls` (None: it can): a result answers one
    of the calls above it, and names the tool that call named."""
    call = next((call for call in calls if call.id == result.call_id), None)
    if call is None:
        return f"it answers the tool call {shorten(repr(result.call_id))}, which the reply above it did not make"
    if call.name != result.name:
        return (f"it names the tool {shorten(repr(result.name))}, but the call {shorten(repr(call.id))} "
                f"called {shorten(repr(call.name))}")
    return None


def require_choice(what: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise StoreError(f"{what} must be one of {', '.join(choices)}, not {shorten(repr(value))}.")


