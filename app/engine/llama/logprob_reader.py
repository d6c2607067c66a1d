"""Each chosen token's log-probability, read from the logits row it was sampled from
(engine/logprobs.py says which distribution and why), held until the text it belongs to
is yielded.

Made per reply by the Engine, and only when the request asks: a log-softmax over Gemma 3's
262,144 logits is about a millisecond with numpy, a cost a reply that asks for nothing must
not pay. `NO_LOGPROBS` stands in otherwise, so the decode loop has one path.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..logprobs import Alternative, TokenLogprob, token_text
from .logits_rows import LogitsRows


class LogprobReader:
    """The log-probabilities of one reply's tokens, with `top` alternatives each."""

    def __init__(self, ctx, n_vocab: int, top: int, piece: Callable[[int], bytes]):
        self._rows = LogitsRows(ctx, n_vocab)  # a LlamaContext's: each row read before the next decode
        self._top = top
        self._piece = piece  # a token's bytes, control tokens as their text
        self._pending: list[TokenLogprob] = []

    def note(self, index: int, token: int) -> None:
        """The reply kept `token`, sampled from batch row `index`: read its row now, while
        the row still holds the logits it was picked from (the next decode overwrites them)."""
        logits = self._rows.row(index)
        shifted = logits - logits.max()
        log_total = float(np.log(np.exp(shifted, dtype=np.float64).sum()))
        top = ()
        if self._top:
            ids = np.argpartition(shifted, -self._top)[-self._top:]
            ids = ids[np.lexsort((ids, -shifted[ids]))]  # likeliest first; ties by id, to be stable
            top = tuple(self._alternative(int(t), float(shifted[t]) - log_total) for t in ids)
        chosen = self._alternative(token, float(shifted[token]) - log_total)
        self._pending.append(TokenLogprob(chosen.token, chosen.logprob, chosen.piece, top))

    def release(self) -> list[TokenLogprob]:
        """The tokens noted since the last release: yielded just before the text they complete."""
        released, self._pending = self._pending, []
        return released

    def _alternative(self, token: int, logprob: float) -> Alternative:
        piece = self._piece(token)
        return Alternative(token_text(piece), logprob, piece)


class _NoLogprobs:
    """A reply that asked for no log-probabilities: notes nothing, costs one call per token."""

    def note(self, index: int, token: int) -> None:
        pass

    def release(self) -> tuple[()]:
        return ()


NO_LOGPROBS = _NoLogprobs()
