"""Opening a model in this process: which Backend serves which ModelSource, for the command line
(`hearth chat`, `hearth docs`) and for the engine's process itself (engine/process/child.py).
The window and `hearth serve` open theirs through engine/process/ instead, so that llama.cpp
never runs in their process.

Kept apart from the interface (backend.py) so that the interface imports neither
implementation: each implementation imports the interface, and only this module imports them,
each deferred to the moment a model of its kind is opened (llama.cpp loads on the thread that
loads only; httpx only where a remote model is used).
"""

from __future__ import annotations

import threading
from pathlib import Path

from .backend import Backend, LoadProgress
from .embedding.default_model import embedding_model
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
        from .remote.backend import open_remote  # imports httpx: only where a remote model is used

        return open_remote(source, progress, cancel)
    from .llama.generator import Engine  # imports llama.cpp: only on the thread that loads

    return Engine(source.path, options, progress=progress, cancel=cancel, states=states)


def open_embedder(model: Path | None, cache_dir: Path) -> Embedder:
    """An embedding model (`embedding_model`'s) in llama.cpp in this process, for `hearth docs`
    and `hearth chat --docs`, where a crash ends only that command; the window and `hearth serve`
    run theirs in a process of its own (engine/process/embedder.py). Blocks while it loads: call
    it off the GUI thread."""
    from .llama.embedder import LlamaEmbedder  # imports llama.cpp: only where documents are used

    return LlamaEmbedder(embedding_model(model, cache_dir))
