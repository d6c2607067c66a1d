"""Asking the user before a call runs: the call as the user is shown it (PendingCall), their
answer (Decision), and the tools they always allow (Approvals), remembered against a server's
identity (its command and arguments, or its URL), never its name alone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum

from .types import ListedTool, ServerConfig

# What the model reads back for a call that did not run begins with NOT_RUN, so that a view can
# tell a call refused (by the user, the step limit, its own bad arguments) from a tool that failed.
NOT_RUN = "Not run: "
DENIED_TEXT = NOT_RUN + "the user denied this call."
NOT_ALLOWED_TEXT = NOT_RUN + "this tool is not allowed here."
STOPPED_TEXT = "Stopped: the user stopped this call before it finished."
STOPPED_BEFORE_TEXT = NOT_RUN + "the user stopped the turn before this call ran."


class Decision(Enum):
    ALLOW_ONCE = "allow_once"
    ALWAYS = "always"  # this tool of this server, from now on
    DENY = "deny"


@dataclass(frozen=True)
class PendingCall:
    """A call the model wrote, as the approval card shows it. `server` and `tool` are the
    server's own (untrusted) names; `arguments` the model's, as formatted JSON (or its text as
    written when it is not JSON). `hints` are the tool's annotations, for show only."""

    call_id: str
    server: str
    tool: str
    arguments: str
    read_only: bool | None = None
    destructive: bool | None = None

    @classmethod
    def of(cls, call_id: str, listed: ListedTool, arguments_json: str) -> PendingCall:
        try:
            arguments = json.dumps(json.loads(arguments_json or "{}"), indent=2, ensure_ascii=False)
        except ValueError:
            arguments = arguments_json
        return cls(call_id, listed.server, listed.name, arguments, listed.read_only, listed.destructive)


class Approvals:
    """The tools the user always allows, as (server identity, tool name) pairs; `pairs` is what
    the settings keep."""

    def __init__(self, pairs: frozenset[tuple[str, str]] = frozenset()):
        self._pairs = set(pairs)

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        return frozenset(self._pairs)

    def allows(self, server: ServerConfig, tool: str) -> bool:
        return (server.identity, tool) in self._pairs

    def allow_always(self, server: ServerConfig, tool: str) -> None:
        self._pairs.add((server.identity, tool))
