"""What a reply is given to read, and what it did not see: both from the branch shown.

Qt-free, so that the window's ChatSession and `hearth chat --conversation` build a reply's
history the same way, and the window can mark where the model's view of a long conversation
began.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.types import ReplyStatus
from ..store import ConversationStore, StoredMessage
from .context_use import ContextUse, estimate_prompt, measured
from .sources import with_sources

# The newest messages a reply is given as history. Far more than any context window holds (the
# engine drops the oldest that do not fit), few enough that a conversation of a hundred
# thousand messages does not make every Send read all of them.
HISTORY_MESSAGES = 5_000
# The newest messages searched for the last reply whose tokens the engine counted (the context
# meter and the boundary start from it): replies that failed to start or were imported were
# not counted.
MEASURED_LOOKBACK = 20


@dataclass(frozen=True)
class ContextBoundary:
    """Where the model's view of the branch began in its last counted reply: it did not see
    `message_id` or anything above it (`unseen` messages in all)."""

    message_id: int
    unseen: int


def history(store: ConversationStore, conversation_id: int | None, system_prompt: str,
            before: int | None = None) -> list[dict]:
    """The branch shown as the engine reads it: the system prompt, then the newest
    HISTORY_MESSAGES messages (before position `before`, when a reply is asked again in place
    of the one there). Replies that failed before saying anything are left out. A question
    asked of the user's documents reads with its sources before it (sources.py). Tool calls and
    results are in OpenAI's form, which templates and servers read: a reply's "tool_calls"
    (arguments as JSON text), and a "tool" message for each result. A question sent with images
    has them ("images": their bytes, read and checked here). An image whose file is gone or
    damaged is MissingImage (an ImageError and a StoreError) naming it, raised rather than left
    out: a reply to a prompt other than the one the user sees would answer a question never asked."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt.strip() else []
    if conversation_id is None:
        return messages
    page = store.recent_messages(conversation_id, HISTORY_MESSAGES, before)
    return messages + [_as_read(store, message) for message in page.messages if _read_by_model(message)]


def _as_read(store: ConversationStore, message: StoredMessage) -> dict:
    if message.tool_result is not None:
        return message.tool_result.to_openai()
    read = {"role": message.role, "content": with_sources(message.content, message.sources)}
    if message.images:
        read["images"] = tuple(store.image(ref) for ref in message.images)
    if message.tool_calls:
        read["tool_calls"] = [call.to_openai() for call in message.tool_calls]
    return read


def last_counted_reply(store: ConversationStore, conversation_id: int) -> StoredMessage | None:
    """The newest reply on the branch shown whose prompt the engine counted."""
    recent = store.recent_messages(conversation_id, MEASURED_LOOKBACK).messages
    return next((message for message in reversed(recent)
                 if message.role == "assistant" and measured(message.stats) is not None), None)


def context_boundary(store: ConversationStore, conversation_id: int) -> ContextBoundary | None:
    """Where the last counted reply's view of the branch began, or None when it saw it all:
    the messages before its history (HISTORY_MESSAGES) and the oldest turns the engine
    dropped to fit its context window (ReplyStats.dropped_messages)."""
    reply = last_counted_reply(store, conversation_id)
    if reply is None:
        return None
    first_read = max(0, reply.position - HISTORY_MESSAGES)
    dropped = reply.stats.dropped_messages
    if not dropped:
        if not first_read:
            return None
        (last_unread,) = store.recent_messages(conversation_id, 1, before=first_read).messages
        return ContextBoundary(last_unread.id, first_read)
    page = store.recent_messages(conversation_id, reply.position - first_read, before=reply.position)
    read = [message for message in page.messages if _read_by_model(message)]
    if len(read) < dropped:  # the branch was changed above the reply since (a deleted version)
        return None
    last_unread = read[dropped - 1]
    return ContextBoundary(last_unread.id, last_unread.position + 1)


def _read_by_model(message: StoredMessage) -> bool:
    """Whether a reply reads the message: a system message in the branch (an imported one) is
    not, nor a reply that failed before it said or called anything."""
    said = message.content or message.tool_calls
    return message.role in ("user", "assistant", "tool") and not (message.status is ReplyStatus.ERROR and not said)


def last_measured(store: ConversationStore, conversation_id: int) -> int | None:
    """The context the engine counted after the branch's last reply it measured (a reply that
    failed to start, or an imported one, was not)."""
    reply = last_counted_reply(store, conversation_id)
    return measured(reply.stats) if reply is not None else None


def settled_use(store: ConversationStore, conversation_id: int | None, history: list[dict]) -> ContextUse:
    """How full the context is between replies: the engine's count after the last reply, or an
    estimate of `history` (the branch as the engine reads it) when none was counted."""
    if conversation_id is None:
        return ContextUse(0, estimated=False)
    tokens = last_measured(store, conversation_id)
    if tokens is not None:
        return ContextUse(tokens, estimated=False)
    said = [message for message in history if message["role"] != "system"]
    return ContextUse(estimate_prompt(said, None), estimated=bool(said))
