"""Prompt-lookup drafting: guess the next tokens by copying what followed the context's last
few tokens where they appeared before, in the prompt or in the reply so far.

Many replies repeat their input (code edits, quotes, reformatting, names and numbers), and
there a copied guess is usually right. The engine checks a guess in one batch and keeps a
guessed token only where the sampler picks it (draft_verifier.py), so the sampler, not the
guess, decides the reply; a wrong guess only costs time. This module makes the
guesses and decides how long a guess is worth checking (`DraftLength`): from how often this
reply's guesses came true lately, and nothing where guessing does not pay.

No llama_cpp here: the engine hands in tokens, so all of it is tested alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import takewhile

MIN_NGRAM = 2  # one token recurs everywhere; two in a row are already a fair sign of a copy
MAX_NGRAM = 4
MATCH_CAP = 32  # how far back a match is measured (its length tells copying from coincidence)
CANDIDATES = 8  # the latest occurrences of an n-gram compared, to copy from the best-matching


@dataclass(frozen=True)
class Draft:
    """Guessed next tokens, and how many tokens before them matched the context's end."""

    tokens: list[int]
    match: int


class PromptLookup:
    """The context's tokens and an index of where each short n-gram occurred lately.

    Adding a token updates the index in constant time, so a lookup costs nothing next to a
    decode, whatever the context's length.
    """

    def __init__(self, tokens: Iterable[int] = ()):
        self._tokens: list[int] = []
        # n-gram -> the positions of the tokens that followed its latest occurrences
        self._next: dict[tuple[int, ...], list[int]] = {}
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    def extend(self, tokens: Iterable[int]) -> None:
        for token in tokens:
            self.append(token)

    def append(self, token: int) -> None:
        tokens = self._tokens
        end = len(tokens)  # where `token` goes: it follows the n-grams that end here
        for n in range(MIN_NGRAM, min(MAX_NGRAM, end) + 1):
            positions = self._next.setdefault(tuple(tokens[end - n:end]), [])
            positions.append(end)
            if len(positions) > 2 * CANDIDATES:
                del positions[:-CANDIDATES]
        tokens.append(token)

    def draft(self, limit: int) -> Draft:
        """Up to `limit` tokens that followed an earlier occurrence of the longest n-gram the
        context ends with: of its latest occurrences, the one with the longest match behind
        it (so a copy keeps to the passage it copies, past a line that recurs elsewhere).
        None when the context ends with nothing seen before."""
        tokens = self._tokens
        end = len(tokens)
        if limit <= 0:
            return Draft([], 0)
        for n in range(min(MAX_NGRAM, end), MIN_NGRAM - 1, -1):
            positions = self._next.get(tuple(tokens[end - n:]))
            if not positions:
                continue
            best_start, best_match = 0, 0
            for start in reversed(positions[-CANDIDATES:]):
                match = n
                while match < MATCH_CAP and match < start and tokens[start - match - 1] == tokens[end - match - 1]:
                    match += 1
                if match > best_match:
                    best_start, best_match = start, match
            # The copy may run into the context's own end (a repeating stretch): it still reads on.
            # It stops before an image's positions (negative ids, engine/llama/vision.py): not tokens.
            copy = tokens[best_start:min(best_start + limit, end)]
            return Draft(list(takewhile(lambda token: token >= 0, copy)), best_match)
        return Draft([], 0)


# What a batch of n tokens, with logits for every row, costs in single-token decodes. Batches
# of a multiple of 4: llama.cpp's CPU kernels for repacked weights multiply 4 rows at a time
# and the rest one by one, so 5 tokens cost more than 8. Measured with Gemma 3 270M on 2 CPU
# cores at 1 thread, the dearest case found (its 262k-word output layer is most of the work
# of each row); 2 threads measured 2.5, 3.5, 4.7 and 5.8, and a GPU or a larger model should
# pay less per row (not measured here), so these figures do not overrate a draft. Fixed rather than timed as it
# runs: a timed choice would make a seeded reply depend on the machine's load (a batch
# rounds differently from single tokens), and the same seed and conversation should give
# the same reply.
BATCH_COST = {4: 3.2, 8: 4.7, 12: 6.4, 16: 7.9}
# The chance that one drafted token is right, before this reply has checked any: by how long
# the match behind the draft is (two tokens in common are often chance, sixteen rarely are).
MATCH_PRIORS = ((16, 0.9), (8, 0.8), (4, 0.6), (3, 0.45), (2, 0.3))
PRIOR_WEIGHT = 4.0  # the prior counts as this many checked tokens
DECAY = 0.9  # per checked token: the acceptance rate is the recent one (about the last ten)


@dataclass
class DraftStats:
    """What drafting did in one reply (for the log and the benchmark; not part of ReplyStats)."""

    batches: int = 0  # drafts checked
    drafted: int = 0  # tokens drafted
    accepted: int = 0  # drafted tokens the sampler confirmed


class DraftLength:
    """How many drafted tokens to check in the next batch: the number that gives the most
    tokens per decode, from the recent acceptance rate and the length of the match.

    A batch of 1 + k tokens yields 1 + p + p² + … + pᵏ tokens on average when each drafted
    token is right with chance p (the first wrong one ends the draft); it pays when that
    beats the batch's cost in single decodes. Where nothing does (no match, a short chance
    match, a run of wrong drafts), the answer is 0: the plain one-token decode, nothing lost.
    The sampling per token is the same either way, so it is left out.
    """

    def __init__(self):
        self._right = 0.0  # decayed counts of checked drafted tokens
        self._checked = 0.0

    def choose(self, available: int, match: int) -> int:
        """The number of drafted tokens to check, at most `available` (0: do not draft)."""
        p = self.acceptance(match)
        best, best_rate = 0, 1.0
        for size, cost in BATCH_COST.items():
            k = size - 1
            if k > available:
                break
            rate = sum(p ** i for i in range(k + 1)) / cost
            if rate > best_rate:
                best, best_rate = k, rate
        return best

    def acceptance(self, match: int) -> float:
        prior = next((p for length, p in MATCH_PRIORS if match >= length), 0.0)
        return (prior * PRIOR_WEIGHT + self._right) / (PRIOR_WEIGHT + self._checked)

    def checked(self, drafted: int, accepted: int) -> None:
        """A draft of `drafted` tokens had its first `accepted` confirmed."""
        trials = accepted + (1 if accepted < drafted else 0)
        self._right = self._right * DECAY ** trials + accepted
        self._checked = self._checked * DECAY ** trials + trials


class Drafter:
    """One reply's drafting: its context so far (the prompt, then each reply token) and what
    its drafts have shown about how long the next should be."""

    def __init__(self, context: Iterable[int]):
        self._lookup = PromptLookup(context)
        self._lengths = DraftLength()
        self._drafted = 0  # the length of the draft being checked
        self.stats = DraftStats()

    def append(self, token: int) -> None:
        self._lookup.append(token)

    def propose(self, room: int) -> list[int]:
        """Tokens to check after the last one appended (at most `room`; maybe none)."""
        candidate = self._lookup.draft(min(room, max(BATCH_COST) - 1))
        length = self._lengths.choose(len(candidate.tokens), candidate.match) if candidate.tokens else 0
        self._drafted = length
        if length:
            self.stats.batches += 1
            self.stats.drafted += length
        return candidate.tokens[:length]

    def checked(self, accepted: int) -> None:
        """The last draft proposed had its first `accepted` tokens confirmed."""
        self._lengths.checked(self._drafted, accepted)
        self.stats.accepted += accepted
