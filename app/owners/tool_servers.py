"""ToolServerManager: the tool servers (MCP) for the whole application, on the GUI thread.

It owns the Qt-free supervisor (app/tool_servers/supervisor.py), which runs every server on
an event loop of its own thread, and turns what that thread reports into signals here. Servers
start on first use (a conversation that chose them is opened, or a reply is asked with their
tools), never at start-up. The MCP SDK takes a second to import, holding Python's lock for up
to ~70 ms at a time: where any server is enabled it is imported on a thread of its own as
Hearth starts (`warmed`), so the first use does not freeze the window for that.

The configured servers live in the settings file with their secrets in the keyring
(tool_settings.py); the tools the user always allows are kept there too, against each server's
identity (its command and arguments, or its URL).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from ..tool_servers.approval import Approvals
from ..tool_servers.types import ServerConfig, ServerState, ServerStatus
from .tool_settings import ToolSettings

log = logging.getLogger(__name__)


class ToolServerManager(QObject):
    """The configured tool servers, their states, and calls to their tools.

    Signals:
        statusChanged(ServerStatus): a server is starting, ready (with its tools), or failed
            (with its reason); from the supervisor's thread, delivered on the GUI thread.
        serversChanged(): servers were added, removed, edited, enabled or disabled.
    """

    statusChanged = Signal(object)
    serversChanged = Signal()
    _reported = Signal(object)  # the supervisor's thread -> the GUI thread (queued)

    def __init__(self, settings: ToolSettings, log_dir: Path | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self._settings = settings
        self._log_dir = log_dir
        self._configs = settings.servers()
        self._approvals = Approvals(settings.always_allowed)
        self._statuses: dict[str, ServerStatus] = {}
        self.secrets_kept = True  # the last change's secrets went to the keyring (not this session only)
        self._supervisor = None
        self._reported.connect(self._on_reported)
        self.warmed = threading.Event()  # the SDK is imported
        if any(config.enabled for config in self._configs):
            threading.Thread(target=self._warm, name="tool-servers-import", daemon=True).start()

    def _warm(self) -> None:
        from ..tool_servers import runner  # noqa: F401  (the SDK, pydantic and the MCP types)

        self.warmed.set()

    # --- configuration -------------------------------------------------------------------------

    def servers(self) -> list[ServerConfig]:
        return list(self._configs)

    def config(self, name: str) -> ServerConfig | None:
        return next((config for config in self._configs if config.name == name), None)

    def set_servers(self, configs: list[ServerConfig]) -> bool:
        """Keep the new list; servers removed, changed or switched off are stopped. False when
        the system keyring could not keep their secrets (kept until Hearth quits)."""
        self._configs = list(configs)
        kept = self.secrets_kept = self._settings.set_servers(self._configs)
        for name in set(self._statuses) - {config.name for config in configs}:
            del self._statuses[name]
        if self._supervisor is not None:
            self._supervisor.configure(self._configs)
        self.serversChanged.emit()
        return kept

    def import_file(self, path: Path) -> list[ServerConfig]:
        """Add the servers of a mcp.json or claude_desktop_config.json, each switched off until
        the user enables it; a name already here gets a number. Raises ConfigError (a ValueError)."""
        from ..tool_servers.config import read_mcp_json

        taken = {config.name for config in self._configs}
        added = []
        for config in read_mcp_json(path, enabled=False):
            name, number = config.name, 2
            while name in taken:
                name, number = f"{config.name} {number}", number + 1
            taken.add(name)
            added.append(ServerConfig(**{**config.__dict__, "name": name}))
        self.set_servers(self._configs + added)
        return added

    @property
    def step_limit(self) -> int:
        return self._settings.step_limit

    @step_limit.setter
    def step_limit(self, limit: int) -> None:
        self._settings.step_limit = limit

    @property
    def result_cap_bytes(self) -> int:
        return self._settings.result_cap_bytes

    @result_cap_bytes.setter
    def result_cap_bytes(self, size: int) -> None:
        self._settings.result_cap_bytes = size
        if self._supervisor is not None:
            self._supervisor.result_cap_bytes = self._settings.result_cap_bytes

    def allows(self, server: str, tool: str) -> bool:
        """The user chose "Always allow this tool" for this server (as it is configured now)."""
        config = self.config(server)
        return config is not None and self._approvals.allows(config, tool)

    def allow_always(self, server: str, tool: str) -> None:
        config = self.config(server)
        if config is not None:
            self._approvals.allow_always(config, tool)
            self._settings.always_allowed = self._approvals.pairs

    # --- states --------------------------------------------------------------------------------

    def statuses(self) -> list[ServerStatus]:
        """Every configured server's state, in the order configured."""
        return [self.status(config.name) for config in self._configs]

    def status(self, name: str) -> ServerStatus:
        config = self.config(name)
        if config is None or not config.enabled:
            return ServerStatus(name, ServerState.OFF)
        return self._statuses.get(name, ServerStatus(name, ServerState.IDLE))

    def start(self, names) -> None:
        """Start these servers if they are enabled and not running: returns at once, and
        statusChanged follows."""
        wanted = [name for name in names if self.status(name).state in (ServerState.IDLE, ServerState.FAILED)]
        if wanted:
            supervisor = self._running_supervisor()
            for name in wanted:
                supervisor.start(name)

    def call(self, server: str, tool: str, arguments: dict) -> concurrent.futures.Future:
        """Run a tool; the future's ToolOutcome comes on the supervisor's thread (never an
        exception: a failure is an outcome with error set). cancel() stops it."""
        return self._running_supervisor().call(server, tool, arguments)

    def close(self) -> None:
        """Stop every server, when Hearth quits."""
        if self._supervisor is not None:
            self._supervisor.close()
            self._supervisor = None

    def _running_supervisor(self):
        if self._supervisor is None:
            from ..tool_servers.supervisor import ToolServers

            self._supervisor = ToolServers(self._configs, self._log_dir, on_status=self._reported.emit)
            self._supervisor.result_cap_bytes = self._settings.result_cap_bytes
        return self._supervisor

    def _on_reported(self, status: ServerStatus) -> None:
        if self.config(status.name) is None:
            return  # removed since
        self._statuses[status.name] = status
        self.statusChanged.emit(status)
