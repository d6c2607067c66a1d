"""One step of the agent loop, the same in the window (owners/tool_turns.py) and on the command
line (`hearth chat --mcp`): a call the model wrote is looked up among the tools it was offered,
refused without reaching any server when it cannot run as written, and its outcome becomes the
"tool" message the model reads next and the store keeps.

A step is a model reply that ends in calls. After `limit` of them in one turn the model is
asked once more with the tools still in the prompt but no call allowed, so a model that calls
forever (LM Studio #1362) stops, and the turn ends in an answer; a call it writes all the same
is answered as not run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.tools.types import ToolCall, ToolChoice, ToolChoiceMode, ToolUse, new_call_id
from ..store import ToolResult
from ..tool_servers.approval import NOT_RUN
from ..tool_servers.catalog import ToolCatalog
from ..tool_servers.types import ListedTool, ToolOutcome

STEP_LIMIT_TEXT = NOT_RUN + "this turn reached its limit of {limit} tool steps. Answer with what you have."
UNKNOWN_TOOL_TEXT = NOT_RUN + "there is no tool named {name} here."
PROBLEM_TEXT = NOT_RUN + "{problem}"


@dataclass(frozen=True)
class PlannedCall:
    """A call and what it reaches: `listed` (its server's tool) when it can run, else
    `refusal`, the text the model gets back instead of a result."""

    call: ToolCall
    listed: ListedTool | None
    refusal: str | None = None


def plan_call(call: ToolCall, catalog: ToolCatalog) -> PlannedCall:
    """Look the call up. A call with a problem (arguments that are not JSON or fail the schema,
    a reply cut off mid-call) or naming a tool not offered is refused before any server."""
    listed = catalog.lookup(call.name)
    if listed is None:
        return PlannedCall(call, None, UNKNOWN_TOOL_TEXT.format(name=call.name))
    if call.problem is not None:
        return PlannedCall(call, listed, PROBLEM_TEXT.format(problem=call.problem))
    return PlannedCall(call, listed)


def arguments_of(call: ToolCall) -> dict:
    """The call's arguments as the server takes them (plan_call refused any that are not a
    JSON object; the grammar makes them one)."""
    value = call.parsed_arguments() if call.arguments.strip() else {}
    return value if isinstance(value, dict) else {}


def result_of(call: ToolCall, outcome: ToolOutcome) -> ToolResult:
    return ToolResult(call.id, call.name, outcome.model_text, outcome.error)


def refused(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(call.id, call.name, text, error=True)


def step_use(catalog: ToolCatalog, step: int, limit: int, choice: ToolChoice = ToolChoice()) -> ToolUse:
    """What the model may call at step `step` (0: the reply to the user's message). A choice
    that forces a call (`required`, a named tool) holds for the first step only: forced at every
    step, the model could never answer. At the step limit the tools stay in the prompt (it is
    the same prefix, read already) but the reply may not call them: the model answers."""
    if not catalog.tools:
        return ToolUse()
    if step >= limit:
        return ToolUse(tools=catalog.tools, choice=ToolChoice(ToolChoiceMode.NONE))
    forced = choice.mode in (ToolChoiceMode.REQUIRED, ToolChoiceMode.FUNCTION)
    return ToolUse(tools=catalog.tools, choice=choice if (step == 0 or not forced) else ToolChoice())


def unique_call(call: ToolCall, seen: set[str]) -> ToolCall:
    """The call with an id no other call of its turn has (`seen`, which it joins): a model that
    writes its own ids may repeat one, and a result must answer one call only."""
    if call.id in seen:
        call = replace(call, id=new_call_id())
    seen.add(call.id)
    return call
