"""Readers that follow one call (or one block of calls) of a family's syntax as its text
arrives, and tell a CallSink what they find: the name, the id, argument text, the end.

The model's text is untrusted: nothing is evaluated, JSON nesting is limited, a name that
never ends is given up on, and every buffer holds at most what the reply wrote since the call
began. A reader's `feed(text)` returns None while the call goes on, or the text after it once
it ended; `close(reason)` ends it with the reply.
"""

from __future__ import annotations

import json
import re
from typing import Protocol

from .formats import ArgumentNotation, Shape, ToolFormat

MAX_JSON_DEPTH = 64
MAX_NAME_CHARS = 256
MAX_HEADER_CHARS = 128  # gpt-oss: the channel header between a call's name and its arguments
_WHITESPACE = " \t\r\n"
_GEMMA_QUOTE = '<|"|>'


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


def make_reader(fmt: ToolFormat, sink: CallSink, parameter_types: dict[str, dict[str, object]]):
    if fmt.shape is Shape.OBJECT:
        return ObjectCallsReader(fmt, sink)
    if fmt.shape is Shape.XML:
        return XmlCallReader(fmt, sink, parameter_types)
    return NamedCallReader(fmt, sink)


class _Reader:
    def __init__(self, fmt: ToolFormat, sink: CallSink):
        self.fmt, self.sink = fmt, sink
        self.buf, self.pos = "", 0
        self.begun = False

    def _tail(self, final: bool) -> str | None:
        """After the call: skip whitespace and the family's end marker, if it is there."""
        start = self.pos
        while self.pos < len(self.buf) and self.buf[self.pos] in _WHITESPACE:
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
            if char in _WHITESPACE:
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
        elif not self.stack and char not in _WHITESPACE:
            self.scalar = True
        return True


class ObjectCallsReader(_Reader):
    """JSON whose objects at `call_depth` are calls: `{"name": …, "arguments": …}` and its
    variants (keys in any order, the model's own id under an id key)."""

    def __init__(self, fmt: ToolFormat, sink: CallSink):
        super().__init__(fmt, sink)
        self.outer = JsonValue()
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
        if self.in_call or self.begun:
            self._stream_arguments()
            if self.in_call:
                self._announce()
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
            while self.streamed < len(self.buf) and self.buf[self.streamed] in _WHITESPACE:
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
        self._announce()
        if not self.saw_arguments:
            self.sink.arguments("{}")
        self.sink.end(None if self.name else "the call names no function")
        self.begun = False
        self._reset_call()

    def _broken(self, problem: str) -> str | None:
        if not (self.in_call or self.begun):
            raise NotACall()
        self._announce()
        self.sink.give_up(problem)
        return ""


class NamedCallReader(_Reader):
    """The bare name, maybe the model's id, maybe a header, then the arguments (JSON, or
    Gemma 4's notation turned into JSON as it arrives), then the family's end marker."""

    def __init__(self, fmt: ToolFormat, sink: CallSink):
        super().__init__(fmt, sink)
        self.phase = "name"
        self.name = ""
        self.model_id: str | None = None
        self.value = JsonValue() if fmt.notation is ArgumentNotation.JSON else GemmaArguments()
        self.streamed = 0

    def feed(self, text: str, final: bool = False) -> str | None:
        self.buf += text
        if self.phase == "name" and not self._read_name():
            return None
        if self.phase == "id" and not self._read_id():
            return None
        if self.phase == "arguments":
            try:
                self._read_arguments()
            except ValueError as exc:
                self.sink.give_up(str(exc))
                return ""
            if not self.value.done:
                return None
            self.sink.end()
            self.phase = "after"
        return self._tail(final)

    def close(self, reason: str) -> None:
        if self.phase in ("name", "id"):
            if not self.name:
                raise NotACall()
            self.sink.begin(self.name, self.model_id)
        if self.phase != "after":
            self.sink.end(reason)

    def _read_name(self) -> bool:
        rest = self.buf[self.pos:]
        found = min(((rest.find(end), end) for end in self.fmt.name_ends if end in rest), default=None)
        if found is None:
            if len(rest) > MAX_NAME_CHARS + MAX_HEADER_CHARS:
                self.name = rest[:MAX_NAME_CHARS]
                self.sink.begin(self.name, None)
                self.sink.give_up(f"the call's name did not end within {MAX_NAME_CHARS} characters")
                self.phase = "after"
                self.buf, self.pos = "", 0
            return False
        index, end = found
        segment = rest[:index]
        if self.fmt.header_before_arguments:
            segment = re.match(r"[^\s<]*", segment).group()
        self.name = segment[:MAX_NAME_CHARS]
        self.pos += index + (0 if self.fmt.name_end_opens_arguments else len(end))
        self.phase = "id" if end == self.fmt.id_marker and end else "arguments"
        if self.phase == "arguments":
            self._begin()
        return True

    def _read_id(self) -> bool:
        rest = self.buf[self.pos:]
        index = rest.find(self.fmt.arguments_marker)
        if index < 0:
            if len(rest) > MAX_NAME_CHARS:
                self.phase = "arguments"
                self._begin()
                self.sink.give_up("the call's id did not end")
            return False
        self.model_id = rest[:index].strip()[:MAX_NAME_CHARS] or None
        self.pos += index + len(self.fmt.arguments_marker)
        self.phase = "arguments"
        self._begin()
        return True

    def _begin(self) -> None:
        self.begun = True
        self.sink.begin(self.name, self.model_id)
        self.streamed = self.pos

    def _read_arguments(self) -> None:
        if isinstance(self.value, GemmaArguments):
            fragment, self.pos = self.value.translate(self.buf, self.pos)
            if fragment:
                self.sink.arguments(fragment)
            return
        while self.pos < len(self.buf) and not self.value.done:
            if not self.value.step(self.buf[self.pos]):
                break
            self.pos += 1
        if not self.value.started:
            self.streamed = self.pos
        elif self.pos > self.streamed:
            self.sink.arguments(self.buf[self.streamed:self.pos])
            self.streamed = self.pos


class GemmaArguments:
    """Gemma 4's argument notation (`{city:<|"|>Paris<|"|>,days:3}`) written out as JSON,
    piece by piece as it arrives."""

    def __init__(self):
        self.stack: list[str] = []
        self.in_string = self.in_key = self.expect_key = False
        self.done = False

    def translate(self, buf: str, pos: int) -> tuple[str, int]:
        out = []
        while pos < len(buf) and not self.done:
            if self.in_string:
                index = buf.find(_GEMMA_QUOTE, pos)
                stop = index if index >= 0 else len(buf) - partial_suffix(buf[pos:], _GEMMA_QUOTE)
                out.append(json.dumps(buf[pos:stop], ensure_ascii=False)[1:-1])
                if index < 0:
                    return "".join(out), stop
                out.append('"')
                self.in_string, pos = False, index + len(_GEMMA_QUOTE)
                continue
            if buf.startswith(_GEMMA_QUOTE, pos):
                out.append('"')
                self.in_string, pos = True, pos + len(_GEMMA_QUOTE)
                continue
            if _GEMMA_QUOTE.startswith(buf[pos:]) and buf[pos] == "<":
                break
            out.append(self._char(buf[pos]))
            pos += 1
        return "".join(out), pos

    def _char(self, char: str) -> str:
        if self.in_key:
            if char == ":":
                self.in_key = False
                return '":'
            return json.dumps(char, ensure_ascii=False)[1:-1]
        if char in "{[":
            self.stack.append(char)
            if len(self.stack) > MAX_JSON_DEPTH:
                raise ValueError(f"the arguments are nested deeper than {MAX_JSON_DEPTH} levels")
            self.expect_key = char == "{"
            return char
        if char in "}]":
            if self.stack:
                self.stack.pop()
            self.done = not self.stack
            self.expect_key = False
            return char
        if char == ",":
            self.expect_key = bool(self.stack) and self.stack[-1] == "{"
            return char
        if self.expect_key and char not in _WHITESPACE:
            self.in_key, self.expect_key = True, False
            return '"' + json.dumps(char, ensure_ascii=False)[1:-1]
        if not self.stack:
            raise ValueError("the arguments are not an object")
        return char


class XmlCallReader(_Reader):
    """Qwen3-Coder's `<function=NAME><parameter=K>V</parameter></function>`, written out as
    a JSON object one parameter at a time: a value is JSON text when the parameter's schema
    type is not a string and the text parses, else a JSON string."""

    def __init__(self, fmt: ToolFormat, sink: CallSink, parameter_types: dict[str, dict[str, object]]):
        super().__init__(fmt, sink)
        self.types = parameter_types
        self.phase = "open"
        self.name = ""
        self.count = 0

    def feed(self, text: str, final: bool = False) -> str | None:
        self.buf += text
        while self.phase != "after":
            step = getattr(self, "_" + self.phase)()
            if step is None:
                return None
            if step is False and self.phase != "after":
                return self._malformed()
        return self._tail(final)

    def close(self, reason: str) -> None:
        if not self.begun:
            raise NotACall()
        if self.phase != "after":
            self.sink.end(reason)

    def _expect(self, marker: str) -> bool | None:
        """Skip whitespace, then consume `marker`: True, None (more text needed), False (not there)."""
        while self.pos < len(self.buf) and self.buf[self.pos] in _WHITESPACE:
            self.pos += 1
        rest = self.buf[self.pos:]
        if rest.startswith(marker):
            self.pos += len(marker)
            return True
        return None if marker.startswith(rest) else False

    def _open(self):
        found = self._expect("<function=")
        if found is False:
            raise NotACall()
        if found:
            self.phase = "name"
        return found

    def _name(self):
        rest = self.buf[self.pos:]
        index = rest.find(">")
        if index < 0:
            if len(rest) > MAX_NAME_CHARS:
                self.sink.begin(rest[:MAX_NAME_CHARS], None)
                self.sink.give_up(f"the call's name did not end within {MAX_NAME_CHARS} characters")
                self.phase, self.buf, self.pos = "after", "", 0
                return False
            return None
        self.name = rest[:index]
        self.pos += index + 1
        self.begun = True
        self.sink.begin(self.name, None)
        self.phase = "parameters"
        return True

    def _parameters(self):
        self._expect("")
        rest = self.buf[self.pos:]
        if rest.startswith("</function>"):
            self.pos += len("</function>")
            self.sink.arguments("}" if self.count else "{}")
            self.sink.end()
            self.phase = "after"
            return False
        if not rest.startswith("<parameter="):
            return None if "</function>".startswith(rest) or "<parameter=".startswith(rest) else False
        head, close = rest.find(">"), rest.find("</parameter>")
        if head < 0 or close < 0:
            return None
        key, value = rest[len("<parameter="):head], rest[head + 1:close]
        value = value[1:] if value.startswith("\n") else value
        value = value[:-1] if value.endswith("\n") else value
        self.sink.arguments(("{" if not self.count else ", ") + json.dumps(key, ensure_ascii=False) + ": "
                            + self._json_value(key, value))
        self.count += 1
        self.pos += close + len("</parameter>")
        return True

    def _json_value(self, key: str, value: str) -> str:
        kind = (self.types.get(self.name) or {}).get(key)
        if kind != "string":
            try:
                json.loads(value)
                return value.strip()
            except ValueError:
                pass
        return json.dumps(value, ensure_ascii=False)

    def _malformed(self) -> str:
        self.sink.arguments("}" if self.count else "{}")
        self.sink.end("the call's XML was not well formed")
        self.phase = "after"
        return self.buf[self.pos:]
