"""`POST /v1/embeddings`: the embedding model served in OpenAI's form, for programs that index
their own documents with it (LangChain's OpenAIEmbeddings, the `openai` client).

The model is not the chat model: `hearth serve --embedding-model FILE.gguf`, else the default
one (all-MiniLM-L6-v2, converted on first use), loaded when the first request comes (a server
that never gets one never loads it). It runs on a worker thread, one request at a time, never
on the event loop. `input` is a string or a list of strings (OpenAI's token-id arrays are
refused by name: the ids would be another tokenizer's); `encoding_format` "float" or "base64"
(little-endian float32, which the official client asks for by default); vectors are unit
length, as OpenAI's are.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable

import anyio
import numpy as np

from ..engine.backend import BackendUnavailable
from ..engine.embedding.types import Embedder
from .errors import bad_request, unavailable, unknown_model
from .requests import json_object

MAX_INPUTS = 2048  # OpenAI's limit on one request's inputs
MAX_INPUT_CHARS = 200_000  # one input; the model reads at most its window (512 tokens) of it anyway


class Embeddings:
    """The served embedding model: `model_id` (what requests name) and the model itself, made by
    `load` on first use."""

    def __init__(self, model_id: str, load: Callable[[], Embedder]):
        self.model_id = model_id
        self._load = load
        self._model: Embedder | None = None
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """The texts' vectors and the tokens read (on a worker thread)."""
        with self._lock:
            if self._model is None:
                self._model = self._load()
            vectors = self._model.embed(texts)
            return vectors, sum(min(self._model.count_tokens(text), self._model.max_tokens) for text in texts)

    def close(self) -> None:
        with self._lock:
            if self._model is not None:
                self._model.close()
                self._model = None


def parse(body: bytes, embeddings: Embeddings) -> tuple[list[str], str, str]:
    """The inputs, the encoding asked for and the model named; a 400 naming the field otherwise."""
    data = json_object(body)
    model = data.get("model")
    if not isinstance(model, str) or model != embeddings.model_id:
        raise unknown_model(str(model), embeddings.model_id)
    given = data.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not texts:
        raise bad_request("input: give a string, or a list of strings.", param="input")
    if not all(isinstance(text, str) for text in texts):
        raise bad_request("input: token-id arrays are not taken (they would be another tokenizer's); send text.",
                          param="input", code="unsupported_parameter")
    if len(texts) > MAX_INPUTS or any(len(text) > MAX_INPUT_CHARS for text in texts):
        raise bad_request(f"input: at most {MAX_INPUTS} strings of at most {MAX_INPUT_CHARS:,} characters.",
                          param="input")
    encoding = data.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise bad_request('encoding_format: "float" or "base64".', param="encoding_format")
    if data.get("dimensions") is not None:
        raise bad_request("dimensions: this model's vectors have one length; leave dimensions out.",
                          param="dimensions", code="unsupported_parameter")
    return texts, encoding, model


async def answer(body: bytes, embeddings: Embeddings) -> dict:
    texts, encoding, model = parse(body, embeddings)
    try:
        vectors, tokens = await anyio.to_thread.run_sync(embeddings.embed, texts)
    except BackendUnavailable as exc:  # the model's process died twice on these texts: the next request starts it again
        raise unavailable(f"The embedding model's process stopped ({exc}); try again in a moment.") from None
    rows = vectors.astype("<f4")
    data = [{"object": "embedding", "index": index,
             "embedding": base64.b64encode(row.tobytes()).decode() if encoding == "base64" else row.tolist()}
            for index, row in enumerate(rows)]
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
