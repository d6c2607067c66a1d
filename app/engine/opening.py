"""Opening a model: the one place that knows which Backend serves which ModelSource.

Kept apart from the interface (backend.py) so that the interface imports neither
implementation: each implementation imports the interface, and only this module imports them,
each deferred to the moment a model of its kind is opened (llama.cpp loads on the engine
thread only; httpx only where a remote model is used).
"""

from __future__ import annotations

import threading
from pathlib import Path

from .backend import Backend, LoadProgress
from .embedding.types import Embedder
from .kv.cache import StateCache
from .types import LoadOptions, ModelSource, RemoteModel


def open_backend(
    source: ModelSource,
    options: LoadOptions,
    progress: LoadProgress | None = None,
    cancel: threading.Event | None = None,
    states: StateCache | None = None,
) -> Backend:
    """Load `source` with the backend that serves it. Blocks until loaded; raises
    ModelFileError, TemplateError or LoadCancelled with a message for the user, and for a
    remote model remote.errors.RemoteError (the server is unreachable, refuses the key, or
    does not have the model).

    A remote model takes none of `options`: the server chose its context, device and threads,
    and applies its own chat template (its description's template is "server"). `states`:
    where a local model keeps saved KV states per conversation (None: it keeps none)."""
    if isinstance(source, RemoteModel):
        from .remote.backend import RemoteBackend  # imports httpx: only where a remote model is used

        if progress is not None:
            progress(0.0)
        backend = RemoteBackend.open(source, cancel=cancel)
        if progress is not None:
            progress(1.0)
        return backend
    from .llama.generator import Engine  # imports llama.cpp: only on the thread that loads

    return Engine(source.path, options, progress=progress, cancel=cancel, states=states)


def embedding_model(model: Path | None, cache_dir: Path) -> Path:
    """The embedding GGUF to load: the one given, else the default one (all-MiniLM-L6-v2,
    converted into `cache_dir` on first use; EmbeddingModelUnavailable where it is not
    installed). The first time, it converts: call it off the GUI thread."""
    from .embedding.default_model import default_embedding_model

    return model if model is not None else default_embedding_model(cache_dir)


def open_embedder(model: Path | None, cache_dir: Path, in_process: bool = False) -> Embedder:
    """An embedding model (`embedding_model`'s) in llama.cpp, in a process of its own
    (ProcessEmbedder: the window's documents, `hearth serve`'s /v1/embeddings), or with
    `in_process` in this one (`hearth docs` and `hearth chat --docs`, where a crash ends only
    that command). Blocks while it loads: call it off the GUI thread."""
    path = embedding_model(model, cache_dir)
    if in_process:
        from .llama.embedder import LlamaEmbedder  # imports llama.cpp: only where documents are used

        return LlamaEmbedder(path)
    from .process.embedder import ProcessEmbedder

    return ProcessEmbedder(path)
