"""The ASGI app: OpenAI's endpoints over a `Completions`, on Starlette.

    GET  /v1/models              the one model served
    GET  /v1/models/{id}         it, or 404
    POST /v1/chat/completions    a reply to a conversation, through the model's chat template
    POST /v1/completions         a continuation of raw text
    POST /v1/responses           a Response (OpenAI's Responses API), kept to be continued by id

Each request is checked in the order a client can fix it: the key (401), the body's size
(413), its JSON and fields (400), the model's name (404), its images (400: the model reads
none, an address the server may not fetch, an image that cannot be used; image_reading.py),
room in the queue (429); a Response's previous_response_id is looked up before the queue (404). Then the
handler waits for the reply's first event: a job the engine refuses (its template fails, it
does not fit the context) is still answered with a status, and only a reply that has begun
is streamed. Every error, the routing's 404 and 405 included, has OpenAI's shape.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
from collections.abc import Sequence
from dataclasses import replace

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import errors
from .completions import Completions, Job, QueueFull, ServedModel
from .cors import cors_middleware
from .embeddings import Embeddings
from .embeddings import answer as answer_embeddings
from .errors import ApiError
from .image_reading import read_images
from .kept_responses import KeptResponses
from .replies import ClientGone, Reply, check_begun
from .requests import MAX_BODY_BYTES, ChatRequest, CompletionRequest, parse_chat, parse_completion
from .responses import parse_responses
from .responses_route import answer_response
from .shapes import SSE_HEADERS, ChatShape, CompletionShape, failure, finish_reason

log = logging.getLogger(__name__)

DRAIN_LIMIT = 4 * MAX_BODY_BYTES  # an oversized body is read this far so the client sees the 413


def create_app(completions: Completions, api_key: str | None = None, on_startup=None,
               cors_origins: Sequence[str] = (), kept: KeptResponses | None = None,
               embeddings: Embeddings | None = None, allow_image_urls: bool = False) -> Starlette:
    """The server's app. `api_key`: required of every request when given. `on_startup`: called
    once the app serves. `cors_origins`: the web pages' origins a browser lets call it (serve/cors.py;
    none: no page of any site). `kept`: where responses are kept (serve/kept_responses.py; none:
    nowhere, and previous_response_id finds nothing). `embeddings`: the embedding model
    /v1/embeddings serves (serve/embeddings.py; none: the route is not there). `allow_image_urls`:
    fetch the http(s) image addresses requests name (--allow-image-urls; otherwise only data:
    URLs are read). A request's missing sampling fields take
    the served model's (ServedModel.sampling), asked per request: the window's model can change
    while it serves."""

    responses = kept if kept is not None else KeptResponses(None)

    def authorize(request: Request) -> None:
        if api_key is None:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            raise errors.missing_key()
        if not hmac.compare_digest(given.strip().encode(), api_key.encode()):
            raise errors.wrong_key()

    def model_entry() -> dict:
        model = completions.model()
        return {"id": model.model_id, "object": "model", "created": 0, "owned_by": "hearth",
                "context_length": model.context_length}

    async def list_models(request: Request) -> Response:
        authorize(request)
        served = [model_entry()] + ([embedding_entry()] if embeddings is not None else [])
        return JSONResponse({"object": "list", "data": served})

    def embedding_entry() -> dict:
        return {"id": embeddings.model_id, "object": "model", "created": 0, "owned_by": "hearth"}

    async def get_model(request: Request) -> Response:
        authorize(request)
        if embeddings is not None and request.path_params["model"] == embeddings.model_id:
            return JSONResponse(embedding_entry())
        check_model(request.path_params["model"], completions.model())
        return JSONResponse(model_entry())

    def check_model(name: str, served: ServedModel) -> None:
        if name != served.model_id:
            raise errors.unknown_model(name, served.model_id)

    async def checked_body(request: Request, parse):
        """The request's body read by `parse`, after the key and before the queue (the
        module docstring's order), its model checked against the one served, which comes back
        with it."""
        authorize(request)
        served = completions.model()  # once: the window's model may change while this runs
        parsed = parse(await read_body(request), served.sampling)
        check_model(parsed.model, served)
        return parsed, served

    async def chat(request: Request) -> Response:
        parsed, served = await checked_body(request, parse_chat)
        messages = await read_images(parsed.messages, served, allow_image_urls)
        job = Job(parsed.params, messages=messages, tools=parsed.tools, n=parsed.n, logprobs=parsed.logprobs)
        return await answer(request, parsed, job, ChatShape)

    async def complete(request: Request) -> Response:
        parsed, _served = await checked_body(request, parse_completion)
        job = Job(parsed.params, prompt=parsed.prompt, n=parsed.n, logprobs=parsed.logprobs)
        return await answer(request, parsed, job, CompletionShape)

    async def embed(request: Request) -> Response:
        authorize(request)
        return JSONResponse(await answer_embeddings(await read_body(request), embeddings))

    async def respond(request: Request) -> Response:
        parsed, served = await checked_body(request, parse_responses)
        parsed = replace(parsed, input=await read_images(parsed.input, served, allow_image_urls))
        return await answer_response(request, parsed, completions, responses)

    async def answer(request: Request, parsed: ChatRequest | CompletionRequest, job: Job, shape_type) -> Response:
        try:
            reply = Reply(completions, job)
        except QueueFull as full:
            raise errors.queue_full(full.waiting) from None
        shape = shape_type(parsed.model, parsed.include_usage, parsed.logprobs is not None)
        try:
            first = await reply.first(request.receive)
            check_begun(first, "messages" if job.prompt is None else "prompt")
            if parsed.stream:
                return StreamingResponse(shape.stream(reply.rest(first)), media_type="text/event-stream",
                                         headers=SSE_HEADERS)
            choices = await reply.collect(first, request.receive)
        except ClientGone:
            return Response(status_code=499)  # nobody reads it; uvicorn drops it
        if finish_reason(choices[-1].stats) is None:
            raise errors.server_error(failure(choices[-1].stats))
        return JSONResponse(shape.whole(choices))

    async def on_api_error(request: Request, exc: ApiError) -> Response:
        return exc.response()

    async def on_http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 404:
            return errors.not_found(request.url.path).response()
        if exc.status_code == 405:
            return errors.method_not_allowed(request.method, request.url.path).response()
        return ApiError(exc.status_code, str(exc.detail)).response()

    async def on_crash(request: Request, exc: Exception) -> Response:
        log.error("the server failed on %s %s", request.method, request.url.path, exc_info=exc)
        return errors.server_error(f"Hearth failed on this request: {type(exc).__name__}").response()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        if on_startup is not None:
            on_startup()
        yield
        responses.close()  # its last writes done
        if embeddings is not None:
            embeddings.close()

    return Starlette(
        routes=[
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/models/{model:path}", get_model, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/completions", complete, methods=["POST"]),
            Route("/v1/responses", respond, methods=["POST"]),
            *([Route("/v1/embeddings", embed, methods=["POST"])] if embeddings is not None else []),
        ],
        middleware=cors_middleware(cors_origins),
        exception_handlers={ApiError: on_api_error, HTTPException: on_http_error, Exception: on_crash},
        lifespan=lifespan,
    )


async def read_body(request: Request) -> bytes:
    """The body, refused with 413 past MAX_BODY_BYTES. An oversized body is still read (and
    dropped) up to DRAIN_LIMIT: closing on a client that is still sending makes it see a reset
    connection instead of the 413."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > DRAIN_LIMIT:
        raise errors.too_large(MAX_BODY_BYTES)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > DRAIN_LIMIT:
            break
        if size <= MAX_BODY_BYTES:
            chunks.append(chunk)
    if size > MAX_BODY_BYTES:
        raise errors.too_large(MAX_BODY_BYTES)
    return b"".join(chunks)

