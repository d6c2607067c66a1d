"""The decode side of prompt-lookup drafting: each reply token is evaluated with, when
engine/lookup.py has one, a guess at the tokens after it, in one batch, and a guessed token is
kept only where the sampler picks it. The Engine (generator.py) runs its reply loop through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lookup import Drafter, DraftStats

if TYPE_CHECKING:  # the Engine hands in its Llama; this module never imports llama_cpp itself
    from llama_cpp import Llama


class DraftVerifier:
    """Evaluates each reply token as it is chosen, and with it, when prompt lookup has one, a
    drafted guess at the tokens after it: one batch with logits for every row.

    `advance(token)` returns the batch row whose logits the next token is sampled from. When
    the sampler, run on that row, picks the next drafted token, that token is already
    evaluated and `advance` only moves on a row; the first token it does not pick drops the
    rest of the draft from the KV cache and is evaluated with a new draft. So the sampler
    runs once per reply token, in order, on the logits that token follows: its penalties and
    its random stream advance exactly as without drafting (tests/engine/test_lookup_decoding
    shows it). The logits themselves are not bit for bit the same: llama.cpp's CPU kernels
    round a batch's rows differently from a lone token's (as they do a prompt's), so a
    sampled reply can take another word where the draw falls within that rounding of the
    line between two (bench/lookup_decoding.py measures how often); a greedy one rarely can.
    """

    def __init__(self, llm: Llama, context: list[int] | None):
        """`context`: the prompt, to draft from (None: no drafting)."""
        self._llm = llm
        self._context = context
        self._drafter: Drafter | None = None  # made at the first token, after the time to it
        self._pending: list[int] = []  # drafted tokens in the cache after the last accepted one
        self._drafted = 0  # the length of the draft being checked
        self._row = -1
        self._tail_clear = False  # whether the cache holds nothing past the evaluated tokens

    @property
    def draft_stats(self) -> DraftStats | None:
        if self._context is None:
            return None
        return self._drafter.stats if self._drafter is not None else DraftStats()

    @property
    def evaluated(self) -> int:
        """Tokens in the KV cache that belong to the prompt and the reply (not to a draft)."""
        return self._llm.n_tokens - len(self._pending)

    def advance(self, token: int, room: int) -> int:
        """`token` joins the reply, which has room for `room` more tokens after it. A draft
        stops short of the last of them: that token is sampled from the row before it and never
        evaluated (nothing is sampled after it), so it is never decoded only to be taken out."""
        if self._context is None:
            self._decode([token])
            return -1
        if self._drafter is None:
            self._drafter = Drafter(self._context)
        drafter = self._drafter
        drafter.append(token)
        if self._pending:
            if token == self._pending[0]:
                self._pending.pop(0)
                self._row += 1
                if not self._pending:
                    drafter.checked(self._drafted)
                return self._row
            drafter.checked(self._drafted - len(self._pending))
            self.finish()
        llm = self._llm
        draft = drafter.propose(min(room - 1, llm.n_batch - 1, llm.n_ctx() - llm.n_tokens - 1))
        self._decode([token, *draft])
        self._pending, self._drafted = draft, len(draft)
        self._row = 0 if draft else -1
        return self._row

    def finish(self) -> None:
        """Forget the unchecked rest of the draft: the cache then holds exactly the prompt and
        the reply's evaluated tokens, as without drafting, for the next prompt to reuse."""
        if self._pending:
            self._llm.n_tokens -= len(self._pending)
            self._llm._ctx.kv_cache_seq_rm(-1, self._llm.n_tokens, -1)
            self._pending = []

    def _decode(self, batch: list[int]) -> None:
        """`Llama.eval`, but with logits for every row of a batch that carries a draft
        (`Llama.eval` keeps only the last row's unless the model was loaded with logits_all,
        which would cost every prompt batch too), and without its copy of each row into
        `Llama.scores`, which nothing reads (1 MB a token for Gemma 3's vocabulary, #31)."""
        llm = self._llm
        if not self._tail_clear:  # once: from then on every decode and finish() keep it clear
            llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)  # a walk over every cell (36 µs at 32k)
            self._tail_clear = True
        llm._batch.set_batch(batch, llm.n_tokens, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[llm.n_tokens:llm.n_tokens + len(batch)] = batch
        llm.n_tokens += len(batch)
