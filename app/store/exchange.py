"""Conversations to and from JSON files, to back up and re-import (markdown.py writes them to read).

The JSON format is versioned so that a later Hearth can still read old exports and an old
Hearth refuses new ones clearly. Version 2 carries the whole tree: every version of every
message, each naming its parent by its index in the list ("parent", parents first), and the
conversation's "current" message, the end of the branch shown. A version-1 file is one branch,
in order. Version 3 adds tools: a reply's "tool_calls" ([{"id", "name", "arguments",
"problem"}], arguments as JSON text), and messages with role "tool", a call's result, with
"tool_call_id", "tool_name" and "tool_error"; each result answers a call of the reply above it.
Version 4 adds a question's sources, the passages of the user's documents its reply read: a user
message's "sources" ([{"path", "page", "heading", "text", "tool"}]), numbered by their place;
"tool": true where the model found it with its search_documents tool.
Version 5 adds images: each image once, in a table at the top ("images"), and a user message's
"images", the digests of its images in order (exported_images.py).
Database ids and positions are left out: they mean nothing in another database.
Everything is validated before anything is written, with messages that say where the file is
wrong.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path

from app.engine.tools.types import ToolCall
from app.engine.types import MAX_STORED_INT, ReplyStats
from app.images.image import Image
from app.store import exported_images
from app.store.records import (
    ROLES,
    STATUSES,
    Conversation,
    Source,
    StoredMessage,
    StoreError,
    ToolResult,
    call_record,
    calls_search_text,
    calls_to_json,
    format_timestamp,
    require_choice,
    shorten,
    sources_to_json,
    unanswered,
)

FORMAT = "hearth.conversation"
VERSION = 5
TOOLS_VERSION = 3  # the first version with tool calls and results (role "tool")
SOURCES_VERSION = 4  # the first version with a question's sources
IMAGES_VERSION = 5  # the first version with images
MAX_SOURCES = 1_000  # a question's sources: far above the 20 a reply is given
# The text of an export, all but its images' data: far above any real conversation (32 MB is
# some eight million tokens of text), low enough that reading, checking and storing one takes
# seconds and a few hundred MB at most. JSON's small values cost some twenty times their bytes
# once read; an image's data is one string, which costs its size.
MAX_IMPORT_TEXT_BYTES = 32 * 2**20
# A whole export file, images included: a conversation sent a few dozen photos.
MAX_IMPORT_BYTES = 160 * 2**20
# What counts as an image's data when the text is measured: a long run of base64 in quotes.
_LONG_BASE64 = '"[A-Za-z0-9+/=]{4096,}"'
_IMAGE_DATA = {str: re.compile(_LONG_BASE64), bytes: re.compile(_LONG_BASE64.encode())}
MAX_IMPORT_MESSAGES = 100_000
# A reply's calls, and the length of a call's id or a tool's name: far above what a model makes.
MAX_TOOL_CALLS = 1_000
MAX_TOOL_NAME_CHARS = 1_000

_REQUIRED = object()


def to_json(conversation: Conversation, tree: list[StoredMessage], leaf_id: int | None,
            images: list[Image]) -> dict:
    """The conversation with every version of its messages (tree: parents before children) and
    the images they hold (each once)."""
    index = {message.id: number for number, message in enumerate(tree)}
    return {
        "format": FORMAT,
        "version": VERSION,
        "conversation": {
            "title": conversation.title,
            "model": conversation.model,
            "system_prompt": conversation.system_prompt,
            "created_at": conversation.created_at,
            "updated_at": conversation.updated_at,
            "current": index.get(leaf_id),
        },
        "images": exported_images.table(images),
        "messages": [
            {
                "parent": index.get(m.parent_id),
                "role": m.role,
                "content": m.content,
                "model": m.model,
                "params": m.params,
                "stats": m.stats.to_dict() if m.stats else {},
                "status": m.status.value,
                "created_at": m.created_at,
                "updated_at": m.updated_at,
                **_tool_fields(m),
                **({"sources": [source.to_dict() for source in m.sources]} if m.sources else {}),
                **({"images": [ref.digest for ref in m.images]} if m.images else {}),
            }
            for m in tree
        ],
    }


def _tool_fields(message: StoredMessage) -> dict:
    """A reply's calls, or what a result answers; nothing for other messages."""
    if message.tool_result is not None:
        result = message.tool_result
        return {"tool_call_id": result.call_id, "tool_name": result.name, "tool_error": result.error}
    if message.tool_calls:
        return {"tool_calls": [call_record(call) for call in message.tool_calls]}
    return {}


def read_export(path: Path) -> bytes:
    """The bytes of an export file, refused (naming the file) when it cannot be read or is larger
    than any conversation export: only MAX_IMPORT_BYTES + 1 bytes are ever read, so a huge file
    or an endless device cannot fill the memory."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_IMPORT_BYTES + 1)
    except OSError as exc:
        raise StoreError(f"Can't read {shorten(path.name)}: {exc.strerror or exc}.") from exc
    if len(data) > MAX_IMPORT_BYTES:
        raise StoreError(
            f"{shorten(path.name)} is larger than {MAX_IMPORT_BYTES // 2**20} MB, more than a conversation "
            "export holds; it was not imported.")
    return data


def parse(data: dict | str | bytes) -> tuple[dict, list[dict], dict[str, Image]]:
    """Validate an export (parsed or as JSON text) into (conversation, messages) column values
    and the images the messages name (by digest; each message's "images" are digests).

    Timestamps are normalised to the database's UTC format (a file may say "...Z" or carry an
    offset). A message saved mid-stream comes in as 'cancelled': nothing will ever finish it.
    Statistics are read the way the store reads its own, and stored as this version writes
    them, so what is imported can always be read back. Every problem is a StoreError that says
    where the file is wrong, in a line or two.
    """
    if isinstance(data, (str, bytes)):
        data = _decode(data)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StoreError(f"This is not a Hearth conversation export (no \"format\": \"{FORMAT}\").")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoreError("The export has no valid \"version\".")
    if version > VERSION:
        raise StoreError(
            f"The export is format version {shorten(str(version))}, from a newer Hearth; this one reads "
            f"version {VERSION}."
        )

    source = _field(data, "conversation", dict, "the file")
    items = _field(data, "messages", list, "the file")
    images = exported_images.read_table(data.get("images", [])) if version >= IMAGES_VERSION else {}
    if len(items) > MAX_IMPORT_MESSAGES:
        raise StoreError(
            f"The export holds {len(items):,} messages; Hearth imports conversations of up to "
            f"{MAX_IMPORT_MESSAGES:,} messages.")
    tree = version >= 2
    last = len(items) - 1 if items else None
    conversation = {
        "title": _text(source, "title", "conversation"),
        "model": _text(source, "model", "conversation", None, nullable=True),
        "system_prompt": _text(source, "system_prompt", "conversation", ""),
        "created_at": _timestamp(source, "created_at", "conversation"),
        "updated_at": _timestamp(source, "updated_at", "conversation"),
        "current": _index(source, "current", "conversation", len(items)) if tree else last,
    }
    messages = []
    # By message: the calls that a result below it may answer (a result passes on those of the
    # reply above it, so that the results of one reply's calls follow one another).
    answerable: list[tuple[ToolCall, ...]] = []
    for index, item in enumerate(items):
        where = f"messages[{index}]"
        message, calls, result = _message(item, where, version, images)
        # A version-1 file is one branch: each message follows the one before it.
        parent = message["parent"] = _index(item, "parent", where, index) if tree else (index - 1 if index else None)
        if result is not None:
            calls = () if parent is None else answerable[parent]
            problem = unanswered(calls, result)
            if problem is not None:
                raise StoreError(f"{where} is a tool result that cannot be imported: {problem}.")
        answerable.append(calls)
        messages.append(message)
    return conversation, messages, images


def _index(source: dict, name: str, where: str, below: int) -> int | None:
    """A reference to a message by its index in the file's list: null, or below `below` (a
    parent comes before its children, so the tree has no cycles)."""
    value = _field(source, name, (int, type(None)), where, None)
    if value is not None and (isinstance(value, bool) or not 0 <= value < below):
        raise StoreError(f"{where}.{name} must be the index of an earlier message, not {shorten(repr(value))}.")
    return value


def _decode(text: str | bytes) -> object:
    """The JSON, refused before it is read when its text, all but its images' data, is longer
    than MAX_IMPORT_TEXT_BYTES."""
    runs = _IMAGE_DATA[bytes if isinstance(text, bytes) else str].finditer(text)
    if len(text) - sum(run.end() - run.start() for run in runs) > MAX_IMPORT_TEXT_BYTES:
        raise StoreError(f"The export holds more than {MAX_IMPORT_TEXT_BYTES // 2**20} MB of text (its images aside), "
                         "more than a conversation export holds; it was not imported.")
    try:
        return json.loads(text)
    except RecursionError:
        raise StoreError("This is not a conversation export: its JSON is nested too deeply.") from None
    except ValueError as exc:  # bad JSON, bad UTF-8, a number too long to read
        raise StoreError(f"This is not a conversation export: the JSON is malformed ({shorten(str(exc))}).") from None


def _message(item: object, where: str, version: int,
             images: dict[str, Image]) -> tuple[dict, tuple[ToolCall, ...], ToolResult | None]:
    """The message's column values (and the digests of its images), the calls it makes and the
    result it holds."""
    if not isinstance(item, dict):
        raise StoreError(f"{where} must be an object.")
    role = _text(item, "role", where)
    status = _text(item, "status", where, "complete")
    require_choice(f"{where}.role", role, ROLES if version >= TOOLS_VERSION else tuple(r for r in ROLES if r != "tool"))
    require_choice(f"{where}.status", status, STATUSES)
    content = _text(item, "content", where)
    calls, result = _tools(item, where, role, content) if version >= TOOLS_VERSION else ((), None)
    return {
        "role": role,
        "content": content,
        "model": _text(item, "model", where, None, nullable=True),
        "params_json": json.dumps(_params(item, where)),
        "stats_json": json.dumps(_stats(item, where)),
        "status": "cancelled" if status == "streaming" else status,
        "created_at": _timestamp(item, "created_at", where),
        "updated_at": _timestamp(item, "updated_at", where),
        "tool_calls_json": calls_to_json(calls),
        "tool_calls_text": calls_search_text(calls),
        "tool_call_id": result.call_id if result else None,
        "tool_name": result.name if result else None,
        "tool_error": result.error if result else False,
        "sources_json": sources_to_json(_sources(item, where, role) if version >= SOURCES_VERSION else ()),
        "images": exported_images.message_images(item, where, role, images) if version >= IMAGES_VERSION else (),
    }, calls, result


def _sources(item: dict, where: str, role: str) -> tuple[Source, ...]:
    """A question's sources, each checked: text where text is meant, a page from 1, or none."""
    sources = _field(item, "sources", list, where, [])
    if sources and role != "user":
        raise StoreError(f"{where} has sources, which only a user message is given.")
    if len(sources) > MAX_SOURCES:
        raise StoreError(f"{where} has {len(sources):,} sources; Hearth imports up to {MAX_SOURCES:,} a message.")
    read = []
    for index, source in enumerate(sources):
        at = f"{where}.sources[{index}]"
        if not isinstance(source, dict):
            raise StoreError(f"{at} must be an object.")
        page = _field(source, "page", (int, type(None)), at, None)
        if isinstance(page, bool) or (page is not None and not 1 <= page <= MAX_STORED_INT):
            raise StoreError(f"{at}.page must be a page number from 1, or null.")
        read.append(Source(_text(source, "path", at), _text(source, "text", at), page, _text(source, "heading", at, ""),
                           _field(source, "tool", bool, at, False)))
    return tuple(read)


def _tools(item: dict, where: str, role: str, content: str) -> tuple[tuple[ToolCall, ...], ToolResult | None]:
    """A reply's calls, or a tool message's result; either on another message is refused."""
    calls = _field(item, "tool_calls", list, where, [])
    if calls and role != "assistant":
        raise StoreError(f"{where} has tool calls, which only an assistant message makes.")
    if len(calls) > MAX_TOOL_CALLS:
        raise StoreError(f"{where} makes {len(calls):,} tool calls; Hearth imports up to {MAX_TOOL_CALLS:,} a message.")
    answers = [name for name in ("tool_call_id", "tool_name", "tool_error") if name in item]
    if role != "tool":
        if answers:
            raise StoreError(f"{where}.{answers[0]} belongs to a tool result, and this is a {shorten(role)} message.")
        return tuple(_call(call, f"{where}.tool_calls[{index}]", index) for index, call in enumerate(calls)), None
    return (), ToolResult(_name(item, "tool_call_id", where), _name(item, "tool_name", where), content,
                          _field(item, "tool_error", bool, where, False))


def _call(item: object, where: str, index: int) -> ToolCall:
    if not isinstance(item, dict):
        raise StoreError(f"{where} must be an object.")
    return ToolCall(index, _name(item, "id", where), _name(item, "name", where), _text(item, "arguments", where),
                    _text(item, "problem", where, None, nullable=True))


def _name(source: dict, name: str, where: str) -> str:
    """A call's id or a tool's name: text, neither empty nor longer than any a model makes."""
    text = _text(source, name, where)
    if not 0 < len(text) <= MAX_TOOL_NAME_CHARS:
        raise StoreError(f"{where}.{name} must be 1 to {MAX_TOOL_NAME_CHARS:,} characters, not {len(text):,}.")
    return text


def _field(source: dict, name: str, types, where: str, default=_REQUIRED):
    if name not in source:
        if default is _REQUIRED:
            raise StoreError(f"{where} is missing \"{name}\".")
        return default
    value = source[name]
    if not isinstance(value, types):
        raise StoreError(f"{where}.{name} has the wrong type ({type(value).__name__}).")
    return value


def _text(source: dict, name: str, where: str, default=_REQUIRED, nullable: bool = False) -> str | None:
    """A text field; null only where nullable (a model name)."""
    value = _field(source, name, (str, type(None)) if nullable else str, where, default)
    if value is not None:
        _require_unicode(value, f"{where}.{name}")
    return value


def _require_unicode(text: str, where: str) -> None:
    """JSON can spell a lone surrogate (\ud800), which Python decodes but no UTF-8 file or
    database can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StoreError(f"{where} holds text that is not valid Unicode (a lone surrogate).") from None


def _params(item: dict, where: str) -> dict:
    """Sampling parameters: names with a number, text, true/false or null, or a list or object
    of those (stop strings, logit_bias). Nothing nested deeper, so reading them back is cheap."""
    params = _field(item, "params", dict, where, {})
    for name, value in params.items():
        _require_unicode(name, f"{where}.params")
        what = f"{where}.params.{shorten(name)}"
        if isinstance(value, dict):
            for key in value:
                _require_unicode(key, what)
        for element in value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]:
            if isinstance(element, str):
                _require_unicode(element, what)
            elif isinstance(element, float) and not math.isfinite(element):
                raise StoreError(f"{what} is not a finite number.")
            elif not isinstance(element, (int, float, bool, type(None))):
                raise StoreError(f"{what} must be a number, text, or a list or object of them.")
    return params


def _stats(item: dict, where: str) -> dict:
    """The statistics as ReplyStats reads them (unknown keys and wrong types dropped), or {}.
    A number that is not finite, text that is not Unicode and a stop reason that is not a word
    are refused, as everywhere in a file: they say the file was made by hand, or damaged."""
    stats = _field(item, "stats", dict, where, {})
    for name, value in stats.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise StoreError(f"{where}.stats.{shorten(name)} is not a finite number.")
        if isinstance(value, int) and abs(value) > MAX_STORED_INT:
            raise StoreError(f"{where}.stats.{shorten(name)} is out of range.")
        if isinstance(value, str):
            _require_unicode(value, f"{where}.stats.{shorten(name)}")
    if not isinstance(stats.get("stop_reason", ""), str):
        raise StoreError(f"{where}.stats are not valid reply statistics.")
    return ReplyStats.from_dict(stats).to_dict() if stats else {}


def _timestamp(source: dict, name: str, where: str) -> str:
    text = _text(source, name, where)
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return format_timestamp(moment)
    except ValueError:
        raise StoreError(f"{where}.{name} is not an ISO-8601 timestamp: {shorten(repr(text))}.") from None
    except OverflowError:  # year 9999 with a negative offset is past the end of time in UTC
        raise StoreError(f"{where}.{name} is out of range: {shorten(repr(text))}.") from None
