"""What the chat pane shows of one message, and its reply stats in words.

The window builds a MessageView from each stored message; the pane and the parts that write
its footer read them. Kept apart from view.py so that those parts need not import the pane.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...common.text import printable
from ...engine.tools.types import ToolCall
from ...engine.types import ReplyStats, ReplyStatus, StopReason
from ...images.image import ImageRef
from ...store import Source, ToolResult

# A reply with no stop reason (nothing was measured, or an imported record) says how it ended
# by its status; a complete one says nothing.
STATUS_REASONS = {ReplyStatus.CANCELLED: StopReason.CANCELLED, ReplyStatus.ERROR: StopReason.ERROR}


@dataclass(frozen=True)
class MessageView:
    """What the pane shows of one message; the window builds these from stored messages.

    version and versions: which of the message's versions this is (1-based, oldest first) and
    how many there are (edits of a user message, replies to the same message); with more than
    one, its footer offers ‹ › to move between them.

    tool_calls: the calls a reply ended with, shown under its text; tool_result: what a call
    gave, for a message with role 'tool' (shown under the call, never as a message of its own).
    """

    id: int | None
    role: str  # 'user' | 'assistant' | 'system' | 'tool'
    content: str
    stats: ReplyStats | None = None  # None: a user or system message, or nothing was measured
    status: ReplyStatus = ReplyStatus.COMPLETE
    model: str | None = None
    version: int = 1
    versions: int = 1
    tool_calls: tuple[ToolCall, ...] = ()
    tool_result: ToolResult | None = None
    sources: tuple[Source, ...] = ()  # a user message's: the passages of documents its reply read
    images: tuple[ImageRef, ...] = ()  # a user message's, shown before its text


def stats_text(stats: ReplyStats | None, status: ReplyStatus) -> str:
    """One short line about a reply, e.g. "128 tokens · 34.5 tok/s · end of turn"."""
    parts = []
    reason = None
    if stats is not None:
        tokens = stats.completion_tokens
        if tokens is not None:
            parts.append(f"{tokens} token" + ("" if tokens == 1 else "s"))
        elif stats.tokens_per_s:  # measured, but not counted: a server that sends no usage
            parts.append("token count not reported by the server")
        if stats.tokens_per_s:
            parts.append(f"{stats.tokens_per_s:.1f} tok/s")
        if stats.ttft_s:
            parts.append(f"first token {stats.ttft_s:.2f} s")
        reason = stats.stop_reason
    if reason is None:
        reason = STATUS_REASONS.get(status)
    if reason is StopReason.INTERRUPTED and stats is not None and stats.error:
        parts.append(f"{reason.words}: {printable(stats.error, limit=240)}")  # what ended it: the engine's process died
    elif reason is not None:
        parts.append(reason.words)
    return " · ".join(parts)
