"""`hearth chat … --mcp FILE --allow-tool SERVER/TOOL`: the agent loop on the command line.

The model is offered every tool of the servers (those of --mcp, else those enabled in
Settings → Tools); a call runs only when its tool was allowed with --allow-tool, and any other
is denied without reaching its server: there is no one to ask on a command line, so the flags
are the user's consent, given ahead. Each call is printed as a JSON line (chat.py's
`call_line`), then its result as one more: `{"tool_result": {"id", "name", "content", "error"}}`.
The loop ends when a reply ends without calls; after --max-tool-steps replies that did, the
model is asked once more with no call allowed (a note on stderr says so), so it answers. Ctrl+C
cancels the call in flight and answers the rest as not run.

The same steps as the window's (conversation/tool_steps.py); only asking differs.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..conversation.tool_steps import (
    STEP_LIMIT_TEXT,
    arguments_of,
    plan_call,
    refused,
    result_of,
    step_use,
    unique_call,
)
from ..engine.tools.types import ToolCall, ToolChoice, ToolChoiceMode, ToolUse
from ..store import ToolResult
from ..tool_servers.approval import NOT_ALLOWED_TEXT, STOPPED_BEFORE_TEXT, STOPPED_TEXT
from ..tool_servers.catalog import ToolCatalog
from ..tool_servers.limits import START_TIMEOUT_S, STEP_LIMIT
from ..tool_servers.types import ServerState
from .args import UsageError

CANCEL_POLL_S = 0.1  # how often a call's wait looks at Ctrl+C


@dataclass
class CommandLineTools:
    """The tools of one `hearth chat`, and how their calls are answered. Replies 0 … steps-1
    may call tools; reply `steps` is asked with no call allowed, so the loop ends in an answer."""

    servers: object  # tool_servers.supervisor.ToolServers, started
    catalog: ToolCatalog
    allowed: frozenset[tuple[str, str]]  # (server, tool)
    steps: int
    timeout_s: float | None
    choice: ToolChoice
    ids: set[str] = field(default_factory=set)  # the calls' ids so far

    @property
    def replies(self) -> int:
        """The most replies one message may get: each step's, and the answer after the last."""
        return self.steps + 1

    def use(self, step: int) -> ToolUse:
        return step_use(self.catalog, step, self.steps, self.choice)

    def written(self, call: ToolCall) -> ToolCall:
        """The call with an id unique among this command's calls."""
        return unique_call(call, self.ids)

    def answer(self, calls: tuple[ToolCall, ...], step: int, cancel: threading.Event) -> Iterator[ToolResult]:
        """Each call's result as it comes (printed, for the caller to store at once). After
        the last step, or once Ctrl+C has set `cancel`, a call is answered as not run."""
        for call in calls:
            result = self._answer(call, step, cancel)
            print(result_line(result), flush=True)
            yield result
        if step + 1 == self.steps and not cancel.is_set():
            print(f"hearth: the model used its {self.steps} tool steps (--max-tool-steps); asking it to answer",
                  file=sys.stderr)

    def _answer(self, call: ToolCall, step: int, cancel: threading.Event) -> ToolResult:
        if cancel.is_set():
            return refused(call, STOPPED_BEFORE_TEXT)
        if step >= self.steps:
            return refused(call, STEP_LIMIT_TEXT.format(limit=self.steps))
        planned = plan_call(call, self.catalog)
        if planned.refusal is not None:
            return refused(call, planned.refusal)
        if (planned.listed.server, planned.listed.name) not in self.allowed:
            return refused(call, NOT_ALLOWED_TEXT)
        future = self.servers.call(planned.listed.server, planned.listed.name, arguments_of(call), self.timeout_s)
        while True:
            try:
                return result_of(call, future.result(timeout=CANCEL_POLL_S))
            except TimeoutError:
                if cancel.is_set():  # Ctrl+C: the call is cancelled on its server
                    future.cancel()
                    return refused(call, STOPPED_TEXT)


def call_line(call: ToolCall) -> str:
    """`{"tool_call": {"id", "name", "arguments"}}`, with `problem` when the call cannot run as
    written (the model named a tool that was not offered, or its arguments fail the schema)."""
    line = {"id": call.id, "name": call.name, "arguments": call.arguments}
    if call.problem is not None:
        line["problem"] = call.problem
    return json.dumps({"tool_call": line}, ensure_ascii=False)


def result_line(result: ToolResult) -> str:
    return json.dumps({"tool_result": {"id": result.call_id, "name": result.name, "content": result.content,
                                       "error": result.error}}, ensure_ascii=False)


def wants_tool_servers(args) -> bool:
    return args.mcp is not None or bool(args.allow_tool) or args.max_tool_steps is not None


@contextlib.contextmanager
def command_line_tools(args) -> Iterator[CommandLineTools | None]:
    """The tool servers the flags name, started and listed (None without tool-server flags);
    every server is stopped when the block ends. A server that fails is said on stderr, and
    the others are used."""
    if not wants_tool_servers(args):
        yield None
        return
    if args.tools is not None or args.json_schema is not None:
        raise UsageError("--tools and --json-schema do not go with tool servers (--mcp, --allow-tool)")
    if args.max_tool_steps is not None and args.max_tool_steps < 1:
        raise UsageError("--max-tool-steps must be at least 1")
    if args.tool_timeout is not None and not args.tool_timeout > 0:
        raise UsageError("--tool-timeout must be a number of seconds above 0")
    configs = _configs(args)
    from ..tool_servers.supervisor import ToolServers  # the MCP SDK: only for a chat with tools

    servers = ToolServers(configs)
    try:
        statuses = servers.wait_ready([config.name for config in configs], START_TIMEOUT_S)
        for status in statuses:
            if status.reason:
                print(f"hearth: tool server {status.name}: {status.reason}", file=sys.stderr)
        catalog = ToolCatalog.build(statuses, tuple(config.name for config in configs))
        failed = {status.name for status in statuses if status.state is not ServerState.READY}
        yield CommandLineTools(servers, catalog, _allowed(args, catalog, failed), args.max_tool_steps or STEP_LIMIT,
                               args.tool_timeout, _choice(args, catalog))
    finally:
        servers.close()


def _configs(args) -> list:
    if args.mcp is not None:
        from ..tool_servers.config import ConfigError, read_mcp_json

        try:
            configs = read_mcp_json(args.mcp, enabled=True)
        except (ConfigError, OSError) as exc:
            raise UsageError(f"--mcp: {exc}") from None
    else:
        from ..owners.settings import Settings

        configs = [config for config in Settings.for_profile().tools.servers() if config.enabled]
    if not configs:
        raise UsageError("no tool servers: give --mcp FILE, or enable one in Settings → Tools")
    return configs


def _allowed(args, catalog: ToolCatalog, failed: set[str]) -> frozenset[tuple[str, str]]:
    """--allow-tool SERVER/TOOL, each checked against what the servers offer (split at the last
    '/', as catalog.find reads it: a server's name may hold one). A server that failed to start
    is said on stderr already: allowing its tools is not an error of the command."""
    allowed = set()
    for spec in args.allow_tool:
        server, slash, tool = spec.rpartition("/")
        if not slash or not server or not tool:
            raise UsageError(f"--allow-tool {spec}: give SERVER/TOOL")
        if server in failed:
            continue
        if not any(listed.server == server and listed.name == tool for listed in catalog.listed):
            raise UsageError(f"--allow-tool {spec}: {server} offers no tool {tool}")
        allowed.add((server, tool))
    return frozenset(allowed)


def _choice(args, catalog: ToolCatalog) -> ToolChoice:
    choice = args.tool_choice
    if choice is None or choice == "auto":
        return ToolChoice()
    if choice in ("none", "required"):
        return ToolChoice(ToolChoiceMode(choice))
    try:
        return ToolChoice(ToolChoiceMode.FUNCTION, catalog.model_name(catalog.find(choice)))
    except (KeyError, ValueError) as exc:
        raise UsageError(f"--tool-choice: {exc}") from None
