"""A server's streamed tool calls, assembled: OpenAI's `delta.tool_calls[]` fragments in, the
typed ToolCallDelta / ToolCall events of `Backend.stream` out.

OpenAI streams a call as pieces keyed by `index`: the first with the call's `id` and
`function.name`, the rest with `function.arguments` fragments. Servers differ in the details
(llama.cpp's sends the name again, some send the whole call in one chunk, some leave out
`index` when there is one call), so the pieces are read leniently but bounded: a server's
text is untrusted, and a call that never ends must not grow without limit.
"""

from __future__ import annotations

from collections.abc import Callable

from ...common.text import printable
from ..tools.call_readers import MAX_NAME_CHARS  # a call's name or id, as a local model's is bounded
from ..tools.parsing import CUT_OFF
from ..tools.types import ToolCall, ToolCallDelta, new_call_id

MAX_CALLS = 128  # in one reply
MAX_ARGUMENT_CHARS = 4_000_000  # a call's arguments; past it the call is cut and says so


class RemoteCalls:
    """The calls of one reply, as their pieces arrive. `check(name, arguments)` says why a
    complete call cannot run as written (engine/tools/wire.call_problem), or None."""

    def __init__(self, check: Callable[[str, str], str | None]):
        self._check = check
        self._calls: dict[int, _Call] = {}

    def __bool__(self) -> bool:
        return bool(self._calls)

    def take(self, pieces: object) -> list[ToolCallDelta]:
        """The deltas of one chunk's `delta.tool_calls` (anything malformed is skipped)."""
        if not isinstance(pieces, list):
            return []
        deltas = []
        for position, piece in enumerate(pieces):
            if not isinstance(piece, dict):
                continue
            index = piece.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < MAX_CALLS:
                continue
            function = piece.get("function") if isinstance(piece.get("function"), dict) else {}
            call = self._calls.get(index)
            if call is None:
                given_id = piece.get("id")
                call = self._calls[index] = _Call(printable(given_id, limit=MAX_NAME_CHARS)
                                                  if isinstance(given_id, str) and given_id else new_call_id())
            delta = call.take(function.get("name"), function.get("arguments"))
            if delta is not None:
                deltas.append(ToolCallDelta(index, **delta))
        return deltas

    def complete(self, cut_short: str | None) -> list[ToolCall]:
        """The calls, each complete as far as it came, in index order. `cut_short`: why the reply
        ended before its calls could finish (None: it finished), for calls that were cut."""
        calls = []
        for index in sorted(self._calls):
            call = self._calls[index]
            problem = call.problem or (cut_short and f"{CUT_OFF} ({cut_short})")
            if problem is None and not call.name:
                problem = "The server sent a call without a function name."
            if problem is None:
                problem = self._check(call.name, call.arguments)
            calls.append(ToolCall(index, call.id, call.name, call.arguments, problem, complete=cut_short is None))
        return calls


class _Call:
    """One call's pieces so far. Argument text that comes before the name (a server's odd
    order) is held until the name comes: a client's first delta of a call names it."""

    def __init__(self, call_id: str):
        self.id = call_id
        self.name = ""
        self.arguments = ""
        self.problem: str | None = None
        self._unsent = ""  # argument text not yet in a delta

    def take(self, name: object, arguments: object) -> dict | None:
        """This piece's delta fields, or None when it adds nothing to send."""
        fields: dict = {}
        if isinstance(name, str) and name and not self.name:
            self.name = printable(name, limit=MAX_NAME_CHARS)
            fields.update(id=self.id, name=self.name)
        if isinstance(arguments, str) and arguments and self.problem is None:
            room = MAX_ARGUMENT_CHARS - len(self.arguments)
            if len(arguments) > room:
                arguments = arguments[:room]
                self.problem = f"The call's arguments ran past {MAX_ARGUMENT_CHARS:,} characters and were cut."
            self.arguments += arguments
            self._unsent += arguments
        if self.name and self._unsent:
            fields["arguments"], self._unsent = self._unsent, ""
        return fields or None
