"""Storing one exchange (the user's message, then the reply as it streams) the same way in the
window (ChatSession), on the command line (`hearth chat --conversation`) and in the tests.

The user's message is stored before the reply starts (`ConversationStore.add_message`; an
edit stores a version of it instead, a regeneration nothing). Then `begin_reply`: the history
is read (which has the message), the system prompt kept with the conversation, and the reply
stored as 'streaming' at once; `StoredReply.save_partial` rewrites its text every
PARTIAL_SAVE_MS while it grows (the caller keeps the time: a QTimer in the window, the reading
loop on the command line), so a killed process leaves it as far as it got and the store's
recovery marks it cut off on the next start; `StoredReply.finish` closes it once, with the
engine's statistics, the status they give and the tool calls the reply ended with. The results
of those calls are stored with `ConversationStore.add_tool_result`, and the next reply begins
below them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.sampling import SamplingParams
from ..engine.tools.types import ToolCall
from ..engine.types import ReplyStats, ReplyStatus
from ..store import ConversationStore, StoredMessage
from .history import history

PARTIAL_SAVE_MS = 500


@dataclass
class StoredReply:
    """A reply stored as 'streaming', and the history it answers as the engine reads it."""

    store: ConversationStore
    message_id: int
    messages: list[dict]
    saved_length: int = 0  # characters of the text last saved

    def save_partial(self, text: str) -> None:
        """Save the text so far, unless it has not grown since the last save (a silent model
        costs no writes). Raises StoreError."""
        if len(text) != self.saved_length:
            self.store.update_partial(self.message_id, text)
            self.saved_length = len(text)

    def finish(self, text: str, stats: ReplyStats, status: ReplyStatus | None = None,
               tool_calls: tuple[ToolCall, ...] = ()) -> None:
        """Close the reply with its final text, statistics and tool calls, and the status its
        stop reason gives unless another is given. Raises StoreError."""
        if status is None:
            status = ReplyStatus.after(stats.stop_reason)
        self.store.finish_message(self.message_id, text, stats, status, tool_calls)


def begin_reply(store: ConversationStore, conversation_id: int, system_prompt: str, model: str | None,
                params: SamplingParams, replacing: StoredMessage | None = None) -> StoredReply:
    """Read the history of the branch shown (above `replacing`, a reply answered again), keep
    the system prompt with the conversation (the one the reply is written with), and store the
    reply as 'streaming' with its model's record name and sampling: at the end of the branch
    shown, or as a new version of `replacing`, which then ends it."""
    messages = history(store, conversation_id, system_prompt, replacing.position if replacing is not None else None)
    store.set_system_prompt(conversation_id, system_prompt)
    fields = dict(model=model, params=params.to_dict(), status=ReplyStatus.STREAMING)
    if replacing is not None:
        message_id = store.add_version(replacing.id, "", **fields)
    else:
        message_id = store.add_message(conversation_id, "assistant", "", **fields)
    return StoredReply(store, message_id, messages)
