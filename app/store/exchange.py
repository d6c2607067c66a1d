"""Conversations to and from files: Markdown to read or share, JSON to back up and re-import.

The JSON format is versioned so that a later Hearth can still read old exports and an old
Hearth refuses new ones clearly. Database ids and positions are left out: they mean nothing in
another database, and list order already gives the positions. Everything is validated before
anything is written, with messages that say where the file is wrong.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from app.engine.types import ReplyStatus, StopReason
from app.store.records import (
    ROLES,
    STATUSES,
    Conversation,
    StoredMessage,
    StoreError,
    format_timestamp,
    require_choice,
)

FORMAT = "hearth.conversation"
VERSION = 1

_REQUIRED = object()


def to_json(conversation: Conversation, messages: list[StoredMessage]) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "conversation": {
            "title": conversation.title,
            "model": conversation.model,
            "system_prompt": conversation.system_prompt,
            "created_at": conversation.created_at,
            "updated_at": conversation.updated_at,
        },
        "messages": [
            {
                "role": m.role,
                "content": m.content,
                "model": m.model,
                "params": m.params,
                "stats": m.stats.to_dict() if m.stats else {},
                "status": m.status.value,
                "created_at": m.created_at,
                "updated_at": m.updated_at,
            }
            for m in messages
        ],
    }


def to_markdown(conversation: Conversation, messages: list[StoredMessage]) -> str:
    """The title as the heading and each message under its role; metadata in small italics."""
    parts = [f"# {conversation.title or 'Untitled conversation'}", f"*{_details(conversation)}*"]
    if conversation.system_prompt:
        parts += ["## System prompt", conversation.system_prompt]
    for message in messages:
        parts.append(f"## {message.role.capitalize()}")
        parts.append(message.content)
        details = _message_details(message)
        if details:
            parts.append(f"*{details}*")
    return "\n\n".join(parts) + "\n"


def _details(conversation: Conversation) -> str:
    details = [f"Created {conversation.created_at[:16].replace('T', ' ')} UTC"]
    if conversation.model:
        details.append(f"model {conversation.model}")
    return " · ".join(details)


def _message_details(message: StoredMessage) -> str:
    details = [message.model] if message.model else []
    stats = message.stats
    if stats is not None:
        if stats.completion_tokens is not None:
            details.append(f"{stats.completion_tokens} tokens")
        if stats.tokens_per_s:
            details.append(f"{stats.tokens_per_s:.1f} tokens/s")
        if stats.ttft_s:
            details.append(f"first token after {stats.ttft_s:.2f} s")
    if stats is not None and stats.stop_reason is StopReason.INTERRUPTED:
        details.append(StopReason.INTERRUPTED.words)
    elif message.status is not ReplyStatus.COMPLETE:
        details.append(message.status.value)
    return " · ".join(details)


def parse(data: dict | str | bytes) -> tuple[dict, list[dict]]:
    """Validate an export (parsed or as JSON text) into (conversation, messages) column values.

    Timestamps are normalised to the database's UTC format (a file may say "...Z" or carry an
    offset). A message saved mid-stream comes in as 'cancelled': nothing will ever finish it.
    """
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise StoreError(f"This is not a conversation export: the JSON is malformed ({exc}).") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StoreError(f"This is not a Hearth conversation export (no \"format\": \"{FORMAT}\").")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoreError("The export has no valid \"version\".")
    if version > VERSION:
        raise StoreError(
            f"The export is format version {version}, from a newer Hearth; this one reads version {VERSION}."
        )

    source = _field(data, "conversation", dict, "the file")
    conversation = {
        "title": _field(source, "title", str, "conversation"),
        "model": _field(source, "model", (str, type(None)), "conversation", None),
        "system_prompt": _field(source, "system_prompt", str, "conversation", ""),
        "created_at": _timestamp(source, "created_at", "conversation"),
        "updated_at": _timestamp(source, "updated_at", "conversation"),
    }
    messages = []
    for index, item in enumerate(_field(data, "messages", list, "the file")):
        where = f"messages[{index}]"
        if not isinstance(item, dict):
            raise StoreError(f"{where} must be an object.")
        role = _field(item, "role", str, where)
        status = _field(item, "status", str, where, "complete")
        require_choice(f"{where}.role", role, ROLES)
        require_choice(f"{where}.status", status, STATUSES)
        messages.append(
            {
                "role": role,
                "content": _field(item, "content", str, where),
                "model": _field(item, "model", (str, type(None)), where, None),
                "params_json": json.dumps(_field(item, "params", dict, where, {})),
                "stats_json": json.dumps(_field(item, "stats", dict, where, {})),
                "status": "cancelled" if status == "streaming" else status,
                "created_at": _timestamp(item, "created_at", where),
                "updated_at": _timestamp(item, "updated_at", where),
            }
        )
    return conversation, messages


def _field(source: dict, name: str, types, where: str, default=_REQUIRED):
    if name not in source:
        if default is _REQUIRED:
            raise StoreError(f"{where} is missing \"{name}\".")
        return default
    value = source[name]
    if not isinstance(value, types):
        raise StoreError(f"{where}.{name} has the wrong type ({type(value).__name__}).")
    return value


def _timestamp(source: dict, name: str, where: str) -> str:
    text = _field(source, name, str, where)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise StoreError(f"{where}.{name} is not an ISO-8601 timestamp: {text!r}.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return format_timestamp(moment)
