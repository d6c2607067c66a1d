"""`hearth chat … --mcp FILE --allow-tool SERVER/TOOL`: the agent loop on the command line.

The model is offered every tool of the servers (those of --mcp, else those enabled in
Settings → Tools); a call runs only when its tool was allowed with --allow-tool, and any other
is denied without reaching its server: there is no one to ask on a command line, so the flags
are the user's consent, given ahead. Each call is printed as a JSON line (chat.py's
`call_line`), then its result as one more: `{"tool_result": {"id", "name", "content", "error"}}`.
The loop ends when a reply ends without calls, or after --max-tool-steps replies that did
(the last one's calls answered as not run, and a note on stderr).

The same steps as the window's (conversation/tool_steps.py); only asking differs.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from ..conversation.tool_steps import STEP_LIMIT_TEXT, arguments_of, plan_call, refused, result_of, step_use
from ..engine.tools.types import ToolCall, ToolChoice, ToolChoiceMode, ToolUse
from ..store import ToolResult
from ..tool_servers.approval import NOT_ALLOWED_TEXT
from ..tool_servers.catalog import ToolCatalog
from ..tool_servers.limits import START_TIMEOUT_S, STEP_LIMIT
from .args import UsageError


@dataclass
class CommandLineTools:
    """The tools of one `hearth chat`, and how their calls are answered."""

    servers: object  # tool_servers.supervisor.ToolServers, started
    catalog: ToolCatalog
    allowed: frozenset[tuple[str, str]]  # (server, tool)
    steps: int
    timeout_s: float | None
    choice: ToolChoice

    def use(self, step: int) -> ToolUse:
        return step_use(self.catalog, step, self.choice)

    def answer(self, calls: tuple[ToolCall, ...], step: int) -> tuple[ToolResult, ...]:
        """Each call's result, printed as it comes; after the last step, every call is answered
        as not run."""
        results = []
        for call in calls:
            result = self._answer(call, step)
            print(result_line(result), flush=True)
            results.append(result)
        if step + 1 >= self.steps:
            print(f"hearth: stopped after {self.steps} tool steps (--max-tool-steps)", file=sys.stderr)
        return tuple(results)

    def _answer(self, call: ToolCall, step: int) -> ToolResult:
        if step + 1 >= self.steps:
            return refused(call, STEP_LIMIT_TEXT.format(limit=self.steps))
        planned = plan_call(call, self.catalog)
        if planned.refusal is not None:
            return refused(call, planned.refusal)
        if (planned.listed.server, planned.listed.name) not in self.allowed:
            return refused(call, NOT_ALLOWED_TEXT)
        outcome = self.servers.call(planned.listed.server, planned.listed.name, arguments_of(call),
                                    self.timeout_s).result()
        return result_of(call, outcome)


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
        yield CommandLineTools(servers, catalog, _allowed(args, catalog), args.max_tool_steps or STEP_LIMIT,
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


def _allowed(args, catalog: ToolCatalog) -> frozenset[tuple[str, str]]:
    allowed = set()
    for spec in args.allow_tool:
        if "/" not in spec:
            raise UsageError(f"--allow-tool {spec}: give SERVER/TOOL")
        server, _, tool = spec.partition("/")
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
