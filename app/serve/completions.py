"""The seam between the server and whatever runs the model: a `Job` in, events out.

The server (app.py) never touches a Backend: it hands each request to a `Completions` and
reads what comes back. `hearth serve` implements it with `queue.EngineQueue`, a worker thread
that owns the Engine. The GUI's "Serve the loaded model" can implement it over the bridge,
whose engine thread already runs one request at a time: the same jobs then wait in line with
the GUI's own replies, and never interleave with them.

A job's events, delivered by calling `deliver` from any thread, in this order:

    TokenLogprob   a token's log-probability, just before the text it completes (job.logprobs only)
    str            a piece of the reply's text (none or many)
    ToolCallDelta  a piece of a tool call as the model writes it (with job.tools only)
    ToolCall       a complete call, after its deltas
    ChoiceEnd      one choice ended and the next begins (job.n > 1): its events follow
    ReplyStats     exactly once, last: how the last choice ended (CANCELLED when it was cancelled)

or a single `Refused`, when the job could not start: its template failed, the conversation
does not fit the context, or the server is shutting down. A job is refused before any text,
so the server can still answer with an error status.

A consumer with an event loop may also pass `follow`: then a reply that can be read without
blocking (a PolledReply: a model in a process of its own) is handed to it after its first
event, and read on the loop up to its end, instead of by the thread that runs the job, which
would be woken for every token only to pass it on.

A job with n choices is one job: it takes one place in line and runs its choices one after
another on the engine (the 2nd..nth prompt is in the KV cache already, so only their replies
cost anything), and one cancel stops it, the choices not begun included. A choice that does
not finish (cancelled, failed) ends the job there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, Union

from ..engine.backend import PolledReply, ReplyEvent
from ..engine.logprobs import MAX_TOP_LOGPROBS, TokenLogprob
from ..engine.sampling import BOUNDS, SamplingParams
from ..engine.tools.types import PLAIN, ToolCall, ToolCallDelta, ToolUse
from ..engine.types import ModelDescription, ReplyStats

# Choices per job: each holds the engine for a whole reply while every other client waits, and
# the queue counts a job once, so this bounds how long one request can hold the line
# (n × max_tokens). Eight covers what clients ask for (a few samples to compare or vote on).
MAX_CHOICES = 8
_SEEDS = BOUNDS["seed"].high + 1


@dataclass(frozen=True)
class Job:
    """One reply to write: to a conversation (`messages`, through the model's chat template,
    its stops and end-of-turn tokens, as the GUI replies) or to raw text (`prompt`, no template).
    `tools`: the tools and response format a chat's reply may use (engine/tools/types.py).
    `n`: how many replies (choices) to write, one after another. `logprobs`: None, or how many
    alternatives to report with each token's log-probability (engine/logprobs.py)."""

    params: SamplingParams
    messages: list[dict] | None = None
    prompt: str | None = None
    tools: ToolUse = PLAIN
    n: int = 1
    logprobs: int | None = None

    def __post_init__(self):
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("a Job has either messages or a prompt")
        if not 1 <= self.n <= MAX_CHOICES:
            raise ValueError(f"a Job has 1 to {MAX_CHOICES} choices, not {self.n}")
        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_TOP_LOGPROBS:
            raise ValueError(f"a Job reports 0 to {MAX_TOP_LOGPROBS} alternatives per token, not {self.logprobs}")

    def choice_params(self, choice: int) -> SamplingParams:
        """The sampling of choice `choice` (from 0): with a seed, choice i samples with seed + i
        (wrapping at 2³²), so the choices differ and the request still repeats exactly; without
        one, each choice draws its own fresh seed as any reply does."""
        if self.params.seed is None or choice == 0:
            return self.params
        return self.params.with_changes(seed=(self.params.seed + choice) % _SEEDS)


class Refusal(Enum):
    """Why a job could not start, which decides the status the client gets."""

    BAD_REQUEST = "bad_request"  # the template failed, or raw prompts are not possible: 400
    CONTEXT = "context"  # the conversation does not fit the model's context: 400
    UNAVAILABLE = "unavailable"  # the server is shutting down, or its model's process restarting: 503
    FAILED = "failed"  # the model failed before its first token: 500
    UNSUPPORTED = "unsupported"  # the backend cannot do what was asked (logprobs of a remote model): 400
    IMAGE = "image"  # an image the model cannot read (it has no projector, or its projector refused it): 400


@dataclass(frozen=True)
class Refused:
    reason: Refusal
    message: str  # for the client: what went wrong, in words
    param: str | None = None  # the request field at fault, where one is (a tool's schema, say)


@dataclass(frozen=True)
class ChoiceEnd:
    """A choice of a job with several ended (as `stats` says, a finish) and the next begins."""

    stats: ReplyStats


Event = Union[str, TokenLogprob, ToolCallDelta, ToolCall, ChoiceEnd, ReplyStats, Refused]
Deliver = Callable[[Event], None]
# Read a PolledReply's events on the consumer's loop, delivering them there, and return its last
# (its ReplyStats), blocking the calling thread until then; None where the loop cannot read it to
# its end (it has closed, cannot watch the reply, or the model's process is gone): the caller
# reads on.
Follow = Callable[[PolledReply], ReplyEvent | None]


@dataclass(frozen=True)
class Collected:
    """A whole reply, read to its end: what a request that does not stream is answered with."""

    text: str
    calls: list[ToolCall]
    stats: ReplyStats
    logprobs: tuple[TokenLogprob, ...] = ()  # with job.logprobs: each token's, in order

@dataclass(frozen=True)
class ServedModel:
    """What GET /v1/models says about the model (its id, what requests must name, and context),
    and the sampling a request's missing fields take: the model author's defaults
    (general.sampling.*) over Hearth's, what `hearth chat` and the window start from.
    `reads_images`: whether a request may send it images (a projector was loaded with it, or
    it is a server's model); `name`: the name it gives itself, for a refusal to say."""

    model_id: str
    context_length: int | None
    sampling: SamplingParams = SamplingParams()
    reads_images: bool = False
    name: str = ""

    @classmethod
    def of(cls, loaded: ModelDescription) -> "ServedModel":
        return cls(loaded.record_name, loaded.n_ctx, loaded.starting_sampling, loaded.reads_images, loaded.name)


class QueueFull(Exception):
    """As many jobs wait as the queue takes; `waiting` says how many."""

    def __init__(self, waiting: int):
        super().__init__(f"{waiting} jobs waiting")
        self.waiting = waiting


class Submission(Protocol):
    def cancel(self) -> None:
        """Stop the job: a waiting one leaves the queue, a running one ends at its next token.
        Its ReplyStats still comes (stop reason CANCELLED). Safe from any thread, at any time."""


class Completions(Protocol):
    def model(self) -> ServedModel:
        """The model being served."""

    def submit(self, job: Job, deliver: Deliver, follow: Follow | None = None) -> Submission:
        """Queue the job; its events go to `deliver`, from whichever thread runs it, or through
        `follow` (see above). Raises QueueFull when the queue is full; a job submitted while
        shutting down is Refused."""
