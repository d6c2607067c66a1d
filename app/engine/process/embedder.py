"""ProcessEmbedder: an embedding model run by llama.cpp in a process of its own (#29), as the
Embedder protocol (engine/embedding/types.py), for the window's documents and `hearth serve`'s
/v1/embeddings: neither process then loads libllama at all.

The child is an EngineProcess asked to load an embedding model; texts go to it and float32 rows
come back as bytes (protocol.Vectors), so a batch costs one copy each way. It runs on the CPU
(the chat model's memory plan owns the GPU): no GPU is made visible to it.

A child that dies (the system killed it for memory, llama.cpp aborted on a text) is started again
once for the call that found it dead; dying again on the same call raises EngineCrashed, for the
caller to say (an indexing run fails with the cause, and the next run starts a new child).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..embedding.types import model_name
from .engine_process import NO_GPU_ENVIRONMENT, EngineCrashed, EngineProcess
from .frames import MAX_FRAME_BYTES
from .protocol import EmbedderInfo

# Characters of text in one "embed" request: JSON may spell a character in up to 12 bytes
# (a \\uXXXX pair), so a batch this size always fits a frame.
BATCH_CHARS = MAX_FRAME_BYTES // 16

log = logging.getLogger(__name__)


class ProcessEmbedder:
    """One embedding model in a child. Not thread-safe, as every Embedder: one thread drives it."""

    def __init__(self, path: Path):
        """Start the child and load `path` in it; raises as the in-process load would
        (ModelFileError), or EngineCrashed where llama.cpp took the child down loading it."""
        self.path = Path(path)
        self.name = model_name(self.path)
        self._child, info = self._started()
        self.dims, self.max_tokens = info.dims, info.max_tokens

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors, asked in batches that each fit a frame (a request of the server's
        may hold 2,048 texts of 200,000 characters: more than one frame carries)."""
        rows, batch, size = [], [], 0
        for text in texts:
            if batch and size + len(text) > BATCH_CHARS:
                rows.append(self._embed_batch(batch))
                batch, size = [], 0
            batch.append(text)
            size += len(text)
        if batch or not rows:
            rows.append(self._embed_batch(batch))
        return rows[0] if len(rows) == 1 else np.concatenate(rows)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        vectors = self._ask("embed", tuple(texts), "vectors")
        if (vectors.rows, vectors.dims) != (len(texts), self.dims) or len(vectors.data) != len(texts) * self.dims * 4:
            self._child.kill()  # it answered another question than the one asked: not to be trusted again
            raise EngineCrashed(f"the embedding model's process sent {vectors.rows} vectors of {vectors.dims} for "
                                f"{len(texts)} texts of {self.dims}")
        return np.frombuffer(vectors.data, dtype=np.float32).reshape(vectors.rows, vectors.dims)

    def count_tokens(self, text: str) -> int:
        return self._ask("count", text, "count")

    def close(self) -> None:
        self._child.close()

    @property
    def pid(self) -> int:
        return self._child.pid

    def _started(self) -> tuple[EngineProcess, EmbedderInfo]:
        child = EngineProcess.start(NO_GPU_ENVIRONMENT)
        try:
            return child, child.ask("embedder", self.path, "embedder")
        except BaseException:
            child.close()
            raise

    def _ask(self, kind: str, body: Any, answer: str) -> Any:
        try:
            return self._child.ask(kind, body, answer)
        except EngineCrashed as exc:
            log.warning("the embedding model's process ended (%s): starting it again", exc)
            self._child.close()
            self._child, _info = self._started()
            return self._child.ask(kind, body, answer)
