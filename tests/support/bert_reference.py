"""A BERT sentence embedding computed in numpy from a Hugging Face folder's safetensors weights:
the reference llama.cpp's embeddings of a converted GGUF are checked against
(tests/engine/test_embedding.py). Written from the BERT paper's forward pass as Hugging Face's
BertModel computes it (post-norm layers, exact erf GELU, token type 0), then the mean over the
tokens and L2 normalisation that sentence-transformers' Pooling and Normalize modules apply.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from app.engine.embedding.convert import read_safetensors

_erf = np.vectorize(math.erf, otypes=[np.float64])


class BertReference:
    """The weights of one model in f64, and its forward pass."""

    def __init__(self, model_dir: Path):
        config = json.loads((model_dir / "config.json").read_text())
        self.n_layer = config["num_hidden_layers"]
        self.n_head = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        self.w = {name.removeprefix("bert."): np.asarray(array, dtype=np.float64)
                  for name, array in read_safetensors(model_dir / "model.safetensors")}

    def _norm(self, x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[f"{prefix}.weight"] + self.w[f"{prefix}.bias"]

    def _dense(self, x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ self.w[f"{prefix}.weight"].T + self.w[f"{prefix}.bias"]

    def hidden_states(self, ids: list[int]) -> np.ndarray:
        w, n = self.w, len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        for i in range(self.n_layer):
            p = f"encoder.layer.{i}"
            heads = [self._dense(x, f"{p}.attention.self.{k}").reshape(n, self.n_head, -1).transpose(1, 0, 2)
                     for k in ("query", "key", "value")]
            q, k, v = heads
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attention = (scores / scores.sum(-1, keepdims=True)) @ v  # (heads, n, head_dim)
            attention = attention.transpose(1, 0, 2).reshape(n, -1)
            x = self._norm(x + self._dense(attention, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
            inner = self._dense(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
            x = self._norm(x + self._dense(inner, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        return x

    def embed(self, ids: list[int]) -> np.ndarray:
        """The sentence embedding of one tokenized text ([CLS] … [SEP] included): the mean of its
        last hidden states, at unit length."""
        pooled = self.hidden_states(ids).mean(0)
        return pooled / np.linalg.norm(pooled)
