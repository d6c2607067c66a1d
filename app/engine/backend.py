"""The seam between Hearth and whatever runs a model.

Everything above the engine (the worker thread, the owner objects, the window, a future local
API server) talks to a `Backend`: one loaded model that describes itself, streams replies to a
conversation and closes. There are two implementations: `generator.Engine` on llama.cpp, for
a GGUF file (`LocalModel`), and `remote.RemoteBackend`, for a model on an OpenAI-compatible
server (`RemoteModel`); they fit without any widget knowing the difference. That is why the interface is phrased in what a chat needs
(messages in, text chunks and typed statistics out, a cancel flag) and not in llama.cpp's
terms (tokens, batches, KV cache), and why `open_backend` is the only place that knows which
implementation a source needs (it lives in engine/opening.py, so that this interface imports
neither implementation and neither implementation imports its opener).

Stopping is the cancel `threading.Event` passed to `stream`: set from any thread, checked
between tokens, so a reply can be stopped while the thread that runs it is busy.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, runtime_checkable

from .kv.cache import SavedStates
from .logprobs import TokenLogprob
from .sampling import SamplingParams
from .tools.types import PLAIN, ToolCall, ToolCallDelta, ToolUse
from .types import DeviceReport, LoadOptions, ModelDescription, ModelSource, ReplyStats

ReplyEvent = str | TokenLogprob | ToolCallDelta | ToolCall | ReplyStats  # what a reply's stream yields
LoadProgress = Callable[[float], None]  # 0..1 while the model loads
PromptProgress = Callable[[int, int], None]  # prompt tokens read so far, of how many


class LoadCancelled(Exception):
    """The user cancelled loading a model."""


class BackendUnavailable(Exception):
    """The backend cannot answer now but will soon (its process is being started again): a
    server answers 503, for the client to try again."""

    @classmethod
    def stopped(cls, why: str) -> BackendUnavailable:
        """The model's process died (`why`, as engine/process says it) and is being started again."""
        return cls(f"The model's process stopped ({why}) and is being started again; try again in a few seconds.")


class Backend(ABC):
    """One loaded model, driven by one thread at a time."""

    @abstractmethod
    def describe(self) -> ModelDescription:
        """What is loaded and on what, for the status bar, the panels and the records."""

    @abstractmethod
    def stream(
        self,
        messages: list[dict],
        params: SamplingParams,
        cancel: threading.Event,
        prompt_progress: PromptProgress | None = None,
        conversation_id: int | None = None,
        tools: ToolUse = PLAIN,
        logprobs: int | None = None,
        text_interval_s: float = 0.0,
    ) -> Iterator[ReplyEvent]:
        """Yield the reply's text in pieces, then exactly one ReplyStats; never raise mid-reply.

        `messages` are {"role", "content"} dicts, system prompt first. Errors that prevent the
        reply from starting (a template that fails, a conversation that cannot fit) raise
        before the first piece, so the caller can tell "could not start" from "stopped". When
        `cancel` is set the reply ends at the next token with StopReason.CANCELLED, its text so
        far kept. `prompt_progress` is called while a long prompt is read, where reading it
        takes long enough for a person to notice. `conversation_id` names the stored
        conversation the reply belongs to, where there is one: a backend may keep work per
        conversation (the Engine's saved KV state).

        `tools`: the tools the model may call and the shape its reply must take (engine/tools).
        A call the model makes comes as `ToolCallDelta`s while it is written, then one complete
        `ToolCall` (with its `problem`, if it cannot run as written); the ReplyStats then says
        StopReason.TOOL_CALLS. A tool list or schema the backend cannot use raises ToolsError
        before the first piece. With the default (PLAIN) only text and the ReplyStats come.

        `logprobs`: None (the default) asks for nothing, and nothing comes. A count asks for a
        `TokenLogprob` per token, with that many alternatives (engine/logprobs.py), each just
        before the text it completes; a backend that cannot say raises LogprobsUnavailable
        before the first piece. It is a request's question, not a sampling setting: it is
        not stored with the settings nor shown in the parameters panel, and only the server
        asks it, so the window's and the command line's replies carry no such events.

        `text_interval_s`: how often the caller takes text. A piece that comes sooner than that
        after the last one given waits, joined to the pieces after it (`paced`): the window shows
        text 25 times a second, and a model writing 120 tokens a second would otherwise wake its
        threads for each one, on cores the model needs (#31). 0 (the default) gives each piece
        as it comes, as the server and the command line take them.

        The ReplyStats is the stream's last act, not just its last item: consumers stop when
        it comes and never ask for another (the window's worker, the server's run_job), so
        whatever must happen when a reply ends (recording it, freeing what it held) happens
        before the ReplyStats is yielded; code after that yield never runs. Consumers close
        the stream at that point (`closing_reply`), so that a generator's `finally`
        runs at once, on the thread that owns the backend, not whenever it is collected.
        """

    def prepare(self, conversation_id: int | None) -> None:
        """The user opened this conversation (None: none is open): get ready to answer in it,
        keeping what makes the one left quick to come back to (the Engine saves the KV state
        of the one it leaves and restores this one's). Nothing by default."""

    def forget_state(self, conversation_id: int) -> None:
        """The conversation was deleted: drop whatever was kept for it. Nothing by default."""

    def saved_states_changed(self, states: SavedStates, cleared: bool) -> None:
        """The user changed the saved KV states' budgets (`states`), or cleared them all, in the
        StateCache this backend was opened with. Nothing by default: an in-process engine holds
        that very cache; a process of its own (engine/process) holds a copy, told here."""

    def when_gone(self, callback: Callable[[str], None]) -> None:
        """Call `callback(why)`, from any thread, if the backend stops working by itself (the
        process running its model died). Never, by default: an in-process engine that dies takes
        its caller with it, and a server's failures are each request's."""

    def devices(self) -> DeviceReport | None:
        """What llama.cpp sees of the GPUs now, where this backend can say (the engine's process,
        after its own model took its share); None by default."""
        return None

    @abstractmethod
    def set_template_override(self, source: str | None) -> str:
        """Use this chat template from the next reply (None: the model's own); return the name
        of the template now in use. Raises TemplateError, keeping the old one, if it fails."""

    @abstractmethod
    def close(self) -> None:
        """Free the model. The backend is not used again."""


@contextlib.contextmanager
def closing_reply(stream: Iterable[ReplyEvent]) -> Iterator[Iterator[ReplyEvent]]:
    """Read a Backend's stream, and close it when the reading ends (at its ReplyStats, or on a
    failure): a generator's `finally` then runs here, on the backend's own thread, not later
    wherever the abandoned generator happens to be collected."""
    try:
        yield iter(stream)
    finally:
        close = getattr(stream, "close", None)
        if callable(close):
            close()


def paced(events: Iterator[ReplyEvent], interval_s: float) -> Iterator[ReplyEvent]:
    """`events` with each text piece that comes within `interval_s` of the last one given held,
    joined to the next (Backend.stream's `text_interval_s`). The first piece goes at once (time
    to first token is what a user waits on); any other event goes as it comes, after the text
    held before it, so order is kept (a TokenLogprob still comes just before its token's text).
    A piece waits for the next event at most: a model's next token, or the ReplyStats. A call's
    deltas are not joined: a call is a few dozen tokens, and only the server reads them."""
    if interval_s <= 0:
        return events
    return _paced(events, interval_s)


def _paced(events: Iterator[ReplyEvent], interval_s: float) -> Iterator[ReplyEvent]:
    held: list[str] = []
    given = -math.inf
    with closing_reply(events) as inner:  # closing this closes the reply it paces, on this thread
        for event in inner:
            if isinstance(event, str):
                held.append(event)
                now = time.perf_counter()
                if now - given < interval_s:
                    continue
                event, given = "".join(held), now
                held.clear()
            elif held:
                yield "".join(held)
                held.clear()
                given = time.perf_counter()
            yield event


@runtime_checkable
class PolledReply(Protocol):
    """A reply (what `stream` returns) whose events come over a file descriptor, as a model in a
    process of its own sends them (engine/process/reply.py). It is read as any reply is, and a
    caller with an event loop may instead wait for `fileno()` to be readable and take `ready()`'s
    events on the loop: `hearth serve` does, so that no thread is woken per token only to hand
    it over to the loop. One reader at a time, whichever way it reads; closed when done with
    (closing_reply), as every reply is, which also closes what `fileno()` names."""

    waits: bool  # what comes next must be read with next(), which may wait (how its process ended)

    def __next__(self) -> ReplyEvent: ...

    def fileno(self) -> int: ...

    def ready(self) -> list[ReplyEvent]:
        """The events that have come, at once, without waiting: none, some, or the last ones,
        ending in the ReplyStats (after which there are no more). Where what comes next cannot
        be had without waiting, `waits` is set and ready() gives nothing more."""

    def close(self) -> None: ...


# What loads a model into a Backend: `open_backend` in Hearth; a scripted one in tests.
BackendOpener = Callable[[ModelSource, LoadOptions, LoadProgress | None, threading.Event | None], Backend]
