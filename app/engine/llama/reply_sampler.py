"""How each token of a reply is picked: the logit bias and penalties applied to the logits they
touch (logit_adjust.py), then llama.cpp's native sampler chain (greedy, or
top-k/top-p/min-p/temperature/dist; greedy without a grammar is the row's argmax, as llama.cpp's
greedy sampler takes it, without copying the row, and a chain that starts with top-k is given
only the candidates its k best are among, top_k_head.py), and, for tool calls and structured
output, a grammar the reply must follow.

The grammar is applied the way llama.cpp's own common_sampler does it, which is why
constrained decoding costs almost nothing: the chain picks a token as if there were no
grammar, the grammar checks that one token alone, and only when it refuses is the grammar
applied to the whole vocabulary (262,144 tokens for Gemma 3, milliseconds of work) and the
token picked again from what it allows. The chain is cloned before each pick, so a refused
pick leaves no trace: the random stream draws once for the pick that stands, and the penalties
count only the token sample() returns. Each kept token is accepted into the grammar and
the chain exactly once. Prompt-lookup drafting (draft_verifier.py) calls sample() once per
reply token, in order, and keeps a drafted token only where sample() picked it, so the
grammar's state always follows the reply's tokens.

A lazy grammar (tool_choice auto) lets the model write freely until a trigger pattern
matches the reply so far. The triggers are matched here, not by llama.cpp's lazy grammar
sampler, for two reasons: llama.cpp runs std::regex over the whole reply at every token,
which is quadratic and recurses deep enough on a long reply to overflow the stack; and it
replays the text from the trigger on into the grammar with no check, throwing a C++
exception through the C API (the process dies) when that text does not fit. Here the text
from the trigger on is checked against a copy of the grammar first, and a token whose
trigger text would not fit is refused like any other.

Once the grammar is complete it allows only end-of-generation tokens. llama.cpp counts some
tokens as such that the Engine keeps as text (Gemma's "</s>"); picked then, they end the
reply as one of the Engine's stop tokens.
"""

from __future__ import annotations

import ctypes
import logging
import re
import weakref

import numpy as np
from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c

from ..sampling import SamplingParams
from .grammar import Grammar
from .logit_adjust import LogitAdjustments
from .logits_rows import LogitsRows
from .top_k_head import TopKHead

log = logging.getLogger(__name__)

TRIGGER_LOOKBACK = 256  # bytes: a trigger found by search is at most this long
RESAMPLE_SHORTLIST = 1024  # candidates the grammar sees first when it refuses the chain's pick
MAX_REFUSED_TRIGGERS = 16  # tokens refused in a row for a trigger whose text does not fit
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class GrammarError(ValueError):
    """A grammar llama.cpp could not compile (the message says which); raised before a reply."""


def build_chain(params: SamplingParams, seed: int) -> int:
    """The native chain for `params` after the logit bias and penalties (logit_adjust.py applies
    those to the logits row first), as a llama_sampler pointer the caller frees."""
    chain = llama_c.llama_sampler_chain_init(llama_c.llama_sampler_chain_default_params())

    def add(sampler) -> None:
        llama_c.llama_sampler_chain_add(chain, sampler)

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


class ReplySampler:
    """Picks the tokens of one reply; made per reply, closed after it (or when collected)."""

    def __init__(self, llm: Llama, params: SamplingParams, seed: int, grammar: Grammar | None = None,
                 stop_tokens: frozenset[int] = frozenset()):
        self._vocab = llm._model.vocab
        self._n_vocab = llama_c.llama_vocab_n_tokens(self._vocab)
        self._llm = llm
        self._buffer = ctypes.create_string_buffer(64)
        self._owned: dict[str, int | None] = {"chain": build_chain(params, seed), "grammar": None}
        self._adjust = LogitAdjustments(params, self._n_vocab)
        self._ctx_pointer = llm._ctx.ctx  # the llama_context its picks read
        self._rows = LogitsRows(llm._ctx, self._n_vocab)
        self._finalizer = weakref.finalize(self, _free, self._owned, self._adjust)
        self._greedy = params.temperature == 0
        # Without a grammar, a top-k chain reads only the candidates that can make its k best.
        self._head = TopKHead.for_chain(params.top_k, params.temperature, self._n_vocab) if grammar is None else None
        self._grammar = grammar
        self._end = min(stop_tokens) if stop_tokens else llama_c.llama_vocab_eos(self._vocab)
        self._stop_tokens = stop_tokens
        self._active = False  # whether the grammar holds the reply now
        if grammar is not None:
            self._owned["grammar"] = self._compile(grammar)
            self._active = not grammar.lazy
            self._triggers = _Triggers(grammar.trigger_patterns) if grammar.lazy else None
            self._ids = np.arange(self._n_vocab, dtype=np.int32)
            self._one = llama_c.llama_token_data()
            self._one_array = llama_c.llama_token_data_array(
                data=ctypes.pointer(self._one), size=1, selected=-1, sorted=False)
        if grammar is not None or self._head is not None:  # candidates handed to the chain, in place
            self._cur_buffer = (llama_c.llama_token_data * self._n_vocab)()
            self._cur = np.frombuffer(self._cur_buffer, dtype=_TOKEN_DATA)
            self._candidates = llama_c.llama_token_data_array(
                data=ctypes.cast(self._cur_buffer, ctypes.POINTER(llama_c.llama_token_data)), size=0,
                selected=-1, sorted=False)
        self.rejections = 0  # picks the grammar refused (how often the slow path ran)

    @property
    def grammar_active(self) -> bool:
        """Whether the grammar holds the reply now (a lazy one: since its trigger)."""
        return self._active

    def close(self) -> None:
        self._finalizer()

    # --- picking -------------------------------------------------------------------------------

    def sample(self, index: int) -> int:
        """The next token, from the logits of the model's batch row `index`: the row biased
        and penalized in place (logit_adjust.py) while the token is picked, then put back; the
        token kept counts against repeats from then on."""
        row = self._rows.row(index)
        if self._adjust.active:
            self._adjust.apply(row)
        try:
            token = self._picked(index, row)
        finally:
            self._adjust.restore(row)
        self._adjust.accept(token)
        return token

    def _picked(self, index: int, row: np.ndarray) -> int:
        chain = self._owned["chain"]
        if self._grammar is None:
            if self._greedy:  # the greedy sampler's pick (the first of the largest), without its copy of the row
                return int(np.argmax(row))
            head = self._head.candidates(row) if self._head is not None else None
            if head is not None:
                return self._pick(row, head, grammar=False)
            return llama_c.llama_sampler_sample(chain, self._ctx_pointer, index)
        snapshot = llama_c.llama_sampler_clone(chain)
        token = llama_c.llama_sampler_sample(chain, self._ctx_pointer, index)
        if self._active:
            if self._allows(self._owned["grammar"], token):
                llama_c.llama_sampler_free(snapshot)
                return self._keep(token)
            self._restore(snapshot)
            self.rejections += 1
            return self._keep(self._resample(index, grammar=True))
        refused: list[int] = []
        piece = self._piece(token)
        while (start := self._triggers.fires(piece)) is not None:  # pending: not yet recorded
            if self._trigger_fits(token, piece, start):
                llama_c.llama_sampler_free(snapshot)
                return token
            refused.append(token)
            self.rejections += 1
            if len(refused) > MAX_REFUSED_TRIGGERS:
                llama_c.llama_sampler_free(snapshot)
                log.warning("ending the reply: %d tokens in a row began a call the grammar refuses", len(refused))
                return self._end  # nothing the model wants to write fits: end the reply
            self._restore(snapshot)
            snapshot = llama_c.llama_sampler_clone(self._owned["chain"])
            token = self._resample(index, grammar=False, banned=refused)
            piece = self._piece(token)
        llama_c.llama_sampler_free(snapshot)
        self._triggers.record(token, piece)
        return token

    def _keep(self, token: int) -> int:
        """Accept a token the grammar allows; an end-of-generation token that the Engine
        keeps as text ends the reply here, where the grammar allowed only an end."""
        llama_c.llama_sampler_accept(self._owned["grammar"], token)
        if token not in self._stop_tokens and llama_c.llama_vocab_is_eog(self._vocab, token):
            return self._end
        return token

    def _restore(self, snapshot: int) -> None:
        """Put the chain back as it was before a refused pick."""
        llama_c.llama_sampler_free(self._owned["chain"])
        self._owned["chain"] = snapshot

    def _resample(self, index: int, grammar: bool, banned: list[int] = ()) -> int:
        """Pick again, with the grammar applied first (or the banned tokens removed), and
        accept the pick into the chain.

        With the grammar, the candidates are first the RESAMPLE_SHORTLIST likeliest tokens
        (and any the request biases), as the grammar costs about the same per candidate and
        the chain never reaches further down in practice (top-k, top-p and min-p keep the
        head; greedy takes the first); only when none of them fits does the grammar go
        through the whole vocabulary."""
        logits = self._rows.row(index)
        if grammar:
            head = min(RESAMPLE_SHORTLIST, self._n_vocab)
            shortlist = np.union1d(np.argpartition(logits, -head)[-head:], self._adjust.bias_ids)
            token = self._pick(logits, shortlist.astype(np.int32), grammar=True)
            if token is not None:
                return token
        return self._pick(logits, self._ids, grammar=grammar, banned=banned)

    def _pick(self, logits: np.ndarray, ids: np.ndarray, grammar: bool, banned: list[int] = ()) -> int | None:
        """Apply the grammar (or the bans) and the chain to the candidates `ids`; the pick,
        accepted into the chain, or None where the grammar allows none of them."""
        cur = self._cur[:len(ids)]
        cur["id"] = ids
        cur["logit"] = logits[ids] if len(ids) < self._n_vocab else logits
        cur["p"] = 0.0
        if banned:
            cur["logit"][banned] = -np.inf  # ids is the whole vocabulary here
        candidates = self._candidates
        candidates.size, candidates.selected, candidates.sorted = len(ids), -1, False
        if grammar:
            llama_c.llama_sampler_apply(self._owned["grammar"], ctypes.byref(candidates))
            if not np.isfinite(cur["logit"]).any():
                return None
        chain = self._owned["chain"]
        llama_c.llama_sampler_apply(chain, ctypes.byref(candidates))
        token = int(candidates.data[candidates.selected].id)
        llama_c.llama_sampler_accept(chain, token)
        return token

    def _allows(self, grammar: int, token: int) -> bool:
        """Whether the grammar, in its state now, allows this one token (cheap: one check)."""
        self._one.id, self._one.logit, self._one.p = token, 1.0, 0.0
        self._one_array.selected = -1
        llama_c.llama_sampler_apply(grammar, ctypes.byref(self._one_array))
        return self._one.logit != -np.inf

    # --- lazy grammars -------------------------------------------------------------------------

    def _trigger_fits(self, token: int, piece: bytes, start: int) -> bool:
        """The pending token (`piece` its bytes) completes a trigger whose constrained text
        begins at byte `start`: check the text from there on against a copy of the grammar,
        and switch the grammar on with that copy if it fits."""
        trial = llama_c.llama_sampler_clone(self._owned["grammar"])
        for span_start, span_token, span in self._triggers.spans(token, piece):
            if span_start + len(span) <= start:
                continue
            replay = [span_token] if span_start >= start else self._tokens(span[start - span_start:])
            if replay is None or not all(self._allows(trial, t) and _accept(trial, t) for t in replay):
                llama_c.llama_sampler_free(trial)
                return False
        llama_c.llama_sampler_free(self._owned["grammar"])
        self._owned["grammar"] = trial
        self._active = True
        return True

    def _tokens(self, text: bytes) -> list[int] | None:
        """Tokens spelling exactly `text` (the part of a token after a trigger starts), or None."""
        tokens = self._llm.tokenize(text, add_bos=False, special=False)
        return tokens if b"".join(self._piece(t) for t in tokens) == text else None

    def _piece(self, token: int) -> bytes:
        """The token's bytes as the grammar reads them (special tokens as their text)."""
        n = llama_c.llama_token_to_piece(self._vocab, token, self._buffer, len(self._buffer), 0, True)
        if n < 0:
            self._buffer = ctypes.create_string_buffer(-n)
            n = llama_c.llama_token_to_piece(self._vocab, token, self._buffer, len(self._buffer), 0, True)
        return self._buffer.raw[:n]

    def _compile(self, grammar: Grammar) -> int:
        sampler = llama_c.llama_sampler_init_grammar(self._vocab, grammar.gbnf.encode(), grammar.root.encode())
        if not sampler:
            raise GrammarError("llama.cpp could not compile the grammar for this reply (see the log)")
        return sampler


class _Triggers:
    """A lazy grammar's trigger patterns over the reply's bytes so far, matched as llama.cpp
    matches them: ^...$ against the whole text, any other searched for (from a little before
    the newest token on, as a match earlier would have fired earlier); the constrained text
    starts at the first non-empty capture group, or at the match."""

    def __init__(self, patterns: tuple[str, ...]):
        self._patterns = [(re.compile(p.encode()), p.startswith("^") and p.endswith("$")) for p in patterns]
        self._text = bytearray()
        self._spans: list[tuple[int, int, bytes]] = []  # (start, token, piece) of each token so far

    def fires(self, piece: bytes) -> int | None:
        """Where the constrained text starts if `piece` joined the reply, or None. The piece is
        tried in place and taken off again, so no token copies the reply so far. A whole-text
        pattern is an opener at the reply's start (Llama 3's bare JSON): it fires within the
        reply's first bytes or not at all, so past them it is not tried again."""
        mark = len(self._text)
        self._text += piece
        try:
            for pattern, whole in self._patterns:
                if whole:
                    match = pattern.fullmatch(self._text) if mark <= TRIGGER_LOOKBACK else None
                else:
                    match = pattern.search(self._text, max(0, mark - TRIGGER_LOOKBACK))
                if match:
                    return next((match.start(g) for g in range(1, len(match.groups()) + 1)
                                 if match.start(g) >= 0 and match.end(g) > match.start(g)), match.start())
            return None
        finally:
            del self._text[mark:]

    def spans(self, token: int, piece: bytes) -> list[tuple[int, int, bytes]]:
        return self._spans + [(len(self._text), token, piece)]

    def record(self, token: int, piece: bytes) -> None:
        self._spans.append((len(self._text), token, piece))
        self._text += piece


def _accept(grammar: int, token: int) -> bool:
    llama_c.llama_sampler_accept(grammar, token)
    return True


def _free(owned: dict[str, int | None], adjust: LogitAdjustments) -> None:
    adjust.close()
    for key in ("chain", "grammar"):
        if owned[key]:
            llama_c.llama_sampler_free(owned[key])
            owned[key] = None
