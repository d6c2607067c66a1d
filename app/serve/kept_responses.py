"""Responses kept as conversations in a store of Hearth's (`hearth serve` keeps them in a
database of their own beside the window's: owners/paths.served_responses_path), so a later
request can continue one with `previous_response_id`.

A chain of responses is one stored conversation: a response stores its new input messages
and then its reply (the assistant's text and tool calls) as one more exchange, and its id
names that reply's message ("resp_" and the message's id). Continuing a response that is
not the end of its conversation (it was continued already, or the window shows another
branch) branches the conversation there (ConversationStore.branch_from), as the window's
"Branch from here" does, so no stored exchange is ever rewritten.

The reply is stored as 'streaming' once its first token comes (not before: a request
refused or cut off in the queue leaves nothing behind) and closed with its text and
statistics when it ends, or as cancelled when its client goes away. Responses sent with
`"store": false` are not kept, and get ids that no request can continue.

SQLite connections belong to the thread that opened them, so the store is opened and used on
one thread of its own: the event loop never waits on the disk, and the writes of concurrent
requests happen one after another, in the order they were asked. The database is opened at
the first request that needs it; one that cannot be opened is an error for that request
(saying so, and how to do without), never the server's end.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..conversation.history import history
from ..engine.sampling import SamplingParams
from ..engine.tools.types import ToolCall
from ..engine.types import ReplyStats, ReplyStatus
from ..store import ConversationStore, StoreError, ToolResult
from . import errors
from .errors import ApiError

log = logging.getLogger(__name__)

STORED_PREFIX = "resp_"
UNSTORED_PREFIX = "resp_x"  # never followed by digits alone, so never taken for a stored one


def unstored_id() -> str:
    return UNSTORED_PREFIX + secrets.token_hex(12)


@dataclass(frozen=True)
class Continued:
    """A stored response being continued: the conversation as the model reads it, and where
    the new exchange goes (after `message_id`, the end of `conversation_id`'s branch shown)."""

    messages: list[dict]
    conversation_id: int
    message_id: int


@dataclass(frozen=True)
class Exchange:
    """What one kept response adds: its new input messages, then its reply."""

    continues: Continued | None
    messages: list[dict]
    instructions: str
    model: str
    params: SamplingParams


class KeptResponses:
    """The responses of one server, in the database at `path` (None: a server that keeps
    none, which refuses `previous_response_id` and does not store)."""

    def __init__(self, path: Path | None):
        self._path = path
        self._store: ConversationStore | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="serve-store")

    @property
    def keeping(self) -> bool:
        return self._path is not None

    def close(self) -> None:
        """Finish the writes asked for, then close the database."""
        self._thread.submit(self._close).result()
        self._thread.shutdown()

    async def continued(self, response_id: str | None) -> Continued | None:
        """The stored response `response_id` to continue (404 for one this server does not
        have), or with None nothing; either way the database is opened, so that one that
        cannot be is said before the model runs."""
        message_id = _message_id(response_id) if response_id is not None else None
        if response_id is not None and (message_id is None or not self.keeping):
            raise not_found(response_id)
        if not self.keeping:
            return None
        return await self._run(lambda store: self._continued(store, response_id, message_id)
                               if message_id is not None else None)

    async def begin(self, exchange: Exchange) -> int:
        """Store the exchange's input and its reply as 'streaming'; the reply's message id."""
        return await self._run(lambda store: self._begin(store, exchange))

    def finish(self, message_id: int, text: str, calls: list[ToolCall], stats: ReplyStats) -> Future:
        """Close a reply begun with `begin`, with its text, tool calls and statistics; done
        when it is written. Need not be waited for (a stream whose client left still closes
        its reply); a failure is logged, not raised: the client has its reply either way."""
        return self._thread.submit(self._finish, message_id, text, calls, stats)

    # On the store's thread:

    async def _run(self, work: Callable[[ConversationStore], object]):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, lambda: work(self._opened()))

    def _opened(self) -> ConversationStore:
        if self._store is None:
            try:
                # recover=False: a 'streaming' reply found there may be the window's, still being written.
                self._store = ConversationStore(self._path, recover=False)
            except StoreError as exc:
                raise unavailable_store(str(exc)) from None
        return self._store

    def _continued(self, store: ConversationStore, response_id: str, message_id: int) -> Continued:
        try:
            reply = store.message(message_id)
            if reply.role != "assistant":
                raise not_found(response_id)
            conversation_id = reply.conversation_id
            leaf = store.leaf_message(conversation_id)
            if leaf is None or leaf.id != message_id:
                conversation_id = store.branch_from(message_id)
                message_id = store.leaf_message(conversation_id).id
            return Continued(history(store, conversation_id, ""), conversation_id, message_id)
        except StoreError:  # no such message, a deleted version, a conversation deleted since
            raise not_found(response_id) from None

    def _begin(self, store: ConversationStore, exchange: Exchange) -> int:
        try:
            continues = exchange.continues
            if continues is None:
                conversation_id = store.create_conversation(model=exchange.model, system_prompt=exchange.instructions)
            else:
                conversation_id = continues.conversation_id
                leaf = store.leaf_message(conversation_id)
                if leaf is None or leaf.id != continues.message_id:  # continued by another request meanwhile
                    conversation_id = store.branch_from(continues.message_id)
                if exchange.instructions:  # what the window continues it with: the latest given
                    store.set_system_prompt(conversation_id, exchange.instructions)
            for message in exchange.messages:
                _add(store, conversation_id, message)
            return store.add_message(conversation_id, "assistant", "", model=exchange.model,
                                     params=exchange.params.to_dict(), status=ReplyStatus.STREAMING)
        except StoreError as exc:
            raise unavailable_store(str(exc)) from None

    def _finish(self, message_id: int, text: str, calls: list[ToolCall], stats: ReplyStats) -> None:
        try:
            self._opened().finish_message(message_id, text, stats, ReplyStatus.after(stats.stop_reason), tuple(calls))
        except (StoreError, ApiError) as exc:
            log.warning("a served response could not be stored: %s", exc)

    def _close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _add(store: ConversationStore, conversation_id: int, message: dict) -> None:
    """One input message, stored as the window stores its own: a user's, with its images (so a
    response continued later is read with them); an assistant's, with the tool calls it made (a
    reply's calls come with finish_message); a tool's result. System messages are not kept (see
    responses.py)."""
    role, content = message["role"], message["content"]
    if role == "user":
        store.add_message(conversation_id, "user", content, images=message.get("images", ()))
    elif role == "tool":
        store.add_tool_result(conversation_id, ToolResult(message["tool_call_id"], message["name"], content))
    elif role == "assistant":
        calls = tuple(ToolCall(index, call["id"], call["function"]["name"], call["function"]["arguments"])
                      for index, call in enumerate(message.get("tool_calls", ())))
        reply = store.add_message(conversation_id, "assistant", "", status=ReplyStatus.STREAMING)
        store.finish_message(reply, content, None, ReplyStatus.COMPLETE, calls)


def response_id(message_id: int) -> str:
    return f"{STORED_PREFIX}{message_id}"


def _message_id(response_id: str) -> int | None:
    digits = response_id.removeprefix(STORED_PREFIX)
    if not response_id.startswith(STORED_PREFIX) or not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        return None
    return int(digits)


def not_found(response_id: str) -> ApiError:
    return ApiError(404, f"There is no response {response_id[:80]!r} kept here: it was not made by this "
                         "server, was sent with store: false, or its conversation was deleted.",
                    param="previous_response_id", code="previous_response_not_found")


def unavailable_store(why: str) -> ApiError:
    return errors.server_error(f"Hearth cannot keep or continue responses: its conversation database cannot be "
                               f"used ({why}). Send \"store\": false (and no previous_response_id) to be answered "
                               "without it.")
