"""TopKHead (engine/llama/top_k_head.py): the candidates it finds hold a row's k best logits,
whatever the vocabulary's size, and it declines where the k best have no one order (equal
logits, a NaN, fewer than k finite logits). That the picks made from them are llama.cpp's
own, token for token on the real model, is tests/engine/test_sampler_equivalence.py's."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.llama.top_k_head import GROUPS, TopKHead


def row_of(n_vocab: int, seed: int) -> np.ndarray:
    """Logits shaped like a model's: most low, a few far above them."""
    rng = np.random.default_rng(seed)
    row = rng.standard_normal(n_vocab).astype(np.float32)
    row[rng.choice(n_vocab, 60, replace=False)] += rng.uniform(4, 12, 60).astype(np.float32)
    return row


@pytest.mark.parametrize("n_vocab", [262_144, 151_936, 32_000, GROUPS])  # Gemma 3, Qwen, Llama 2, the least
@pytest.mark.parametrize("k", [1, 40, 100])
def test_the_candidates_hold_the_k_best_in_id_order(n_vocab, k):
    head = TopKHead.for_chain(k, 0.7, n_vocab)
    for seed in range(5):
        row = row_of(n_vocab, seed)
        ids = head.candidates(row)
        best = np.argsort(row)[-k:]
        assert set(best) <= set(ids.tolist()) and np.all(np.diff(ids) > 0)
        assert len(ids) < n_vocab // 4 or n_vocab == GROUPS  # a few, not the row


def test_a_logit_past_the_last_whole_group_counts():
    """32,000 is not a multiple of GROUPS: the last 256 logits join the first groups."""
    row = row_of(32_000, 1)
    row[-1] = 100.0
    assert 31_999 in TopKHead.for_chain(40, 0.7, 32_000).candidates(row).tolist()


def test_equal_logits_among_the_best_or_at_the_edge_are_declined():
    head = TopKHead.for_chain(40, 0.7, 262_144)
    row = row_of(262_144, 2)
    order = np.argsort(row)[::-1]
    among = row.copy()
    among[order[5]] = among[order[4]]
    edge = row.copy()
    edge[order[40]] = edge[order[39]]
    below = row.copy()
    below[order[41]] = below[order[40]]  # under the k best: no order to keep there
    assert head.candidates(among) is None and head.candidates(edge) is None
    assert head.candidates(below) is not None


def test_a_nan_or_fewer_than_k_finite_logits_are_declined():
    head = TopKHead.for_chain(40, 0.7, 262_144)
    row = row_of(262_144, 3)
    row[7] = np.nan
    assert head.candidates(row) is None
    banned = np.full(262_144, -np.inf, dtype=np.float32)
    banned[:20] = np.arange(20, dtype=np.float32)
    assert head.candidates(banned) is None


def test_only_a_chain_that_starts_with_top_k_has_a_head():
    assert TopKHead.for_chain(40, 0.0, 262_144) is None  # greedy: the row's argmax
    assert TopKHead.for_chain(0, 0.7, 262_144) is None  # no top-k: top-p reads the whole row
    assert TopKHead.for_chain(GROUPS + 1, 0.7, 262_144) is None
    assert TopKHead.for_chain(40, 0.7, GROUPS - 1) is None
    assert TopKHead.for_chain(40, 0.7, 262_144) is not None
