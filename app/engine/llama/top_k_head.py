"""The few tokens that can make a top-k chain's k best, found without sorting the vocabulary (#31).

llama.cpp's `llama_sampler_sample` copies the whole logits row into candidates (262,144 of them
for Gemma 3) and its top-k sampler sorts them all partially: about 340 µs a token here, 2.3% of
the forward pass, under the Balanced preset that every reply samples with by default. When top-k
is the chain's first sampler, every sampler after it sees only the k best, in order: the chain
applied to any candidates that hold those k picks what it picks from the whole row, drawing the
same random numbers. reply_sampler.py applies it so.

The candidates are the logits that reach a threshold that at least k logits reach. Deal the row
into GROUPS groups (logit i into group i mod GROUPS; the few past the last whole round are left
out of the groups, which can only lower the threshold): the k-th largest of the groups' maxima
is one, since the k largest maxima are k logits that reach it, so each of the k best logits
reaches it too. Finding it reads the row once (numpy takes the maxima of GROUPS columns at once)
and sorts nothing larger than GROUPS.

llama.cpp's partial sort orders equal logits by where they lie in its input, which a shorter input
changes. Where the k best hold two equal logits, or the k-th equals the next, there is no one
order to match, and the caller samples the whole row as before. A row with a NaN goes there too,
and so does one whose best logit is beyond MAX_LOGIT: for k above 128 llama.cpp sorts by buckets,
and a logit that overflows when scaled to its bucket (+inf, or above about 5e37) is put in the
lowest one, which no candidate list could match.
"""

from __future__ import annotations

import numpy as np

GROUPS = 1024  # Gemma 3's row: 256 logits each
MAX_LOGIT = 1e37


class TopKHead:
    """Finds, in a logits row of `n_vocab`, candidates that hold the `k` best logits."""

    def __init__(self, k: int, n_vocab: int):
        self._k = k
        self._whole = n_vocab // GROUPS * GROUPS  # the rest, fewer than GROUPS, is in no group

    @classmethod
    def for_chain(cls, top_k: int, temperature: float, n_vocab: int) -> TopKHead | None:
        """One for a chain that starts with top-k (reply_sampler.build_chain: temperature above
        0 and top_k on); None where it does not, or where k or GROUPS is more than the row has."""
        if temperature <= 0 or not 0 < top_k <= GROUPS or n_vocab < GROUPS:
            return None
        return cls(top_k, n_vocab)

    def candidates(self, row: np.ndarray) -> np.ndarray | None:
        """The ids of the logits that reach the threshold, in id order (as the whole row lists
        them); None where the k best cannot be told apart (equal logits, a NaN)."""
        maxima = row[:self._whole].reshape(-1, GROUPS).max(axis=0)
        if np.isnan(maxima).any() or np.isnan(row[self._whole:]).any():
            return None
        threshold = np.partition(maxima, GROUPS - self._k)[GROUPS - self._k]
        ids = np.flatnonzero(row >= threshold)
        logits = row[ids]
        best = np.partition(logits, len(logits) - self._k - 1)[-self._k - 1:] if len(logits) > self._k else logits
        best = np.sort(best)
        if (best[1:] == best[:-1]).any() or not best[-1] <= MAX_LOGIT:
            return None
        return ids.astype(np.int32, copy=False)
