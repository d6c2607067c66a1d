"""The readers of calls written as a bare name and then the arguments (JSON, or Gemma 4's
notation turned into JSON as it arrives), and of Qwen3-Coder's XML calls."""

from __future__ import annotations

import json
import re

from .call_readers import (
    MAX_JSON_DEPTH,
    MAX_NAME_CHARS,
    WHITESPACE,
    CallSink,
    JsonValue,
    NotACall,
    Reader,
    partial_suffix,
)
from .formats import GEMMA_QUOTE, ArgumentNotation, ToolFormat

MAX_HEADER_CHARS = 128  # gpt-oss: the channel header between a call's name and its arguments


class NamedCallReader(Reader):
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
        if not segment.strip():
            raise NotACall()  # a call that names no function is the reply's text (as in call_readers)
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
                index = buf.find(GEMMA_QUOTE, pos)
                stop = index if index >= 0 else len(buf) - partial_suffix(buf[pos:], GEMMA_QUOTE)
                out.append(json.dumps(buf[pos:stop], ensure_ascii=False)[1:-1])
                if index < 0:
                    return "".join(out), stop
                out.append('"')
                self.in_string, pos = False, index + len(GEMMA_QUOTE)
                continue
            if buf.startswith(GEMMA_QUOTE, pos):
                out.append('"')
                self.in_string, pos = True, pos + len(GEMMA_QUOTE)
                continue
            if GEMMA_QUOTE.startswith(buf[pos:]) and buf[pos] == "<":
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
        if self.expect_key and char not in WHITESPACE:
            self.in_key, self.expect_key = True, False
            return '"' + json.dumps(char, ensure_ascii=False)[1:-1]
        if not self.stack:
            raise ValueError("the arguments are not an object")
        return char


class XmlCallReader(Reader):
    """Qwen3-Coder's `<function=NAME><parameter=K>V</parameter></function>`, written out as
    a JSON object one parameter at a time: a value is JSON text when the parameter's schema
    type is not a string and the text parses, else a JSON string."""

    def __init__(self, fmt: ToolFormat, sink: CallSink, parameter_types: dict[str, dict[str, object]]):
        super().__init__(fmt, sink)
        self.types = parameter_types
        self.phase = "open"
        self.name = ""
        self.count = 0
        self._searched = 0  # where the search for the open parameter's closing tag goes on from

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
        while self.pos < len(self.buf) and self.buf[self.pos] in WHITESPACE:
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
        """One parameter, once its closing tag has come. The search for that tag goes on from
        where the last piece's search stopped (`_searched`), not from the parameter's start:
        a long value streamed a few characters at a time would otherwise be scanned again at
        every piece."""
        while self.pos < len(self.buf) and self.buf[self.pos] in WHITESPACE:
            self.pos += 1
        buf, pos = self.buf, self.pos
        if buf.startswith("</function>", pos):
            self.pos += len("</function>")
            self.sink.arguments("}" if self.count else "{}")
            self.sink.end()
            self.phase = "after"
            return False
        if not buf.startswith("<parameter=", pos):
            start = buf[pos:pos + len("</function>")]
            return None if "</function>".startswith(start) or "<parameter=".startswith(start) else False
        head = buf.find(">", pos)
        close = buf.find("</parameter>", max(head, self._searched)) if head >= 0 else -1
        if close < 0:
            self._searched = max(pos, len(buf) - len("</parameter>") + 1)
            return None
        key, value = buf[pos + len("<parameter="):head], buf[head + 1:close]
        value = value[1:] if value.startswith("\n") else value
        value = value[:-1] if value.endswith("\n") else value
        self.sink.arguments(("{" if not self.count else ", ") + json.dumps(key, ensure_ascii=False) + ": "
                            + self._json_value(key, value))
        self.count += 1
        self.pos, self._searched = close + len("</parameter>"), 0
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
