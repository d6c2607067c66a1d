"""Passages into chunks sized in the embedding model's own tokens: at most `target` tokens each
(CHUNK_TOKENS, far under the model's EMBED_MAX_TOKENS), the next one beginning with about
`overlap` tokens of the end of the one before, so a sentence cut by a boundary is whole in one of
them. Cuts fall at paragraph breaks where they can, else at sentence ends, line ends, spaces, and
only in a run with no space at all between characters. A chunk keeps its passage's page and
heading and never spans two pages or two headings.

Time is linear in the text, whatever its shape: a piece is only counted when it is at most a
chunk's worth of characters, small pieces are counted in groups rather than one by one, and a
10 MB line with no break is walked in bounded windows, never re-counted from where it began."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from app.documents.limits import CHUNK_TOKENS, EMBED_MAX_TOKENS, MAX_CHUNK_CHARS, OVERLAP_TOKENS
from app.documents.types import Chunk, Passage

CountTokens = Callable[[str], int]

_PASSAGE_GAP = "\n\n"  # between passages in the document's text that Chunk.start indexes
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE = re.compile(r"[.!?…;]['\"”’)\]]*\s+|[。！？]")
_LINE = re.compile(r"\n")
_SPACE = re.compile(r"\s+")
_LEVELS = (_PARAGRAPH, _SENTENCE, _LINE)  # then word windows, then halving
_WORD_WINDOW = 200  # characters in one window of a run with no finer break
_GROUP_CHARS = 300  # small pieces are counted together up to this many characters
_OVERLAP_CHARS = 8 * OVERLAP_TOKENS  # how far back the overlap is looked for


@dataclass(frozen=True)
class _Unit:
    """A span of a section's text that is never cut: [start, end) and its token count."""

    start: int
    end: int
    tokens: int


def chunk_passages(
    passages: Sequence[Passage],
    count_tokens: CountTokens,
    target: int = CHUNK_TOKENS,
    overlap: int = OVERLAP_TOKENS,
) -> list[Chunk]:
    """The chunks of a document's passages, in order. `count_tokens` is the embedding model's
    (Embedder.count_tokens): the sizes are its tokens, not characters or words."""
    if not 16 <= target <= EMBED_MAX_TOKENS or not 0 <= overlap <= target // 4:
        raise ValueError(f"chunks of {target} tokens with {overlap} of overlap")
    chunks: list[Chunk] = []
    for text, page, heading, start in _sections(passages):
        chunks.extend(_SectionCutter(text, count_tokens, target, overlap).chunks(page, heading, start))
    return chunks


def _sections(passages: Sequence[Passage]) -> Iterator[tuple[str, int | None, str, int]]:
    """Runs of consecutive passages on one page under one heading, joined as one text, with
    where each run starts in the whole document's text (passages joined by _PASSAGE_GAP)."""
    offset = 0
    run: list[str] = []
    run_start = 0
    key: tuple[int | None, str] | None = None
    for passage in passages:
        if key is not None and (passage.page, passage.heading) != key:
            yield _PASSAGE_GAP.join(run), key[0], key[1], run_start
            run = []
        if not run:
            run_start = offset
            key = (passage.page, passage.heading)
        run.append(passage.text)
        offset += len(passage.text) + len(_PASSAGE_GAP)
    if run and key is not None:
        yield _PASSAGE_GAP.join(run), key[0], key[1], run_start


class _SectionCutter:
    """One section's text cut into chunks: first into units no longer than a chunk's new
    part may be (`unit_tokens`), then units packed greedily, each chunk checked by counting it
    whole (token counts of pieces need not add up exactly), then the overlap found."""

    def __init__(self, text: str, count_tokens: CountTokens, target: int, overlap: int) -> None:
        self.text = text
        self.count = count_tokens
        self.target = target
        self.overlap = overlap
        self.unit_tokens = target - overlap
        self.unit_chars = MAX_CHUNK_CHARS - _OVERLAP_CHARS

    def chunks(self, page: int | None, heading: str, section_start: int) -> list[Chunk]:
        units: list[_Unit] = []
        self._units(0, len(self.text), 0, units)
        chunks: list[Chunk] = []
        index = 0
        lead = -1  # where the overlap into the next chunk begins (-1: none)
        lead_tokens = 0
        while index < len(units):
            start = lead if lead >= 0 else units[index].start
            end_index = self._pack(units, index, start, lead_tokens)
            end = units[end_index - 1].end
            tokens = self.count(self.text[start:end])
            while tokens > self.target and end_index - index > 1:  # the sum was optimistic
                end_index -= 1
                end = units[end_index - 1].end
                tokens = self.count(self.text[start:end])
            if tokens > self.target and lead >= 0:  # even one unit is too much with the lead
                start, lead = units[index].start, -1
                tokens = self.count(self.text[start:end])
            chunks.append(self._chunk(start, end, tokens, page, heading, section_start))
            lead, lead_tokens = self._lead(units[index].start, end) if end_index < len(units) else (-1, 0)
            index = end_index
        return chunks

    def _pack(self, units: list[_Unit], index: int, start: int, lead_tokens: int) -> int:
        """How many units from `index` on go into the chunk beginning at `start`: at least one,
        then while the summed tokens and the characters fit."""
        total = lead_tokens + units[index].tokens
        end_index = index + 1
        while end_index < len(units):
            unit = units[end_index]
            if total + unit.tokens > self.target or unit.end - start > MAX_CHUNK_CHARS:
                break
            total += unit.tokens
            end_index += 1
        return end_index

    def _chunk(self, start: int, end: int, tokens: int, page: int | None, heading: str, base: int) -> Chunk:
        piece = self.text[start:end]
        stripped = piece.lstrip()
        return Chunk(stripped.rstrip(), page=page, heading=heading, start=base + start + len(piece) - len(stripped), tokens=tokens)

    def _units(self, start: int, end: int, level: int, out: list[_Unit]) -> None:
        """[start, end) as units, each under `unit_tokens` and `unit_chars`: its pieces at
        `level` (grouped while small), and any piece too big split at the next level down."""
        for piece_start, piece_end in _grouped(self._pieces(start, end, level)):
            if not self.text[piece_start:piece_end].strip():
                continue
            if piece_end - piece_start <= self.unit_chars:
                tokens = self.count(self.text[piece_start:piece_end])
                if tokens <= self.unit_tokens:
                    out.append(_Unit(piece_start, piece_end, tokens))
                    continue
            if level < len(_LEVELS) + 1:
                self._units(piece_start, piece_end, level + 1, out)
            else:  # a window of characters with too many tokens: halve it until it fits
                middle = (piece_start + piece_end) // 2
                if middle == piece_start:  # one character over the budget cannot be; keep it
                    out.append(_Unit(piece_start, piece_end, self.count(self.text[piece_start:piece_end])))
                else:
                    self._units(piece_start, middle, level, out)
                    self._units(middle, piece_end, level, out)

    def _pieces(self, start: int, end: int, level: int) -> Iterator[tuple[int, int]]:
        """[start, end) cut after each break of `level` (paragraph, sentence, line), or for the
        word level into windows of at most _WORD_WINDOW characters ending at a space where the
        window has one; the halving level yields the span whole (halved by _units)."""
        if level < len(_LEVELS):
            cut = start
            for match in _LEVELS[level].finditer(self.text, start, end):
                if match.end() > cut:
                    yield cut, match.end()
                    cut = match.end()
            if cut < end:
                yield cut, end
        elif level == len(_LEVELS):
            cut = start
            while cut < end:
                limit = min(cut + _WORD_WINDOW, end)
                if limit < end:
                    space = max(self.text.rfind(" ", cut, limit), self.text.rfind("\n", cut, limit), self.text.rfind("\t", cut, limit))
                    if space > cut:
                        limit = space + 1
                yield cut, limit
                cut = limit
        else:
            yield start, end

    def _lead(self, floor: int, end: int) -> tuple[int, int]:
        """Where the next chunk begins inside this one's new text [floor, end) (a word start, a
        sentence start where one fits), and its tokens: the longest suffix of at most `overlap`
        tokens, found among the word starts of a bounded tail. (-1, 0) when none."""
        if self.overlap == 0:
            return -1, 0
        tail = max(floor + 1, end - _OVERLAP_CHARS)
        starts = [match.end() for match in _SPACE.finditer(self.text, tail - 1, end) if match.end() < end]
        if not starts:  # no space at all: characters
            starts = list(range(tail, end))
        best = self._longest_fitting(starts, end)
        if best < 0:
            return -1, 0
        lead = starts[best]
        sentence = _SENTENCE.search(self.text, lead, end)
        if sentence and sentence.end() < end and self.text[sentence.end() : end].strip():
            lead = sentence.end()
        return lead, self.count(self.text[lead:end])


    def _longest_fitting(self, starts: list[int], end: int) -> int:
        """The first index of `starts` whose suffix up to `end` has at most `overlap` tokens, or
        -1. The tail's own count gives a guess by its characters per token; a gallop from the
        guess and a bisection between the last two steps finish it in a few counts, not one per
        start (a tail of CJK text has 256 of them)."""

        def fits(index: int) -> bool:
            return self.count(self.text[starts[index] : end]) <= self.overlap

        whole = self.count(self.text[starts[0] : end])
        if whole <= self.overlap:
            return 0
        wanted = end - (end - starts[0]) * self.overlap // whole
        guess = min(bisect_left(starts, wanted), len(starts) - 1)
        step = 1
        if fits(guess):  # fitting: gallop towards longer suffixes (smaller indices)
            good, bad = guess, 0
            while good - step > 0 and fits(good - step):
                good, step = good - step, step * 2
            bad = max(0, good - step)
        else:  # gallop towards shorter suffixes until one fits
            bad, good = guess, -1
            while bad + step < len(starts):
                if fits(bad + step):
                    good = bad + step
                    break
                bad, step = bad + step, step * 2
            if good < 0:
                return -1
        while good - bad > 1:  # starts[bad] is too long, starts[good] fits
            middle = (good + bad) // 2
            if fits(middle):
                good = middle
            else:
                bad = middle
        return good


def _grouped(pieces: Iterator[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Consecutive pieces joined while together they stay under _GROUP_CHARS, so a text of a
    million one-word sentences is counted in a few thousand calls, not a million."""
    group_start = group_end = -1
    for start, end in pieces:
        if group_start >= 0 and end - group_start <= _GROUP_CHARS:
            group_end = end
            continue
        if group_start >= 0:
            yield group_start, group_end
        group_start, group_end = start, end
    if group_start >= 0:
        yield group_start, group_end
