"""A model on a remote OpenAI-compatible server, as a Backend.

`RemoteBackend` streams `POST {base}/chat/completions` (server-sent events, read with
httpx-sse) and turns it into what every backend yields: pieces of text, then one ReplyStats.
The server renders the messages with its own chat template; Hearth sends role and content.

Statistics: time to first token and tokens/s are measured here, as the user sees them (the
network included); token counts come from the `usage` the server sends when asked with
`stream_options.include_usage`. A server that does not send it (llama-cpp-python's) leaves
the counts unknown (completion_tokens None, prompt_tokens 0), and tokens/s then counts the
stream's text events, which llama.cpp's and vLLM's servers send one per token.

Stopping: the cancel flag is read at every event, and a small watcher thread shuts the
connection's socket down when it is set, so Stop also works while the server is silent (a
long prompt being read, before or after it sent its headers, or a stall) and not only
between tokens. The sockets are learnt from httpcore's trace of each new connection.

Failures (errors.RemoteError): a request that cannot start raises before the first
piece (refused, 401, 404, 429, 5xx, no answer); one that breaks mid-reply ends with
StopReason.ERROR and the message in ReplyStats.error, its text so far kept.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import weakref
from collections.abc import Iterator

import httpx
from httpx_sse import EventSource, SSEError

from ...common.text import shorten
from ..backend import Backend, LoadCancelled, LoadProgress, PromptProgress, ReplyEvent, paced
from ..logprobs import LogprobsUnavailable
from ..sampling import SamplingParams
from ..templates.limits import TemplateError
from ..tools.types import PLAIN, ToolUse
from ..tools.wire import call_problem
from ..types import SERVER_TEMPLATE, DeviceInfo, ModelDescription, RemoteModel, ReplyStats, StopReason
from .errors import RemoteError, RemoteFailure, bad_response, cut, error_text, stalled, status_error, transport_error
from .http import MAX_ERROR_BODY, RemoteTimeouts, get_json, open_client, read_limited, where
from .models import parse_models
from .request import REMOTE_EXTENSION_FIELDS, REMOTE_UNSENT_FIELDS, chat_body, names_an_extension
from .tool_calls import RemoteCalls

log = logging.getLogger(__name__)

CANCEL_POLL_S = 0.05  # how soon the watcher notices Stop while the server is silent


def open_remote(source: RemoteModel, progress: LoadProgress | None = None,
                cancel: threading.Event | None = None) -> RemoteBackend:
    """A server's model as a Backend, its model list asked first (a RemoteError where the server
    is unreachable, refuses the key or lacks the model); progress says 0, then 1."""
    if progress is not None:
        progress(0.0)
    backend = RemoteBackend.open(source, cancel=cancel)
    if progress is not None:
        progress(1.0)
    return backend


class RemoteBackend(Backend):
    """One model on one server. Driven by one thread at a time, as every Backend."""

    def __init__(self, source: RemoteModel, timeouts: RemoteTimeouts = RemoteTimeouts(),
                 context_length: int | None = None):
        """No request is made here: `open` checks the model first, a test may skip that."""
        self.source = source
        self._where = where(source.server)
        self._client = open_client(source.server, timeouts)
        self._client.event_hooks["request"].append(self._trace_connections)
        self._context_length = context_length
        # Extension fields this server refused by name; from then on they are not sent.
        self.ignored_fields: tuple[str, ...] = ()
        # Every socket this client opened and has not closed: the one a reply is read from is
        # among them (idle ones only reconnect if Stop shuts them down too).
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    @classmethod
    def open(cls, source: RemoteModel, timeouts: RemoteTimeouts = RemoteTimeouts(),
             cancel: threading.Event | None = None) -> "RemoteBackend":
        """Ask the server for its models and check it has this one, so an unreachable server,
        a wrong key or an unknown model is said when the model is chosen, not at the first
        message. Raises RemoteError, or LoadCancelled if `cancel` was set meanwhile."""
        backend = cls(source, timeouts)
        cancel = cancel or threading.Event()
        watcher = _StopWatcher(backend._sockets, cancel, backend._client)
        try:
            try:
                models = parse_models(get_json(backend._client, source.server, "models"), backend._where)
            except RemoteError:
                if not cancel.is_set():
                    raise
            finally:
                watcher.stop()
            if cancel.is_set():
                raise LoadCancelled(f"Connecting to {backend._where} was cancelled.")
            listed = next((model for model in models if model.model_id == source.model_id), None)
            if listed is None:
                offered = ", ".join(f"“{model.name}”" for model in models[:5]) or "none"
                more = f" and {len(models) - 5} more" if len(models) > 5 else ""
                raise RemoteError(RemoteFailure.UNKNOWN_MODEL,
                                  f"{backend._where} has no model “{shorten(source.model_id)}”. "
                                  f"It offers {offered}{more}.")
        except BaseException:
            backend.close()
            raise
        backend._context_length = listed.context_length
        return backend

    def describe(self) -> ModelDescription:
        """The model as loaded now: after a server refused the extension fields, they are
        among its `unsent_fields` (the worker may describe the model again after a reply)."""
        return ModelDescription(self.source, None, DeviceInfo.remote(self.source.server), self._context_length,
                                SERVER_TEMPLATE, REMOTE_UNSENT_FIELDS + self.ignored_fields)

    def set_template_override(self, source: str | None) -> str:
        """A remote model always uses the server's chat template (Hearth sends messages, not a
        prompt), so an override cannot apply: refused with a message saying so."""
        if source is not None:
            raise TemplateError(f"{self._where} applies its own chat template to a remote model; "
                                "Hearth's template override does not apply to it.")
        return SERVER_TEMPLATE

    def close(self) -> None:
        self._client.close()

    # --- a reply -------------------------------------------------------------------------------

    def stream(
        self,
        messages: list[dict],
        params: SamplingParams = SamplingParams(),
        cancel: threading.Event | None = None,
        prompt_progress: PromptProgress | None = None,
        conversation_id: int | None = None,
        tools: ToolUse = PLAIN,
        logprobs: int | None = None,
        text_interval_s: float = 0.0,
    ) -> Iterator[ReplyEvent]:
        """Send the request and return the reply's stream; raises RemoteError before the first
        piece if the server does not start one. `prompt_progress` is never called: a server
        does not say how far it has read a prompt. `conversation_id` is not used: whatever a
        server keeps between requests is its own business.

        `logprobs` is refused (LogprobsUnavailable) rather than passed on: servers differ in
        whether they report them and in which distribution (llama.cpp's reports the sampler's
        by default, OpenAI the model's), so what came back could not be called one thing."""
        if logprobs is not None:
            raise LogprobsUnavailable("logprobs: this model runs on another server, and Hearth does not ask "
                                      "a remote model's server for log-probabilities.")
        cancel = cancel or threading.Event()
        seed = params.resolved_seed()
        stats = ReplyStats(seed=seed, completion_tokens=None)
        watcher = _StopWatcher(self._sockets, cancel, self._client)
        started = time.perf_counter()
        try:
            response = self._send(messages, params, seed, tools)
        except RemoteError:
            watcher.stop()
            if cancel.is_set():  # Stop while the server had not answered yet
                return _stopped(stats)
            raise
        except BaseException:
            watcher.stop()
            raise
        calls = RemoteCalls(lambda name, arguments: call_problem(tools, name, arguments))
        return paced(self._read(response, params, stats, started, cancel, watcher, calls), text_interval_s)

    def _send(self, messages: list[dict], params: SamplingParams, seed: int, tools: ToolUse) -> httpx.Response:
        """POST the request and return the open response of a stream that began."""
        extensions = not self.ignored_fields
        body = chat_body(self.source.model_id, messages, params, seed, extensions, tools)
        request = self._client.build_request(
            "POST", "chat/completions", json=body, headers={"Accept": "text/event-stream", "Cache-Control": "no-store"})
        try:
            response = self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise transport_error(exc, self._where) from None
        if response.status_code != 200:
            error = self._refusal(response)
            if error.status == 400 and extensions and names_an_extension(error.server_message):
                log.info("%s refuses llama.cpp's sampling fields; sending without them", self._where)
                self.ignored_fields = REMOTE_EXTENSION_FIELDS
                return self._send(messages, params, seed, tools)
            raise error
        kind = response.headers.get("content-type", "").partition(";")[0].strip()
        if kind != "text/event-stream":
            response.close()
            raise bad_response(self._where, f"a {shorten(kind, 40) or 'untyped'} answer instead of an event stream")
        return response

    def _trace_connections(self, request: httpx.Request) -> None:
        """An httpx request hook: every request this client sends (the model list's too, whose
        connection a reply may reuse) reports the connections it opens to `_trace`."""
        request.extensions["trace"] = self._trace

    def _trace(self, event: str, info: dict) -> None:
        """httpcore's trace hook: note the socket of each connection it opens."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                self._sockets.add(sock)

    def _refusal(self, response: httpx.Response) -> RemoteError:
        try:
            body = read_limited(response, MAX_ERROR_BODY)
        except httpx.TransportError:
            body = ""
        finally:
            response.close()
        return status_error(response, self._where, body, self.source.model_id)

    def _read(self, response: httpx.Response, params: SamplingParams, stats: ReplyStats, started: float,
              cancel: threading.Event, watcher: _StopWatcher, calls: RemoteCalls) -> Iterator[ReplyEvent]:
        reply = _ReplyTally()
        try:
            for event in EventSource(response).iter_sse():
                if cancel.is_set():
                    break
                if event.data == "[DONE]":
                    reply.done = True
                    break
                if not event.data:
                    continue
                text, call_pieces = reply.take(_chunk(event.data, self._where))
                if text:
                    yield text
                yield from calls.take(call_pieces)
        except RemoteError as exc:
            reply.error = exc
        except httpx.ReadTimeout:
            reply.error = stalled(self._where, mid_reply=reply.pieces > 0)
        except httpx.TransportError as exc:  # cut off mid-body, reset, or our own Stop
            reply.error = cut(self._where) if isinstance(exc, httpx.RemoteProtocolError) else transport_error(exc, self._where)
        except (SSEError, UnicodeDecodeError, httpx.HTTPError) as exc:  # e.g. a body that fails to decompress
            reply.error = bad_response(self._where, shorten(str(exc) or type(exc).__name__))
        finally:
            watcher.stop()
            response.close()
        reply.fill(stats, params, started, cancel.is_set(), self._where)
        if calls:
            cut_short = None if stats.stop_reason in (StopReason.TOOL_CALLS, StopReason.END_OF_TURN) else (
                stats.error or stats.stop_reason.words)
            yield from calls.complete(cut_short)
            if stats.stop_reason is StopReason.END_OF_TURN:
                stats.stop_reason = StopReason.TOOL_CALLS  # a server that ends calls with "stop"
        yield stats


def _stopped(stats: ReplyStats) -> Iterator[ReplyStats]:
    stats.stop_reason = StopReason.CANCELLED
    yield stats


def _chunk(data: str, where: str) -> dict:
    """One event's JSON object; raises RemoteError for anything else, or for an error the
    server reports inside the stream."""
    try:
        chunk = json.loads(data)
    except ValueError:
        raise bad_response(where, f"an event that is not JSON: {shorten(data, 60)!r}") from None
    if not isinstance(chunk, dict):
        raise bad_response(where, "an event that is not a JSON object")
    said = error_text(chunk)
    if said is not None:
        raise RemoteError(RemoteFailure.SERVER_ERROR, f"{where} reported an error mid-reply: {shorten(said, 200)}",
                          server_message=shorten(said, 200))
    return chunk


class _ReplyTally:
    """What the stream has said so far: the timing of its text, why it finished, its usage."""

    def __init__(self):
        self.pieces = 0
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.finish_reason: str | None = None
        self.stop_hint = None  # vLLM's choices[].stop_reason: the stop string that matched
        self.usage: dict | None = None
        self.done = False  # "[DONE]" arrived
        self.error: RemoteError | None = None

    def take(self, chunk: dict) -> tuple[str, object]:
        """The text and the tool-call pieces in one chunk (the first choice's delta), noting
        its finish and usage."""
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]
            self.stop_hint = choice.get("stop_reason")
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        text = delta.get("content")
        text = text if isinstance(text, str) else ""
        call_pieces = delta.get("tool_calls")
        if not text and not call_pieces:
            return "", None
        self.last_at = time.perf_counter()
        if self.first_at is None:
            self.first_at = self.last_at
        self.pieces += 1
        return text, call_pieces

    def fill(self, stats: ReplyStats, params: SamplingParams, started: float, cancelled: bool, where: str) -> None:
        stats.stop_reason = self._stop_reason(params, cancelled)
        if stats.stop_reason is StopReason.ERROR:
            stats.error = str(self._problem(where))
        usage = self.usage or {}
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if _count(prompt):
            stats.prompt_tokens = stats.evaluated_prompt_tokens = prompt
        if _count(completion):
            stats.completion_tokens = completion
        if self.first_at is not None:
            stats.ttft_s = self.first_at - started
        tokens = stats.completion_tokens if stats.completion_tokens is not None else self.pieces
        if self.first_at is not None and self.last_at is not None and tokens > 1 and self.last_at > self.first_at:
            stats.tokens_per_s = (tokens - 1) / (self.last_at - self.first_at)

    def _stop_reason(self, params: SamplingParams, cancelled: bool) -> StopReason:
        if cancelled:
            return StopReason.CANCELLED
        if self.error is not None or self.finish_reason in (None, "content_filter"):
            return StopReason.ERROR
        if self.finish_reason == "length":
            return StopReason.LENGTH
        if self.finish_reason == "stop" and isinstance(self.stop_hint, str) and self.stop_hint in params.stop:
            return StopReason.STOP_STRING
        if self.finish_reason == "tool_calls":
            return StopReason.TOOL_CALLS
        return StopReason.END_OF_TURN  # "stop", or a server's own word

    def _problem(self, where: str) -> RemoteError:
        if self.error is not None:
            return self.error
        if self.finish_reason == "content_filter":
            return RemoteError(RemoteFailure.REJECTED, f"{where} withheld the rest of the reply (its content filter).")
        return cut(where)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 40


class _StopWatcher:
    """Shuts the client's sockets down when `cancel` is set, so a read blocked on a silent
    server returns at once; the reader then sees the flag and ends the reply as stopped.
    Closing the response from this thread instead would race the reader inside httpcore;
    shutdown() only makes the socket's pending and next reads return end-of-stream.

    One watcher per reply, from before the request is sent until the reply's stream ends (or
    the client is closed, should a stream be dropped unread)."""

    def __init__(self, sockets: weakref.WeakSet, cancel: threading.Event, client: httpx.Client):
        self._sockets = sockets
        self._cancel = cancel
        self._client = client
        self._finished = False
        self._lock = threading.Lock()  # no shutdown once the reader has finished with the socket
        threading.Thread(target=self._watch, name="hearth-remote-stop", daemon=True).start()

    def _watch(self) -> None:
        while not (self._finished or self._client.is_closed):
            if self._cancel.wait(CANCEL_POLL_S):
                with self._lock:
                    if not self._finished:
                        for sock in list(self._sockets):
                            _shut_down(sock)
                return

    def stop(self) -> None:
        """The reply is over; the thread ends within CANCEL_POLL_S without touching a socket."""
        with self._lock:
            self._finished = True


def _shut_down(sock: socket.socket) -> None:
    if sock.fileno() < 0:
        return  # closed, or handed over to its TLS wrapper (which is in the set too)
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the raw socket, under TLS too
    except OSError:
        pass  # the server closed it already
