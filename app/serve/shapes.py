"""OpenAI's reply bodies and server-sent-event chunks, for chats and raw completions.

A stream is `data: {chunk}` events and a last `data: [DONE]`. A chat's first chunk carries
the assistant role, each piece of text one chunk, each piece of a tool call one chunk (its
first with the call's index, id and name, the rest argument fragments, as OpenAI streams
them), the last one the finish reason; with
`stream_options.include_usage` one more chunk follows with empty `choices` and the `usage`,
as OpenAI sends it. A reply that fails midway ends with an `error` event instead (the status
line went out with the first chunk), which OpenAI's clients raise as an APIError.

With n choices, each choice's chunks come in turn (its own role chunk, pieces and finish
chunk, all with its `index`), and the usage (prompt tokens once, completion tokens summed, as
OpenAI counts them) after the last. With logprobs, a chunk of text carries the tokens whose
text it completes, and the finish chunk any the text did not show (logprob_shapes.py).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator, Sequence

from ..engine.logprobs import TokenLogprob
from ..engine.tools.types import ToolCall, ToolCallDelta
from ..engine.types import ReplyStats, StopReason
from .completions import ChoiceEnd, Collected, Event
from .logprob_shapes import LegacyOffsets, chat_logprobs

DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no cache or proxy holds a stream back
SHUT_DOWN = "Hearth stopped serving before the reply was finished."
TEXT_MARK = "\x00text\x00"  # a text chunk's text while the bytes around it are made (JSON escapes it)
# Made once: json.dumps with these arguments builds an encoder for every chunk.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


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


def usage(*choices: ReplyStats) -> dict:
    """The token counts of a request's choices: the prompt once (every choice reads the same
    one), the completions summed."""
    prompt = choices[0].prompt_tokens
    completion = sum(stats.completion_tokens or 0 for stats in choices)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def event(data: dict) -> bytes:
    return b"data: " + _ENCODE(data).encode("utf-8") + b"\n\n"


def error_event(message: str) -> bytes:
    return event({"error": {"message": message, "type": "server_error", "param": None, "code": None}})


class _Shape:
    """One reply's id, time and model, shared by all its chunks and choices."""

    object_name: str  # a whole reply's "object"
    chunk_object: str  # a stream chunk's
    id_prefix: str

    def __init__(self, model_id: str, include_usage: bool, logprobs: bool = False):
        self.id = self.id_prefix + secrets.token_hex(12)
        self.created = int(time.time())
        self.model_id = model_id
        self.include_usage = include_usage
        self.logprobs = logprobs  # asked for: each choice carries them (else "logprobs": null)
        self._around_text: dict[int, tuple[bytes, bytes]] = {}  # choice -> a text chunk's bytes before and after its text

    def _chunk(self, choices: list[dict], **extra) -> bytes:
        return event({"id": self.id, "object": self.chunk_object, "created": self.created,
                      "model": self.model_id, "choices": choices, **extra})

    async def stream(self, events: AsyncIterator[Event]) -> AsyncIterator[bytes]:
        """The chunks of a reply's events, from its first to its ReplyStats: each choice's in
        turn, the tokens' log-probabilities held until the text they complete goes out."""
        choice, ended, tokens = 0, [], []
        if start := self.start(choice):  # a chat's role chunk; a completion has none
            yield start
        async for item in events:
            if isinstance(item, TokenLogprob):
                tokens.append(item)
            elif isinstance(item, str):
                yield self.piece(choice, item, tokens)
                tokens = []
            elif isinstance(item, ToolCallDelta):
                yield self.call_piece(choice, item)
            elif isinstance(item, ChoiceEnd):
                yield self._chunk([self._choice_end(choice, finish_reason(item.stats), tokens)])
                ended.append(item.stats)
                choice, tokens = choice + 1, []
                if start := self.start(choice):
                    yield start
            elif isinstance(item, ToolCall) and item.problem is not None:
                yield self.call_problem(choice, item)
            elif isinstance(item, ReplyStats):
                yield self.end(choice, item, tokens, ended)
            # a complete ToolCall without a problem: its pieces went out already

    def piece(self, choice: int, text: str, tokens: Sequence[TokenLogprob] = ()) -> bytes:
        """A chunk of text. Without logprobs every text chunk of a choice is the same bytes around
        its text, so those are made once and only the text is encoded for each token: the
        server's CPU per token is shared with the decoding threads (#31), and a whole chunk
        made anew costs about 30 µs more (cold caches, right after a forward pass)."""
        if self.logprobs:
            return self._chunk([self._text_choice(choice, text, self._logprobs(tokens))])
        around = self._around_text.get(choice)
        if around is None:
            made = self._chunk([self._text_choice(choice, TEXT_MARK, None)])
            head, _, tail = made.rpartition(_ENCODE(TEXT_MARK).encode("utf-8"))  # only fixed fields follow the text
            around = self._around_text[choice] = (head, tail)
        return around[0] + _ENCODE(text).encode("utf-8") + around[1]

    def end(self, choice: int, stats: ReplyStats, tokens: Sequence[TokenLogprob] = (),
            ended: Sequence[ReplyStats] = ()) -> bytes:
        """The chunks after the last piece: the finish reason, the usage if asked, [DONE].
        `ended`: the choices before this one, for the usage."""
        reason = finish_reason(stats)
        if reason is None:
            return error_event(failure(stats))
        last = self._chunk([self._choice_end(choice, reason, tokens)])
        if self.include_usage:
            last += self._chunk([], usage=usage(*ended, stats))
        return last + DONE

    def _text_choice(self, choice: int, text: str, logprobs: dict | None) -> dict:
        raise NotImplementedError

    def _choice_end(self, choice: int, reason: str, tokens: Sequence[TokenLogprob]) -> dict:
        raise NotImplementedError


class ChatShape(_Shape):
    object_name = "chat.completion"
    chunk_object = "chat.completion.chunk"
    id_prefix = "chatcmpl-"

    def _logprobs(self, tokens: Sequence[TokenLogprob]) -> dict | None:
        """A chunk's: its tokens, where it has any (else null, as OpenAI's role chunk has)."""
        return chat_logprobs(tokens) if self.logprobs and tokens else None

    def start(self, choice: int) -> bytes:
        return self._chunk([{"index": choice, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                             "finish_reason": None}])

    def _text_choice(self, choice: int, text: str, logprobs: dict | None) -> dict:
        return {"index": choice, "delta": {"content": text}, "logprobs": logprobs, "finish_reason": None}

    def call_piece(self, choice: int, delta: ToolCallDelta) -> bytes:
        """A piece of a tool call: the first names it, the rest carry argument text."""
        call: dict = {"index": delta.index}
        if delta.id is not None:
            call.update(id=delta.id, type="function")
        function = {"arguments": delta.arguments}
        if delta.name is not None:
            function = {"name": delta.name, **function}
        call["function"] = function
        return self._chunk([{"index": choice, "delta": {"tool_calls": [call]}, "logprobs": None,
                             "finish_reason": None}])

    def call_problem(self, choice: int, call: ToolCall) -> bytes:
        """Why a streamed call cannot run as written, once it is complete: one more piece of it
        with no argument text and `problem` beside OpenAI's fields (wire_call's, streamed)."""
        piece = {"index": call.index, "function": {"arguments": ""}, "problem": call.problem}
        return self._chunk([{"index": choice, "delta": {"tool_calls": [piece]}, "logprobs": None,
                             "finish_reason": None}])

    def _choice_end(self, choice: int, reason: str, tokens: Sequence[TokenLogprob]) -> dict:
        return {"index": choice, "delta": {}, "logprobs": self._logprobs(tokens), "finish_reason": reason}

    def whole(self, choices: Sequence[Collected]) -> dict:
        return {"id": self.id, "object": self.object_name, "created": self.created, "model": self.model_id,
                "choices": [self._whole_choice(index, reply) for index, reply in enumerate(choices)],
                "usage": usage(*(reply.stats for reply in choices))}

    def _whole_choice(self, index: int, reply: Collected) -> dict:
        message: dict = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["content"] = reply.text or None  # OpenAI's form of a reply that is only calls
            message["tool_calls"] = [wire_call(call) for call in reply.calls]
        return {"index": index, "message": message,
                "logprobs": chat_logprobs(reply.logprobs) if self.logprobs else None,
                "finish_reason": finish_reason(reply.stats)}


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

    def start(self, choice: int) -> bytes:
        """Nothing to send (a completion has no role chunk); the choice's text offsets begin."""
        self._offsets = LegacyOffsets()
        return b""

    def _logprobs(self, tokens: Sequence[TokenLogprob]) -> dict | None:
        return self._offsets.logprobs(tokens) if self.logprobs else None

    def _text_choice(self, choice: int, text: str, logprobs: dict | None) -> dict:
        return {"index": choice, "text": text, "logprobs": logprobs, "finish_reason": None}

    def _choice_end(self, choice: int, reason: str, tokens: Sequence[TokenLogprob]) -> dict:
        return {"index": choice, "text": "", "logprobs": self._logprobs(tokens), "finish_reason": reason}

    def whole(self, choices: Sequence[Collected]) -> dict:
        return {"id": self.id, "object": self.object_name, "created": self.created, "model": self.model_id,
                "choices": [{"index": index, "text": reply.text,
                             "logprobs": LegacyOffsets().logprobs(reply.logprobs) if self.logprobs else None,
                             "finish_reason": finish_reason(reply.stats)} for index, reply in enumerate(choices)],
                "usage": usage(*(reply.stats for reply in choices))}
