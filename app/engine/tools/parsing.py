"""A reply's text, split as it streams into what the user reads and the calls the model makes.

Text outside calls comes out as soon as it cannot be the start of a call marker (only a
possible marker prefix is held back, as stops.py holds back a possible stop string). A call
streams as OpenAI streams it: a first ToolCallDelta with its index, id and name as soon as
the name is known, argument fragments as the argument text arrives, then the complete
ToolCall, whose `arguments` is exactly the concatenation of its fragments and whose
`problem` says why it cannot be run as written (not JSON, or the engine's `check` of the
name and the arguments against the offered tools). Whitespace around calls (between two
calls, or alone before or after them) is not text; anything else the model writes around
its calls is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from ...common.text import shorten
from ..types import ReplyStats, StopReason
from .call_readers import NotACall, ObjectCallsReader, partial_suffix
from .formats import Shape, ToolFormat
from .named_readers import NamedCallReader, XmlCallReader
from .types import ToolCall, ToolCallDelta, ToolUse

Event = str | ToolCallDelta | ToolCall
CUT_OFF = "the call was cut off before it was complete"


class ToolCallParser:
    def __init__(self, fmt: ToolFormat, use: ToolUse, check: Callable[[str, str], str | None]):
        self._fmt, self._check = fmt, check
        self._markers = tuple((opener.text, opener) for opener in fmt.openers) + tuple(
            (marker, None) for marker in fmt.ignored_markers)
        self._types = {tool.name: {key: (schema or {}).get("type") for key, schema in
                                   (tool.parameters.get("properties") or {}).items()} for tool in use.tools}
        self._held = ""  # text that may still become a marker
        self._space = ""  # whitespace that is text only if more text follows
        self._quiet = True  # at the reply's start or right after a call
        self._reader = None
        self._call_text = ""  # the raw text of a call not yet named, shown if it turns out no call
        self._events: list[Event] = []
        self._index = 0
        self._current: tuple[int, str, str] | None = None  # index, id, name
        self._arguments: list[str] = []
        self._skipping = False

    def feed(self, text: str) -> list[Event]:
        """Take the next piece of the reply; return what can be told of it now."""
        self._run(text, final=False)
        return self._take()

    def finish(self, reason: str | None = None) -> list[Event]:
        """The reply ended (`reason`, e.g. "max_tokens", says why, for a call it cut off)."""
        self._run("", final=True)
        if self._reader is not None:
            problem = CUT_OFF + (f" ({reason})" if reason else "")
            try:
                self._reader.close(problem)
            except NotACall:
                self._text(self._call_text)
            self._reader = None
        self._text(self._held)
        self._held = self._space = ""
        return self._take()

    # --- the text between calls -----------------------------------------------------------

    def _run(self, text: str, final: bool) -> None:
        while not self._skipping:
            if self._reader is not None:
                self._call_text += text
                try:
                    rest = self._reader.feed(text, final)
                except NotACall:
                    rest, self._reader = self._call_text, None
                    self._text(rest[:1])  # the opener's first character is text; look again after it
                    rest = rest[1:]
                else:
                    if rest is None:
                        return
                    self._reader, self._quiet = None, True
                text = rest
                continue
            buffer = self._held + text
            self._held = ""
            found = min(((buffer.find(marker), marker, opener) for marker, opener in self._markers
                         if marker in buffer and self._may_open(opener, buffer[:buffer.find(marker)])),
                        default=None, key=lambda hit: hit[0])
            if found is None:
                keep = 0 if final else max((partial_suffix(buffer, marker) for marker, _ in self._markers), default=0)
                self._text(buffer[:len(buffer) - keep])
                self._held = buffer[len(buffer) - keep:]
                return
            index, marker, opener = found
            self._text(buffer[:index])
            if opener is None:
                text = buffer[index + len(marker):]
                continue
            self._space = ""
            self._reader = self._new_reader()
            text = buffer[index:] if opener.inclusive else buffer[index + len(marker):]
            self._call_text = "" if opener.inclusive else marker
        self._held = ""

    def _may_open(self, opener, before: str) -> bool:
        """Whether a marker found after `before` starts something here: an opener that counts
        only where a reply begins (Opener.at_start) needs nothing but whitespace before it."""
        return opener is None or not opener.at_start or (self._quiet and not before.strip())

    def _new_reader(self):
        if self._fmt.shape is Shape.OBJECT:
            return ObjectCallsReader(self._fmt, self)
        if self._fmt.shape is Shape.XML:
            return XmlCallReader(self._fmt, self, self._types)
        return NamedCallReader(self._fmt, self)

    def _text(self, text: str) -> None:
        if not text:
            return
        if self._quiet and not text.strip():
            self._space += text
            return
        self._events.append(self._space + text)
        self._space, self._quiet = "", False

    def _take(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    # --- the CallSink the readers tell ---------------------------------------------------

    def begin(self, name: str, model_id: str | None) -> None:
        call_id = model_id or self._fmt.new_id()
        self._current = (self._index, call_id, name)
        self._arguments = []
        self._index += 1
        self._events.append(ToolCallDelta(self._current[0], call_id, name))

    def arguments(self, fragment: str) -> None:
        if fragment:
            self._arguments.append(fragment)
            self._events.append(ToolCallDelta(self._current[0], arguments=fragment))

    def end(self, problem: str | None = None) -> None:
        index, call_id, name = self._current
        arguments = "".join(self._arguments)
        if problem is None:
            problem = self._problem(name, arguments)
        self._events.append(ToolCall(index, call_id, name, arguments, problem,
                                     complete=not (problem or "").startswith(CUT_OFF)))
        self._current, self._arguments, self._call_text = None, [], ""

    def give_up(self, problem: str) -> None:
        """A call too hostile to follow (nested past the limit, a name that never ends): it
        ends here with `problem`, and the rest of the reply is not read."""
        if self._current is not None:
            self.end(problem)
        self._skipping, self._reader = True, None

    def _problem(self, name: str, arguments: str) -> str | None:
        try:
            json.loads(arguments)
        except ValueError as exc:
            return f"the arguments are not valid JSON ({shorten(str(exc), 120)})"
        return self._check(name, arguments)


def parsed_reply(events: Iterator, parser: ToolCallParser) -> Iterator:
    """A backend's reply events (text pieces, then one ReplyStats) with the calls read out of
    the text as it streams. The calls the reply ends with come before its ReplyStats (the
    stream's last act), which then says TOOL_CALLS where the model ended its turn after them.
    A reply cut short (max_tokens, Stop, an error) keeps its stop reason, and a call it cut
    off says so in its `problem`."""
    called = False
    for event in events:
        if isinstance(event, ReplyStats):
            ended = event.stop_reason in (StopReason.END_OF_TURN, StopReason.STOP_STRING)
            for last in parser.finish(None if ended else _CUT_REASONS.get(event.stop_reason, "the reply ended")):
                called |= isinstance(last, ToolCall)
                yield last
            if called and ended:
                event.stop_reason = StopReason.TOOL_CALLS
            yield event
            return
        if not isinstance(event, str):  # a token's log-probability: the parser reads text only
            yield event
            continue
        for piece in parser.feed(event):
            called |= isinstance(piece, ToolCall)
            yield piece


_CUT_REASONS = {StopReason.LENGTH: "max_tokens", StopReason.CANCELLED: "stopped", StopReason.ERROR: "the model failed"}
