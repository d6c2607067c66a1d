"""Running one served Job on a Backend: the part `hearth serve`'s EngineQueue and the window's
bridge share, so a job ends the same way whichever runs it.

The caller owns the Backend's thread and its template: `use_template(raw)` is asked to set
RAW_TEMPLATE for a raw prompt (/v1/completions) or to put the caller's own template back; a
TemplateError from it refuses the job like a template that fails to render.

A job's n choices run here, one after another on the same thread (completions.py says why),
so whichever runs jobs runs them the same way and counts a job once. Given `follow`, a reply
that can be read without blocking is read by the consumer's event loop after its first event
(completions.py: Follow); this thread waits for its end.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..engine.backend import Backend, BackendUnavailable, PolledReply, closing_reply
from ..engine.context import ContextFullError
from ..engine.logprobs import LogprobsUnavailable
from ..engine.remote.errors import RemoteError, RemoteFailure
from ..engine.sampling import SamplingParams
from ..engine.templates.chat_template import TemplateError
from ..engine.tools.types import ToolsError
from ..engine.types import ReplyStats, StopReason
from ..images.image import ImageError
from .completions import ChoiceEnd, Deliver, Follow, Job, Refusal, Refused
from .shapes import finish_reason

log = logging.getLogger(__name__)

RAW_TEMPLATE = "{{ messages[0]['content'] }}"  # a raw prompt, written as it is


def run_job(backend: Backend, job: Job, cancel: threading.Event, deliver: Deliver,
            use_template: Callable[[bool], None], follow: Follow | None = None) -> ReplyStats | Refused:
    """Run the job's choices, delivering their events as they come, a ChoiceEnd between two;
    return its last event (the last choice's ReplyStats, or why it could not start), for the
    caller to deliver once the engine is free: a client that asks again on reading it must
    find the engine free. A choice that does not finish ends the job; one that cannot start
    after another has been delivered fails it (its client has had a 200 already)."""
    choice = 0
    last = _run_choice(backend, job, job.params, cancel, deliver, use_template, follow)
    while choice + 1 < job.n and isinstance(last, ReplyStats) and finish_reason(last) is not None:
        deliver(ChoiceEnd(last))
        choice += 1
        last = _run_choice(backend, job, job.choice_params(choice), cancel, deliver, use_template, follow)
    return ReplyStats.failed(last.message) if isinstance(last, Refused) and choice > 0 else last


def _run_choice(backend: Backend, job: Job, params: SamplingParams, cancel: threading.Event, deliver: Deliver,
                use_template: Callable[[bool], None], follow: Follow | None) -> ReplyStats | Refused:
    """One reply, its events delivered up to its last, which is returned."""
    try:
        use_template(job.prompt is not None)
        messages = job.messages if job.prompt is None else [{"role": "user", "content": job.prompt}]
        stream = backend.stream(messages, params, cancel, tools=job.tools, logprobs=job.logprobs)
    except Exception as exc:
        return _refusal(exc)
    with closing_reply(stream) as events:
        try:
            event = next(events)  # a Backend may raise at the call or at its first event
        except Exception as exc:
            return _refusal(exc)
        if isinstance(event, ReplyStats) and event.stop_reason is StopReason.INTERRUPTED:
            # The model's process died before the first token: nothing was sent, so "try again".
            return Refused(Refusal.UNAVAILABLE, str(BackendUnavailable.stopped(event.error or "")))
        try:
            if not isinstance(event, ReplyStats):
                deliver(event)
                followed = follow(events) if follow is not None and isinstance(events, PolledReply) else None
                event = next(events) if followed is None else followed  # None: its loop is gone, read on here
            while not isinstance(event, ReplyStats):
                deliver(event)
                event = next(events)
        except Exception as exc:  # the Backend contract says never; the client still gets an end
            log.exception("a served reply failed")
            return ReplyStats(stop_reason=StopReason.ERROR, error=f"The model failed while generating: {exc}")
        return event


def _refusal(exc: Exception) -> Refused:
    """Why a job could not start (raised at the stream call or at its first event), for its client."""
    if isinstance(exc, TemplateError):
        return Refused(Refusal.BAD_REQUEST, str(exc))
    if isinstance(exc, ImageError):
        return Refused(Refusal.IMAGE, str(exc))
    if isinstance(exc, ToolsError):
        return Refused(Refusal.BAD_REQUEST, str(exc), exc.param)
    if isinstance(exc, ContextFullError):
        return Refused(Refusal.CONTEXT, str(exc))
    if isinstance(exc, BackendUnavailable):
        return Refused(Refusal.UNAVAILABLE, str(exc))
    if isinstance(exc, LogprobsUnavailable):
        return Refused(Refusal.UNSUPPORTED, str(exc), "logprobs")
    if isinstance(exc, RemoteError):  # a model on a server, served on
        return upstream_refusal(exc)
    log.error("a served reply failed to start", exc_info=exc)
    return Refused(Refusal.FAILED, f"The model failed before its first token: {exc}")


def upstream_refusal(error: RemoteError) -> Refused:
    """A remote model's failure, for the client of the model served on: a rate limit is "try
    later" (503), anything else the server's failure (500), in words that do not name the
    server behind it (its address is often a private one) nor pass on its key's trouble."""
    if error.failure is RemoteFailure.RATE_LIMITED:
        return Refused(Refusal.UNAVAILABLE, "The model's own server is busy; try again later.")
    detail = f": {error.server_message}" if error.server_message and error.failure is RemoteFailure.REJECTED else ""
    return Refused(Refusal.FAILED, f"The model's own server failed ({error.failure.value}){detail}.")
