"""The reply sampler picks exactly what llama.cpp's full-vocabulary chain picked (#31): the logit
bias and penalties now touch only their own tokens (engine/llama/logit_adjust.py), greedy is
the row's argmax, and a chain that starts with top-k reads only the candidates that can make its
k best (engine/llama/top_k_head.py), where before llama.cpp's logit-bias, penalties and greedy samplers visited all
262,144 of Gemma 3's tokens every token. The same seed must give the same text for every
sampler setting.

`full_vocabulary_chain` is the chain as Hearth built it before: the reference. Both samplers
read the same real logits (the real Gemma 3 270M, each row a real decode of the reply so far),
pick, and the reference's pick is what is decoded next, for every setting in SETTINGS; the
two picks must agree at every token, and the row must be left as the model wrote it.
"""

from __future__ import annotations

import numpy as np
import pytest
from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c

from app.engine.llama.logits_rows import LogitsRows
from app.engine.llama.reply_sampler import ReplySampler
from app.engine.sampling import SamplingParams

TOKENS = 48
PROMPT = b"<start_of_turn>user\nList the planets, then list them again in reverse order.<end_of_turn>\n<start_of_turn>model\n"

SETTINGS = {
    "greedy": SamplingParams(temperature=0.0, repeat_penalty=1.0),
    "greedy, repeat penalty": SamplingParams(temperature=0.0, repeat_penalty=1.3, repeat_last_n=16),
    "greedy, all penalties and a bias": SamplingParams(temperature=0.0, repeat_penalty=1.1, presence_penalty=0.7,
                                                       frequency_penalty=0.35, logit_bias={236743: 2.5, 108: -1.5}),
    "balanced": SamplingParams(),
    "creative": SamplingParams(temperature=1.0, top_k=100, top_p=0.98, min_p=0.02, repeat_penalty=1.05),
    "presence only": SamplingParams(repeat_penalty=1.0, presence_penalty=1.5, repeat_last_n=8),
    "frequency, long window": SamplingParams(temperature=0.9, repeat_penalty=1.0, frequency_penalty=0.6,
                                             repeat_last_n=256),
    "no top-k": SamplingParams(top_k=0, top_p=0.9, min_p=0.0, temperature=1.2),
    "penalties off by the window": SamplingParams(repeat_penalty=1.5, repeat_last_n=0),
}


def full_vocabulary_chain(n_vocab: int, params: SamplingParams, seed: int) -> int:
    """The chain Hearth built before #31: logit bias, penalties, then greedy or the rest."""
    chain = llama_c.llama_sampler_chain_init(llama_c.llama_sampler_chain_default_params())

    def add(sampler) -> None:
        llama_c.llama_sampler_chain_add(chain, sampler)

    if params.logit_bias:
        biases = (llama_c.llama_logit_bias * len(params.logit_bias))()
        for entry, (token, bias) in zip(biases, params.logit_bias.items()):
            entry.token, entry.bias = token, bias
        add(llama_c.llama_sampler_init_logit_bias(n_vocab, len(params.logit_bias), biases))
    add(llama_c.llama_sampler_init_penalties(n_vocab, params.repeat_last_n, params.repeat_penalty,
                                             params.frequency_penalty, params.presence_penalty))
    if params.temperature == 0:
        add(llama_c.llama_sampler_init_greedy())
        return chain
    if params.top_k > 0:
        add(llama_c.llama_sampler_init_top_k(params.top_k))
    add(llama_c.llama_sampler_init_top_p(params.top_p, 1))
    add(llama_c.llama_sampler_init_min_p(params.min_p, 1))
    add(llama_c.llama_sampler_init_temp(params.temperature))
    add(llama_c.llama_sampler_init_dist(seed))
    return chain


@pytest.fixture(scope="module")
def llm(gemma_path):
    model = Llama(model_path=str(gemma_path), n_ctx=512, n_threads=1, verbose=False)
    yield model
    model.close()


@pytest.mark.parametrize("name", SETTINGS)
def test_every_pick_is_the_full_vocabulary_chains(llm, name):
    params, seed = SETTINGS[name], 1234
    n_vocab = llama_c.llama_vocab_n_tokens(llm._model.vocab)
    reference = full_vocabulary_chain(n_vocab, params, seed)
    sampler = ReplySampler(llm, params, seed)
    from_the_head = 0  # picks made from a top-k chain's candidates (top_k_head.py), not the whole row
    try:
        llm.reset()
        llm.eval(llm.tokenize(PROMPT, add_bos=True, special=True))
        for step in range(TOKENS):
            row = np.ctypeslib.as_array(llama_c.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(n_vocab,))
            written = row.copy()
            from_the_head += sampler._head is not None and sampler._head.candidates(written) is not None
            ours = sampler.sample(-1)
            assert np.array_equal(row, written, equal_nan=True), "the row was not put back as the model wrote it"
            theirs = llama_c.llama_sampler_sample(reference, llm._ctx.ctx, -1)
            assert ours == theirs, f"{name}: token {step} is {ours} where the full chain picked {theirs}"
            llm.eval([theirs])
    finally:
        sampler.close()
        llama_c.llama_sampler_free(reference)
    top_k_chain = params.temperature > 0 and params.top_k > 0
    assert from_the_head >= TOKENS // 2 if top_k_chain else from_the_head == 0  # the fast way is what was checked


def test_a_kept_row_view_reads_what_llama_cpp_holds_after_its_buffer_grows(llm):
    """LogitsRows keeps a view per row address: after a batch with more rows than llama.cpp's
    output buffer held (it grows it, at new addresses), and after a lone token again, every
    row read is the one llama_get_logits_ith points at now, never a stale copy."""
    n_vocab = llama_c.llama_vocab_n_tokens(llm._model.vocab)
    rows = LogitsRows(llm._ctx, n_vocab)

    def fresh(index: int) -> np.ndarray:
        return np.ctypeslib.as_array(llama_c.llama_get_logits_ith(llm._ctx.ctx, index), shape=(n_vocab,)).copy()

    llm.reset()
    llm.eval(llm.tokenize(PROMPT, add_bos=True, special=True))
    first = rows.row(-1)
    assert np.array_equal(first, fresh(-1)) and first.flags.writeable
    batch = llama_c.llama_batch_init(8, 0, 1)
    try:  # eight rows with logits, where the buffer held one
        for i, token in enumerate(llm.tokenize(b" one two three four five six seven eight", add_bos=False)[:8]):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, llm.n_tokens + i, 1, True
            batch.seq_id[i][0] = 0
        batch.n_tokens = 8
        assert llama_c.llama_decode(llm._ctx.ctx, batch) == 0
        for index in range(8):
            assert np.array_equal(rows.row(index), fresh(index)), f"row {index} is not what llama.cpp holds"
        assert len({rows.row(index).ctypes.data for index in range(8)}) == 8
        llm.n_tokens += 8
    finally:
        llama_c.llama_batch_free(batch)
    llm.eval(llm.tokenize(b" nine", add_bos=False))
    assert np.array_equal(rows.row(-1), fresh(-1))
