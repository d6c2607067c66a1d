"""OpenAI's reply bodies and server-sent-event chunks, for chats and raw completions.

A stream is `data: {chunk}` events and a last `data: [DONE]`. A chat's first chunk carries
the assistant role, each piece of text one chunk, each piece of a tool call one chunk (its
first with the call's index, id and name, the rest argument fragments, as OpenAI streams
them), the last one the finish reason; with
`stream_options.include_usage` one more chunk follows with empty `choices` and the `usage`,
as OpenAI sends it. A reply that fails midway ends with an `error` event instead (the status
line went out with the first chunk), which OpenAI's clients raise as an APIError.
"""

from __future__ import annotations

import json
import secrets
import time

from ..engine.tools.types import ToolCall, ToolCallDelta
from ..engine.types import ReplyStats, StopReason
from .completions import Collected

DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no cache or proxy holds a stream back
SHUT_DOWN = "Hearth stopped serving before the reply was finished."


def finish_reason(stats: ReplyStats) -> str | None:
    """OpenAI's finish reason; None for a reply that did not finish (an error, a shutdown)."""
    if stats.stop_reason in (StopReason.END_OF_TURN, StopReason.STOP_STRING):
        return "stop"
    if stats.stop_reason is StopReason.TOOL_CALLS:
        return "tool_calls"
    if stats.stop_reason is StopReason.LENGTH:
        return "length"
    return None


def failure(stats: ReplyStats) -> str:
    """What to tell a client whose reply did not finish."""
    return stats.error or SHUT_DOWN


def usage(stats: ReplyStats) -> dict:
    completion = stats.completion_tokens or 0
    return {"prompt_tokens": stats.prompt_tokens, "completion_tokens": completion,
            "total_tokens": stats.prompt_tokens + completion}


def event(data: dict) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"


def error_event(message: str) -> bytes:
    return event({"error": {"message": message, "type": "server_error", "param": None, "code": None}})


class _Shape:
    """One reply's id, time and model, shared by all its chunks."""

    object_name: str  # a whole reply's "object"
    chunk_object: str  # a stream chunk's
    id_prefix: str

    def __init__(self, model_id: str, include_usage: bool):
        self.id = self.id_prefix + secrets.token_hex(12)
        self.created = int(time.time())
        self.model_id = model_id
        self.include_usage = include_usage

    def _chunk(self, choices: list[dict], **extra) -> bytes:
        return event({"id": self.id, "object": self.chunk_object, "created": self.created,
                      "model": self.model_id, "choices": choices, **extra})

    def end(self, stats: ReplyStats) -> bytes:
        """The chunks after the last piece: the finish reason, the usage if asked, [DONE]."""
        reason = finish_reason(stats)
        if reason is None:
            return error_event(failure(stats))
        last = self._chunk([self._choice_end(reason)])
        if self.include_usage:
            last += self._chunk([], usage=usage(stats))
        return last + DONE

    def _choice_end(self, reason: str) -> dict:
        raise NotImplementedError


class ChatShape(_Shape):
    object_name = "chat.completion"
    chunk_object = "chat.completion.chunk"
    id_prefix = "chatcmpl-"

    def start(self) -> bytes:
        return self._chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                             "finish_reason": None}])

    def piece(self, text: str) -> bytes:
        return self._chunk([{"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}])

    def call_piece(self, delta: ToolCallDelta) -> bytes:
        """A piece of a tool call: the first names it, the rest carry argument text."""
        call: dict = {"index": delta.index}
        if delta.id is not None:
            call.update(id=delta.id, type="function")
        function = {"arguments": delta.arguments}
        if delta.name is not None:
            function = {"name": delta.name, **function}
        call["function"] = function
        return self._chunk([{"index": 0, "delta": {"tool_calls": [call]}, "logprobs": None, "finish_reason": None}])

    def _choice_end(self, reason: str) -> dict:
        return {"index": 0, "delta": {}, "logprobs": None, "finish_reason": reason}

    def whole(self, reply: Collected) -> dict:
        message: dict = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["content"] = reply.text or None  # OpenAI's form of a reply that is only calls
            message["tool_calls"] = [wire_call(call) for call in reply.calls]
        return {"id": self.id, "object": self.object_name, "created": self.created, "model": self.model_id,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": finish_reason(reply.stats)}],
                "usage": usage(reply.stats)}


def wire_call(call: ToolCall) -> dict:
    """A complete call as OpenAI sends it. A call that cannot run as written (a tool that was
    not offered, arguments cut off or failing their schema) carries `problem` beside the
    standard fields: clients ignore what they do not know, and nobody is told it is valid."""
    wire = call.to_openai()
    if call.problem is not None:
        wire["problem"] = call.problem
    return wire


class CompletionShape(_Shape):
    object_name = "text_completion"
    chunk_object = "text_completion"  # OpenAI's completion chunks are named as whole replies
    id_prefix = "cmpl-"

    def start(self) -> bytes:
        return b""

    def piece(self, text: str) -> bytes:
        return self._chunk([{"index": 0, "text": text, "logprobs": None, "finish_reason": None}])

    def _choice_end(self, reason: str) -> dict:
        return {"index": 0, "text": "", "logprobs": None, "finish_reason": reason}

    def whole(self, reply: Collected) -> dict:
        return {"id": self.id, "object": self.object_name, "created": self.created, "model": self.model_id,
                "choices": [{"index": 0, "text": reply.text, "logprobs": None,
                             "finish_reason": finish_reason(reply.stats)}],
                "usage": usage(reply.stats)}
