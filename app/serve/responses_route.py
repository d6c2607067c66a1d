"""POST /v1/responses answered: the stored conversation it continues, the job, the reply as
one Response or as its stream of events, and the response kept.

After app.py's checks (key, size, fields, model), a `previous_response_id` is looked up
(404 for one not kept here), then the job is queued (429) and its first event awaited as a
chat's is: a job the engine refuses, or a reply that ends before any text, is answered with
an error status. Only then is the exchange stored (kept_responses.py), so the response's id,
sent first in a stream, names a reply that exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..engine.tools.types import ToolCall, ToolCallDelta
from ..engine.types import ReplyStats, StopReason
from . import errors
from .completions import Completions, Job, QueueFull
from .errors import ApiError
from .kept_responses import Continued, Exchange, KeptResponses, response_id, unstored_id
from .replies import ClientGone, Reply, check_begun
from .responses import ResponsesRequest, answered
from .responses_shapes import ResponseShape, status
from .shapes import SSE_HEADERS, failure

Finish = Callable[[str, list[ToolCall], ReplyStats], Future | None]  # written when done; None: not kept


async def answer_response(request: Request, parsed: ResponsesRequest, completions: Completions,
                          kept: KeptResponses) -> Response:
    """The response to `parsed`, whose model has been checked."""
    keep = parsed.store and kept.keeping
    continues = await kept.continued(parsed.previous_response_id) if keep or parsed.previous_response_id else None
    history = continues.messages if continues is not None else []
    new = answered(history, parsed)
    system = [{"role": "system", "content": parsed.instructions}] if parsed.instructions else []
    try:
        reply = Reply(completions, Job(parsed.params, messages=system + history + new, tools=parsed.tools))
    except QueueFull as full:
        raise errors.queue_full(full.waiting) from None
    try:
        first = await reply.first(request.receive)
        check_begun(first, "input")
        try:
            shape, finish = await _kept(parsed, kept if keep else None, continues, new, parsed.model)
        except ApiError:
            reply.cancel()
            raise
        if parsed.stream:
            return StreamingResponse(_events(reply, first, shape, finish), media_type="text/event-stream",
                                     headers=SSE_HEADERS)
        [whole] = await reply.collect(first, request.receive)  # a Response has one choice
    except ClientGone:
        return Response(status_code=499)  # nobody reads it; uvicorn drops it
    await _written(finish(whole.text, whole.calls, whole.stats))
    if status(whole.stats) == "failed":
        raise errors.server_error(failure(whole.stats))
    return JSONResponse(shape.whole(whole))


async def _kept(parsed: ResponsesRequest, kept: KeptResponses | None, continues: Continued | None, new: list[dict],
                model_id: str) -> tuple[ResponseShape, Finish]:
    """The response's shape, under the id of its stored reply (begun now), and how to close
    that reply; a response not kept (`kept` None) gets an id no request can continue, and
    closes nothing."""
    if kept is None:
        return ResponseShape(parsed, unstored_id(), model_id, stored=False), lambda text, calls, stats: None
    message_id = await kept.begin(Exchange(continues, new, parsed.instructions or "", model_id, parsed.params))
    return (ResponseShape(parsed, response_id(message_id), model_id, stored=True),
            lambda text, calls, stats: kept.finish(message_id, text, calls, stats))


async def _events(reply: Reply, first, shape: ResponseShape, finish: Finish) -> AsyncIterator[bytes]:
    """The stream. The reply is kept as it ended before its last event goes out (so a client
    that continues it at once finds it whole), or as cancelled when its client left."""
    ended = False
    try:
        yield shape.start()
        async for event in reply.rest(first):
            if isinstance(event, str):
                yield shape.piece(event)
            elif isinstance(event, ToolCallDelta):
                yield shape.call_piece(event)
            elif isinstance(event, ToolCall):
                yield shape.call_done(event)
            elif isinstance(event, ReplyStats):
                last, ended = shape.end(event), True
                await _written(finish(shape.text(), shape.calls(), event))
                yield last
    finally:
        if not ended:
            finish(shape.text(), shape.calls(), ReplyStats(stop_reason=StopReason.CANCELLED))


async def _written(done: Future | None) -> None:
    if done is not None:
        await asyncio.wrap_future(done)
