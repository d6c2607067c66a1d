"""Response objects (OpenAI's Responses API) and their server-sent events, for one reply.

A reply's text is one `message` output item with one `output_text` part; each tool call one
`function_call` item (`id` "fc_…", `call_id` the call's id, `arguments` its JSON text),
after the text. Streamed, the events come as OpenAI sends them, each with the next
`sequence_number` and named in the SSE `event:` field as in its `type`:

    response.created, response.in_progress              the response, in progress, no output
    response.output_item.added                          a message item (text follows)
      response.content_part.added                       its output_text part
      response.output_text.delta ...                    the text, piece by piece
      response.output_text.done, response.content_part.done, response.output_item.done
    response.output_item.added                          a function_call item (name, call_id)
      response.function_call_arguments.delta ...        its arguments, piece by piece
      response.function_call_arguments.done, response.output_item.done
    response.completed                                  the whole response, with its usage

A reply cut off at max_output_tokens ends with response.incomplete (status "incomplete",
incomplete_details.reason "max_output_tokens"); one that fails midway with response.failed,
whose response carries the error (the status line went out with the first event).
"""

from __future__ import annotations

import secrets
import time

from ..engine.tools.types import ToolCall, ToolCallDelta
from ..engine.types import ReplyStats
from .completions import Collected
from .responses import ResponsesRequest
from .shapes import event, failure, finish_reason


def item_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def usage(stats: ReplyStats) -> dict:
    """The Responses API's usage: input tokens (those the KV cache already held as cached),
    output tokens, their total; no reasoning tokens here."""
    output = stats.completion_tokens or 0
    cached = max(0, stats.prompt_tokens - stats.evaluated_prompt_tokens)
    return {"input_tokens": stats.prompt_tokens, "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": stats.prompt_tokens + output}


def status(stats: ReplyStats) -> str:
    """completed, incomplete (cut off at max_output_tokens) or failed (an error, a shutdown):
    a chat's finish reason (stop, tool_calls; length; none) in the Responses API's words."""
    reason = finish_reason(stats)
    if reason is None:
        return "failed"
    return "incomplete" if reason == "length" else "completed"


def message_item(item: str, text: str, state: str) -> dict:
    return {"id": item, "type": "message", "status": state, "role": "assistant",
            "content": [text_part(text)] if state != "in_progress" else []}


def text_part(text: str) -> dict:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def call_state(call: ToolCall) -> str:
    """A function_call item's status: "incomplete" for a call the reply ended before it did, as
    OpenAI marks an item the token limit cut (one that is whole but cannot run says so in its
    `problem`)."""
    return "completed" if call.complete else "incomplete"


def call_item(item: str, call_id: str, name: str, arguments: str, state: str, problem: str | None = None) -> dict:
    """A function_call item. A call that cannot run as written (a tool that was not offered,
    arguments cut off or failing their schema) carries `problem`, as a chat's call does."""
    wire = {"id": item, "type": "function_call", "status": state, "call_id": call_id, "name": name,
            "arguments": arguments}
    if problem is not None:
        wire["problem"] = problem
    return wire


class ResponseShape:
    """One response's id, time and request, and the output items its events have opened."""

    def __init__(self, request: ResponsesRequest, response_id: str, model_id: str, stored: bool):
        self.id = response_id
        self._stored = stored
        self.created_at = int(time.time())
        self._request = request
        self._model_id = model_id
        self._sequence = 0
        self._output: list[dict] = []  # the items begun, done or not
        self._text: list[str] | None = None  # the open message item's text, while one is open
        self._calls: dict[int, int] = {}  # a call's index in the reply -> its item's output index

    def body(self, state: str, output: list[dict], stats: ReplyStats | None = None) -> dict:
        """The Response object: as sent with the request's fields, its output, and at the
        end its usage, and why it is incomplete or failed."""
        body = {"id": self.id, "object": "response", "created_at": self.created_at, "status": state,
                "error": None, "incomplete_details": None, "model": self._model_id, "output": output,
                "usage": None, "store": self._stored, **self._request.echo}
        if stats is not None:
            body["usage"] = usage(stats)
            if state == "incomplete":
                body["incomplete_details"] = {"reason": "max_output_tokens"}
            elif state == "failed":
                body["error"] = {"code": "server_error", "message": failure(stats)}
        return body

    def whole(self, reply: Collected) -> dict:
        """A reply that was not streamed, as one Response."""
        output = [message_item(item_id("msg"), reply.text, "completed")] if reply.text or not reply.calls else []
        output += [call_item(item_id("fc"), call.id, call.name, call.arguments, call_state(call), call.problem)
                   for call in reply.calls]
        return self.body(status(reply.stats), output, reply.stats)

    # Streamed: each method gives the events to send next.

    def start(self) -> bytes:
        return (self._event("response.created", response=self.body("in_progress", []))
                + self._event("response.in_progress", response=self.body("in_progress", [])))

    def piece(self, text: str) -> bytes:
        events = b""
        if self._text is None:
            events += self._add_item(message_item(item_id("msg"), "", "in_progress"))
            events += self._event("response.content_part.added", **self._at_part(), part=text_part(""))
            self._text = []
        self._text.append(text)
        return events + self._event("response.output_text.delta", **self._at_part(), delta=text, logprobs=[])

    def call_piece(self, delta: ToolCallDelta) -> bytes:
        """A piece of a call: the first adds its item (and ends any text before it), the
        rest are argument fragments."""
        events = self._end_text()
        if delta.id is not None:
            self._calls[delta.index] = len(self._output)
            events += self._add_item(call_item(item_id("fc"), delta.id, delta.name or "", "", "in_progress"))
        output_index = self._calls[delta.index]
        if delta.arguments:
            events += self._event("response.function_call_arguments.delta", item_id=self._output[output_index]["id"],
                                  output_index=output_index, delta=delta.arguments)
        return events

    def call_done(self, call: ToolCall) -> bytes:
        """A call complete: its arguments whole, its item done."""
        output_index = self._calls[call.index]
        begun = self._output[output_index]
        item = call_item(begun["id"], call.id, call.name, call.arguments, call_state(call), call.problem)
        self._output[output_index] = item
        return (self._event("response.function_call_arguments.done", item_id=item["id"], output_index=output_index,
                            name=call.name, arguments=call.arguments)
                + self._event("response.output_item.done", output_index=output_index, item=item))

    def end(self, stats: ReplyStats) -> bytes:
        """The events after the last piece: any open text ended, then the whole response as
        completed, incomplete or failed."""
        events = self._end_text()
        state = status(stats)
        kind = {"completed": "response.completed", "incomplete": "response.incomplete"}.get(state, "response.failed")
        return events + self._event(kind, response=self.body(state, self._output, stats))

    def text(self) -> str:
        """The text so far (what is kept of a reply whose client went away)."""
        done = [part["text"] for item in self._output if item["type"] == "message" for part in item["content"]]
        return "".join(done + (self._text or []))

    def calls(self) -> list[ToolCall]:
        """The calls completed so far."""
        return [ToolCall(index, item["call_id"], item["name"], item["arguments"], item.get("problem"))
                for index, output_index in self._calls.items()
                if (item := self._output[output_index])["status"] == "completed"]

    def _end_text(self) -> bytes:
        if self._text is None:
            return b""
        text, self._text = "".join(self._text), None
        output_index = len(self._output) - 1
        item = message_item(self._output[output_index]["id"], text, "completed")
        self._output[output_index] = item
        at = {"item_id": item["id"], "output_index": output_index, "content_index": 0}
        return (self._event("response.output_text.done", **at, text=text, logprobs=[])
                + self._event("response.content_part.done", **at, part=text_part(text))
                + self._event("response.output_item.done", output_index=output_index, item=item))

    def _add_item(self, item: dict) -> bytes:
        self._output.append(item)
        return self._event("response.output_item.added", output_index=len(self._output) - 1, item=item)

    def _at_part(self) -> dict:
        output_index = len(self._output) - 1
        return {"item_id": self._output[output_index]["id"], "output_index": output_index, "content_index": 0}

    def _event(self, kind: str, **fields) -> bytes:
        data = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return f"event: {kind}\n".encode() + event(data)
