"""A reply's logit bias and repetition penalties, applied to the few logits they touch (#31).

llama.cpp's logit-bias and penalties samplers visit every candidate: the penalties one looks up
each of the vocabulary's tokens in its map of recent ones (262,144 lookups a token for Gemma 3,
about 2 ms on this CPU, a tenth of the forward pass of the default model), though at most
`repeat_last_n` of them can be in it. Here the bias is added to its own tokens and the penalties
are applied to the recent tokens alone, in the logits row itself, before the chain reads it;
the row is put back as it was once the token is picked, so the log-probabilities read from it
afterwards are the model's own (as the samplers, working on a copy, left them).

The penalties are computed by llama.cpp's own penalties sampler, given only the recent tokens as
its candidates: the same compiled arithmetic (its multiply-or-divide by the repeat penalty, and
whatever the compiler made of `count * freq + present`), so every reply is the one the full-vocabulary
sampler gave, to the bit. Its history is the reply's kept tokens, as before (`accept`).
"""

from __future__ import annotations

import ctypes
from collections import Counter, deque

import numpy as np
from llama_cpp import llama_cpp as llama_c

from ..sampling import SamplingParams

_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class LogitAdjustments:
    """One reply's bias and penalties: `apply` to a row before a pick, `restore` after it,
    `accept` each token the reply keeps. Frees its llama.cpp sampler on close."""

    def __init__(self, params: SamplingParams, n_vocab: int):
        biased = sorted((token, bias) for token, bias in params.logit_bias.items() if 0 <= token < n_vocab)
        self.bias_ids = np.array([token for token, _ in biased], dtype=np.int64)  # sorted, in the vocabulary
        self._bias = np.array([bias for _, bias in biased], dtype=np.float32)
        self._last_n = params.repeat_last_n
        penalizes = not (params.repeat_last_n == 0 or (params.repeat_penalty == 1.0 and params.frequency_penalty == 0.0
                                                        and params.presence_penalty == 0.0))
        self._penalties = llama_c.llama_sampler_init_penalties(
            n_vocab, params.repeat_last_n, params.repeat_penalty, params.frequency_penalty,
            params.presence_penalty) if penalizes else None
        self._recent: deque[int] = deque()
        self._counts: Counter[int] = Counter()
        self._cur = np.empty(max(params.repeat_last_n, 1) if penalizes else 1, dtype=_TOKEN_DATA)
        self._saved: tuple[np.ndarray, np.ndarray] | None = None
        self.active = bool(len(self.bias_ids)) or penalizes

    def apply(self, row: np.ndarray) -> None:
        """Bias, then penalize, the tokens they touch in `row` (the chain's order before #31)."""
        recent = np.fromiter(self._counts, dtype=np.int64, count=len(self._counts)) if self._penalties else None
        touched = self.bias_ids if recent is None or not len(recent) else np.union1d(self.bias_ids, recent)
        self._saved = (touched, row[touched].copy())
        if len(self.bias_ids):
            row[self.bias_ids] += self._bias
        if recent is not None and len(recent):
            cur = self._cur[:len(recent)]
            cur["id"], cur["logit"], cur["p"] = recent, row[recent], 0.0
            candidates = llama_c.llama_token_data_array(
                data=cur.ctypes.data_as(ctypes.POINTER(llama_c.llama_token_data)), size=len(recent), selected=-1,
                sorted=False)
            llama_c.llama_sampler_apply(self._penalties, ctypes.byref(candidates))
            row[recent] = cur["logit"]

    def restore(self, row: np.ndarray) -> None:
        """The row as the model wrote it."""
        if self._saved is not None:
            touched, values = self._saved
            row[touched] = values
            self._saved = None

    def accept(self, token: int) -> None:
        """A token the reply keeps: it counts against repeating it from now on."""
        if self._penalties is None:
            return
        llama_c.llama_sampler_accept(self._penalties, token)
        self._recent.append(token)
        self._counts[token] += 1
        if len(self._recent) > self._last_n > 0:
            oldest = self._recent.popleft()
            self._counts[oldest] -= 1
            if not self._counts[oldest]:
                del self._counts[oldest]

    def close(self) -> None:
        if self._penalties:
            llama_c.llama_sampler_free(self._penalties)
            self._penalties = None
