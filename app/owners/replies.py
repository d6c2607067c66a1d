"""What ChatSession keeps of a reply: the one being written, and one that ended."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..conversation.exchange import StoredReply
from ..engine.tools.types import ToolCall
from ..engine.types import ReplyStats, ReplyStatus
from ..tool_servers.catalog import ToolCatalog


@dataclass(frozen=True)
class FinishedReply:
    """A reply that ended, as it was stored, in the conversation it was asked in."""

    message_id: int
    conversation_id: int
    text: str
    stats: ReplyStats
    status: ReplyStatus


@dataclass(frozen=True)
class ReplySoFar:
    """The reply being written: where it is stored, the model writing it (its record name, the
    file name) and its text so far, which is ahead of what was last saved."""

    message_id: int
    conversation_id: int
    model: str | None
    text: str


@dataclass
class ReplyInProgress:
    stored: StoredReply
    conversation_id: int
    model: str | None
    prompt_estimate: int  # tokens, until the engine's count comes with the finished reply
    pieces: list[str]
    length: int = 0  # characters so far: the meter reads it at every chunk, without a join
    catalog: ToolCatalog | None = None  # the tools it may call (None: none)
    step: int = 0  # of its turn: 0 answers the user, each later one follows tool results
    calls: list[ToolCall] = field(default_factory=list)

    def add(self, piece: str) -> None:
        self.pieces.append(piece)
        self.length += len(piece)

    @property
    def text(self) -> str:
        return "".join(self.pieces)
