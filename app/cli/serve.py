"""`hearth serve [MODEL]`: the model as a local OpenAI-compatible server (app/serve/) until
Ctrl+C or SIGTERM; stdout gets one line, the server's base URL, once it is ready.

The model runs in a process of its own, started again by itself when llama.cpp dies
(engine/process/restarting.py): one request that crashes it costs that request, not the server.
`hearth chat` keeps llama.cpp in its own process: a crash there ends only that command.

The model reads images where it has a projector (--mmproj, else the mmproj-*.gguf beside it:
library/projectors.with_projector); requests send them as data: URLs, and name http(s) addresses
only where --allow-image-urls lets the server fetch them (app/serve/image_reading.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..engine.gguf.reading import inspect_model
from ..engine.options import LOAD_OPTION, NOTHING_STORED, Overrides, resolve
from ..engine.types import api_key_problem
from ..serve.origins import check_origins, pages_may_call
from .args import UsageError, check_context


def run_serve(args) -> int:
    from ..engine.process.restarting import RestartingBackend
    from ..library.projectors import with_projector
    from ..owners.paths import served_responses_path
    from ..serve import addresses, server
    from ..serve.app import create_app
    from ..serve.kept_responses import KeptResponses
    from ..serve.queue import EngineQueue
    from .load_options import check_loadable, load_changes, print_load_notes

    api_key = _serve_key(args)
    if not addresses.is_loopback(args.host) and api_key is None:
        raise UsageError(f"--host {args.host} would make the model reachable from the network: "
                         "give --api-key KEY (or --api-key-env VAR) as well, so only those with the key can use it")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    if args.max_waiting < 0:
        raise UsageError(f"--max-waiting cannot be negative ({args.max_waiting})")
    origins = _cors_origins(args.cors_origin)
    least_threads = LOAD_OPTION["n_threads"].least
    if args.threads is not None and args.threads < least_threads:
        raise UsageError(f"--threads must be at least {least_threads}, not {args.threads}")
    path = args.model or _default_model()
    info = inspect_model(path)
    check_context(args.ctx, info.context_length)
    # Sampling is each request's (over the model's defaults: serve/completions.py); the load is this.
    options = resolve(NOTHING_STORED, info.sampling_defaults, Overrides(load=load_changes(args))).load_options()
    check_loadable(options)
    options = with_projector(path, options)
    sock = addresses.bind(args.host, args.port)  # before loading: a taken port fails at once
    try:
        backend = RestartingBackend(path, options, say=lambda news: print(f"hearth: {news}", file=sys.stderr,
                                                                            flush=True))
        print_load_notes(backend.describe())
        queue = EngineQueue(backend, max_waiting=args.max_waiting)
    except BaseException:
        sock.close()
        raise
    address = addresses.url(sock)

    def ready() -> None:
        print(address, flush=True)
        described = backend.describe()
        device = described.device.describe()
        images = f"; it reads images (projector {described.projector.name})" if described.projector else ""
        keyed = "; requests need the API key" if api_key else ""
        pages = f"; {pages_may_call(origins)}" if origins else ""
        print(f"hearth: serving {path.name} on {device} at {address}{images}{keyed}{pages}. Ctrl+C stops.",
              file=sys.stderr, flush=True)

    try:
        kept = KeptResponses(served_responses_path())
        server.run(create_app(queue, api_key=api_key, on_startup=ready, cors_origins=origins, kept=kept,
                              embeddings=_embeddings(args.embedding_model), allow_image_urls=args.allow_image_urls),
                   sock, on_stop=queue.stop)
    finally:
        queue.close()
        sock.close()
    print("hearth: stopped serving.", file=sys.stderr)
    return 0


def _serve_key(args) -> str | None:
    if args.api_key is not None and args.api_key_env is not None:
        raise UsageError("give --api-key or --api-key-env, not both")
    if args.api_key_env is not None:
        key = os.environ.get(args.api_key_env, "").strip()
        if not key:
            raise UsageError(f"--api-key-env: the environment variable {args.api_key_env} is not set")
        if problem := api_key_problem(key):
            raise UsageError(f"--api-key-env {args.api_key_env}: {problem}")
        return key
    if args.api_key is not None and not args.api_key.strip():
        raise UsageError("--api-key cannot be empty")
    key = args.api_key.strip() if args.api_key is not None else None
    if key is not None and (problem := api_key_problem(key)):
        raise UsageError(f"--api-key: {problem}")
    return key


def _cors_origins(given: list[str]) -> list[str]:
    """The --cors-origin values, checked before loading (app/serve/origins.py says why each form)."""
    try:
        return check_origins(given)
    except ValueError as exc:
        raise UsageError(f"--cors-origin {exc}") from None


def _default_model() -> Path:
    from ..owners.paths import default_model  # Qt's standard locations: only without a MODEL

    path = default_model()
    if path is None:
        raise UsageError("no model given, and the default model is not available: give a MODEL.gguf")
    return path


def _embeddings(model: Path | None):
    """/v1/embeddings' model: the file given (named by its file name), else the default one where
    its package is installed or a bundle ships it (None: no such route), each loaded when its first request comes."""
    from ..engine.embedding.default_model import MODEL_NAME, default_embedding_available
    from ..owners.paths import embedding_models_dir
    from ..serve.embeddings import Embeddings

    if model is None and not default_embedding_available(embedding_models_dir()):
        return None

    def load():  # in a process of its own, as the chat model: llama.cpp never runs in the server's
        from ..engine.embedding.default_model import embedding_model
        from ..engine.process.embedder import ProcessEmbedder

        return ProcessEmbedder(embedding_model(model, embedding_models_dir()))

    return Embeddings(model.stem if model is not None else MODEL_NAME, load)
