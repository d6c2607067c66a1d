"""The real embedding model with a gate: its first embed waits for `gate`, so a test cancels
while a file is being embedded rather than racing the indexing thread to it."""

from __future__ import annotations

import threading

GATE_WAIT_S = 60.0


class GatedEmbedder:
    def __init__(self, model):
        self._model, self.gate, self.embedding = model, threading.Event(), threading.Event()
        self.name, self.dims = model.name, model.dims
        self.calls = 0  # embed calls: batches embedded

    def embed(self, texts):
        self.calls += 1
        self.embedding.set()
        self.gate.wait(GATE_WAIT_S)
        return self._model.embed(texts)

    def count_tokens(self, text):
        return self._model.count_tokens(text)

    def close(self):
        self._model.close()
