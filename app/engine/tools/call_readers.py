"""Readers that follow one call (or one block of calls) of a family's syntax as its text
arrives, and tell a CallSink what they find: the name, the id, argument text, the end. Here:
what every reader shares, and the reader of calls written as JSON objects (named_readers.py
has the others).

The model's text is untrusted: nothing is evaluated, JSON nesting is limited, a name that
never ends is given up on, and every buffer holds at most what the reply wrote since the call
began. A reader's `feed(text)` returns None while the call goes on, or the text after it once
it ended; `close(reason)` ends it with the reply.
"""

from __future__ import annotations

import json
from typing import Protocol

from .formats import ToolFormat

MAX_JSON_DEPTH = 64
MAX_NAME_CHARS = 256
WHITESPACE = " \t\r\n"


class CallSink(Protocol):
    def begin(self, name: str, model_id: str | None) -> None: ...
    def arguments(self, fragment: str) -> None: ...
    def end(self, problem: str | None = None) -> None: ...
    def give_up(self, problem: str) -> None: ...  # the rest of the reply is not read


class NotACall(Exception):
    """The text after an opener turned out not to be a call before it named anything: the
    parser shows it as text."""


def partial_suffix(text: str, marker: str) -> int:
    """The length of the longest end of `text` that is a proper beginning of `marker`."""
    for length in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:length]):
            return length
    return 0


class Reader:
    def __init__(self, fmt: ToolFormat, sink: CallSink):
        self.fmt, self.sink = fmt, sink
        self.buf, self.pos = "", 0
        self.begun = False

    def _tail(self, final: bool) -> str | None:
        """After the call: skip whitespace and the family's end marker, if it is there."""
        start = self.pos
        while self.pos < len(self.buf) and self.buf[self.pos] in WHITESPACE:
            self.pos += 1
        rest, end = self.buf[self.pos:], self.fmt.call_end
        if end and rest.startswith(end):
            return rest[len(end):]
        if end and end.startswith(rest) and not final:
            return None
        if not rest and not final:
            return None
        return self.buf[start:]


class JsonValue:
    """Follows one JSON value character by character, knowing only its nesting, strings and
    where it ends: enough to stream its text and hand it on whole, never to build it."""

    def __init__(self):
        self.stack: list[str] = []
        self.in_string = self.escape = False
        self.started = self.done = False
        self.scalar = False

    def step(self, char: str) -> bool:
        """Take one character; False if it is not part of the value (it ends a scalar)."""
        if self.in_string:
            if self.escape:
                self.escape = False
            elif char == "\\":
                self.escape = True
            elif char == '"':
                self.in_string = False
                self.done = not self.stack
            return True
        if not self.started:
            if char in WHITESPACE:
                return True
            self.started = True
        if self.scalar:
            if char in ",}] \t\r\n":
                self.done = True
                return False
            return True
        if char == '"':
            self.in_string = True
        elif char in "{[":
            self.stack.append(char)
            if len(self.stack) > MAX_JSON_DEPTH:
                raise ValueError(f"the arguments are nested deeper than {MAX_JSON_DEPTH} levels")
        elif char in "}]":
            if not self.stack:
                raise ValueError("the arguments are not valid JSON")
            self.stack.pop()
            self.done = not self.stack
        elif not self.stack and char not in WHITESPACE:
            self.scalar = True
        return True


class ObjectCallsReader(Reader):
    """JSON whose objects at `call_depth` are calls: `{"name": …, "arguments": …}` and its
    variants (keys in any order, the model's own id under an id key)."""

    def __init__(self, fmt: ToolFormat, sink: CallSink):
        super().__init__(fmt, sink)
        self.outer = JsonValue()
        self.calls_made = 0  # in this block
        self._reset_call()

    def _reset_call(self):
        self.in_call = False
        self.key_start = -1
        self.key: str | None = None
        self.value: JsonValue | None = None
        self.value_start = self.streamed = -1
        self.name: str | None = None
        self.model_id: str | None = None
        self.pending = ""  # argument text written before the name
        self.saw_arguments = False

    def feed(self, text: str, final: bool = False) -> str | None:
        self.buf += text
        try:
            while self.pos < len(self.buf) and not self.outer.done:
                self._step(self.buf[self.pos])
                self.pos += 1
        except ValueError as exc:
            return self._broken(str(exc))
        self._stream_arguments()
        if self.outer.done:
            if self.in_call:
                self._end_call()
            return self._tail(final)
        return None

    def close(self, reason: str) -> None:
        """A call cut off after its name is reported with what it had; one cut off before it
        named a function is no call but the reply's text (as NamedCallReader.close has it): a
        call without a name could be neither run nor sent back in the history."""
        if self.begun:
            self._stream_arguments()
            self.sink.end(reason)
            return
        raise NotACall()

    def _step(self, char: str) -> None:
        outer, depth = self.outer, len(self.outer.stack)
        if self.value is not None:
            kept = self.value.step(char)
            if self.value.done:
                self._value_ended(self.pos + 1 if kept else self.pos)
            if kept:
                outer.step(char)
                return
            depth = len(outer.stack)
        was_in_string = outer.in_string
        outer.step(char)
        if not self.outer.started:
            return
        if depth == 0 and not outer.stack and not outer.in_string and not was_in_string:
            raise NotACall()  # not a JSON container at all
        if char == "{" and len(outer.stack) == self.fmt.call_depth and not was_in_string:
            self._reset_call()
            self.in_call = True
        elif not self.in_call:
            return
        elif char == "}" and len(outer.stack) == self.fmt.call_depth - 1 and not was_in_string:
            self._end_call()
        elif len(outer.stack) == self.fmt.call_depth:
            self._call_level(char, was_in_string)

    def _call_level(self, char: str, was_in_string: bool) -> None:
        """A character directly inside the call object: a key, a colon, or a value's start."""
        if char == '"' and not was_in_string and self.key is None:
            self.key_start = self.pos
        elif char == '"' and was_in_string and self.key_start >= 0:
            try:
                self.key = json.loads(self.buf[self.key_start:self.pos + 1])
            except ValueError:
                self.key = ""
            self.key_start = -1
        elif char == ":" and self.key is not None and not was_in_string:
            self.value = JsonValue()
            self.value_start = self.pos + 1

    def _value_ended(self, end: int) -> None:
        key, text = self.key, self.buf[self.value_start:end]
        self.value, self.key = None, None
        if key in self.fmt.argument_keys:
            self._stream_arguments(end)
            self.streamed = -1
            self.saw_arguments = True
        elif key in self.fmt.name_keys or key in self.fmt.id_keys:
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = text.strip()
            if key in self.fmt.name_keys:
                self.name = str(decoded)[:MAX_NAME_CHARS]
                self._announce()
            elif self.model_id is None:
                self.model_id = str(decoded)[:MAX_NAME_CHARS]

    def _stream_arguments(self, end: int | None = None) -> None:
        """Pass on the argument text written since the last call, as it arrives."""
        if self.value is None and end is None or self.key not in self.fmt.argument_keys and end is None:
            return
        if self.streamed < 0:
            if end is None and not self.value.started:
                return
            self.streamed = self.value_start
            while self.streamed < len(self.buf) and self.buf[self.streamed] in WHITESPACE:
                self.streamed += 1
        stop = self.pos if end is None else end
        if stop > self.streamed:
            fragment = self.buf[self.streamed:stop]
            self.streamed = stop
            if self.begun:
                self.sink.arguments(fragment)
            else:
                self.pending += fragment

    def _announce(self) -> None:
        if not self.begun:
            self.begun = True
            self.sink.begin(self.name or "", self.model_id)
            if self.pending:
                self.sink.arguments(self.pending)
                self.pending = ""

    def _end_call(self) -> None:
        if not self.name and not self.begun:
            # An object that names no function is no call (a client that sent it back would be
            # refused). Alone it is the reply's text, as a call cut off before its name is; in a
            # block that has made calls already it is passed over, so that however the reply
            # was split, the calls before it stand and the block reads on.
            if not self.calls_made:
                raise NotACall()
            self._reset_call()
            return
        self._announce()
        if not self.saw_arguments:
            self.sink.arguments("{}")
        self.sink.end(None)
        self.calls_made += 1
        self.begun = False
        self._reset_call()

    def _broken(self, problem: str) -> str | None:
        if not (self.in_call or self.begun):
            raise NotACall()
        self._announce()
        self.sink.give_up(problem)
        return ""
