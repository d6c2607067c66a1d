"""TopKHead (engine/llama/top_k_head.py): the candidates it finds hold a row's k best logits,
whatever the vocabulary's size, and it declines where the k best have no one order (equal
logits, a NaN, fewer than k finite logits, a logit llama.cpp's bucket sort misplaces). The
chain given only them picks what llama.cpp's own chain picks from the whole row, on rows made
here for each case (below) and token for token on the real model
(tests/engine/test_sampler_equivalence.py)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from llama_cpp import llama_cpp as llama_c

from app.engine.llama.reply_sampler import build_chain
from app.engine.llama.top_k_head import GROUPS, TopKHead
from app.engine.sampling import SamplingParams

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


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


def test_a_logit_past_the_last_whole_group_is_a_candidate_when_it_is_among_the_best():
    """32,000 is not a multiple of GROUPS: the last 256 logits are in no group, yet read."""
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


def test_a_logit_beyond_what_llama_cpps_bucket_sort_places_is_declined():
    head = TopKHead.for_chain(200, 0.7, 262_144)
    for value in (np.inf, 3e38):
        row = row_of(262_144, 4)
        row[12_345] = value
        assert head.candidates(row) is None


def picked(chain: int, row: np.ndarray, ids: np.ndarray) -> int:
    """The chain's pick from these candidates, accepted, as llama_sampler_sample takes it."""
    cur = np.empty(len(ids), dtype=TOKEN_DATA)
    cur["id"], cur["logit"], cur["p"] = ids, row[ids], 0.0
    candidates = llama_c.llama_token_data_array(
        data=cur.ctypes.data_as(ctypes.POINTER(llama_c.llama_token_data)), size=len(ids), selected=-1, sorted=False)
    llama_c.llama_sampler_apply(chain, ctypes.byref(candidates))
    token = int(cur[candidates.selected]["id"])
    llama_c.llama_sampler_accept(chain, token)
    return token


def rows_for(case: str, n_vocab: int, rng: np.random.Generator) -> list[np.ndarray]:
    rows = [row_of(n_vocab, int(rng.integers(1 << 30))) for _ in range(12)]
    if case == "bans":  # the logit bias's -inf, among the best and elsewhere
        for row in rows:
            row[rng.choice(n_vocab, n_vocab // 50, replace=False)] = -np.inf
            row[np.argsort(row)[-3:]] = -np.inf
    elif case == "ties":
        for row in rows:
            best = np.argsort(row)[::-1]
            row[best[int(rng.integers(1, 60))]] = row[best[0]]
    elif case == "one +inf":
        for row in rows:
            row[rng.integers(n_vocab)] = np.inf
    elif case == "all low":  # every logit in llama.cpp's lowest bucket
        rows = [row - 40 for row in rows]
    return rows


@pytest.mark.parametrize("k", [1, 40, 200, 1024])
@pytest.mark.parametrize("n_vocab", [262_144, 32_000, 1_500])
@pytest.mark.parametrize("case", ["plain", "bans", "ties", "one +inf", "all low"])
def test_the_chain_given_the_candidates_picks_what_it_picks_from_the_whole_row(k, n_vocab, case):
    """Two chains with one seed: one given every logit, as llama_sampler_sample gives them, the
    other the head's candidates where it has them (else the whole row too). Top-p and min-p
    are off, so the k-th best can be drawn and a wrong k best would show."""
    params = SamplingParams(top_k=k, temperature=1.0, top_p=1.0, min_p=0.0)
    whole, headed = build_chain(params, 42), build_chain(params, 42)
    head = TopKHead.for_chain(k, params.temperature, n_vocab)
    every = np.arange(n_vocab, dtype=np.int32)
    try:
        for row in rows_for(case, n_vocab, np.random.default_rng(k + n_vocab)):
            ids = head.candidates(row) if head is not None else None
            assert picked(whole, row, every) == picked(headed, row, every if ids is None else ids)
    finally:
        llama_c.llama_sampler_free(whole)
        llama_c.llama_sampler_free(headed)


def test_only_a_chain_that_starts_with_top_k_has_a_head():
    assert TopKHead.for_chain(40, 0.0, 262_144) is None  # greedy: the row's argmax
    assert TopKHead.for_chain(0, 0.7, 262_144) is None  # no top-k: top-p reads the whole row
    assert TopKHead.for_chain(GROUPS + 1, 0.7, 262_144) is None
    assert TopKHead.for_chain(40, 0.7, GROUPS - 1) is None
    assert TopKHead.for_chain(40, 0.7, 262_144) is not None
