"""The typed values of tool servers (MCP): what a server is (ServerConfig), how it is doing
(ServerStatus), what it offers (ListedTool) and what a call gave (ToolOutcome). The rest of
Hearth sees servers only through these; the `mcp` SDK's own types stay inside this room."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum

from .limits import CALL_TIMEOUT_S


class Transport(Enum):
    STDIO = "stdio"  # a command Hearth starts, spoken to over its stdin and stdout
    HTTP = "http"  # a Streamable HTTP address


@dataclass(frozen=True)
class ServerConfig:
    """One configured server. `env` and `headers` hold the values themselves (secrets included):
    where they are kept (the keyring, a mcp.json the user gave) is the caller's business.
    `enabled`: an imported server waits for the user to switch it on."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    enabled: bool = True
    call_timeout_s: float = CALL_TIMEOUT_S

    @property
    def identity(self) -> str:
        """What "Always allow this tool" is remembered against: the program it is (the command,
        its arguments, its working folder and environment; or the URL and the headers sent to
        it). A server renamed keeps its approvals; one that runs something else does not, even
        under the same command (`node index.js` in another folder is another program). The
        environment and headers enter as a digest: they hold secrets, and this is kept in the
        settings file."""
        if self.transport is Transport.STDIO:
            program, given = [self.command, *self.args, self.cwd or ""], self.env
        else:
            program, given = [self.url], self.headers
        digest = hashlib.sha256(json.dumps(sorted(given), ensure_ascii=False).encode()).hexdigest()[:16]
        return f"{self.transport.value}:{json.dumps(program, ensure_ascii=False)}#{digest}"


class ServerState(Enum):
    OFF = "off"  # not enabled
    IDLE = "idle"  # enabled, not started yet (servers start on first use)
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"  # `reason` says why; retried with back-off while it is in use


@dataclass(frozen=True)
class ListedTool:
    """A tool as its server lists it. Every text in it is the server's: untrusted, shown only
    through common/text.py and escaped. `read_only`/`destructive` are the server's own hints
    (annotations): shown to the user, never trusted to skip approval."""

    server: str
    name: str
    description: str = ""
    input_schema: dict = field(default_factory=lambda: {"type": "object", "properties": {}})
    title: str = ""
    read_only: bool | None = None
    destructive: bool | None = None


@dataclass(frozen=True)
class ServerStatus:
    name: str
    state: ServerState
    tools: tuple[ListedTool, ...] = ()
    reason: str = ""  # why it failed, or why some of its tools are not offered
    skipped: tuple[str, ...] = ()  # tools not offered to the model, each "name: why"


class PartKind(Enum):
    TEXT = "text"
    IMAGE = "image"
    JSON = "json"  # structured content
    OTHER = "other"  # audio, a resource link: named, not shown


@dataclass(frozen=True)
class ResultPart:
    """One piece of a result, for the window to show: text, an image's bytes (small enough to
    show as a thumbnail, else left out and said so in `text`), or structured content as JSON text."""

    kind: PartKind
    text: str = ""
    data: bytes = b""
    mime: str = ""


@dataclass(frozen=True)
class ToolOutcome:
    """What one call gave. `model_text` is what the model reads next and what is stored: at most
    RESULT_CAP_BYTES of UTF-8, `cut` when more was left out (the text says so). `error`: the
    tool failed, timed out, its server broke, or the call was refused; the text says which."""

    model_text: str
    error: bool = False
    cut: bool = False
    parts: tuple[ResultPart, ...] = ()
    elapsed_s: float = 0.0
