"""Chunks in the default embedding model's own tokens (all-MiniLM-L6-v2's tokenizer.json):
within CHUNK_TOKENS and far under the model's window, cut at paragraphs and sentences, carrying
their page and heading, overlapping their neighbours, and linear in time on hostile shapes."""

from __future__ import annotations

import pydoc_data.topics
import time

import pytest
from support.minilm_tokenizer import count_tokens

from app.documents.chunking import chunk_passages
from app.documents.limits import CHUNK_TOKENS, EMBED_MAX_TOKENS, MAX_CHUNK_CHARS, OVERLAP_TOKENS
from app.documents.types import Passage


def _reference_passages() -> list[Passage]:
    """About half a megabyte of real prose and code: Python's Language Reference topics."""
    return [
        Passage(paragraph, heading=name)
        for name, text in pydoc_data.topics.topics.items()
        for paragraph in text.split("\n\n")
        if paragraph.strip()
    ]


def _check_bounds(chunks) -> None:
    for chunk in chunks:
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.tokens == count_tokens(chunk.text) <= CHUNK_TOKENS < EMBED_MAX_TOKENS
        assert len(chunk.text) <= MAX_CHUNK_CHARS


def test_reference_text_chunks_within_bounds_in_order() -> None:
    passages = _reference_passages()
    chunks = chunk_passages(passages, count_tokens)
    _check_bounds(chunks)
    document = "\n\n".join(passage.text for passage in passages)
    assert all(document[c.start : c.start + len(c.text)] == c.text for c in chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    # Sections long enough are filled, not shredded: most chunks hold well over half the target.
    full = [c for c in chunks if c.tokens >= CHUNK_TOKENS // 2]
    assert len(full) > 0.6 * len(chunks)


def test_a_megabyte_chunks_in_reasonable_time() -> None:
    passages = _reference_passages() * 2  # about 0.95 MB of text
    assert sum(len(p.text) for p in passages) > 900_000
    began = time.perf_counter()
    chunk_passages(passages, count_tokens)
    assert time.perf_counter() - began < 20  # about 1.5 s alone on this machine's two cores


def test_cuts_fall_at_paragraphs_then_sentences() -> None:
    paragraph = " ".join(f"Sentence number {i} says a little about topic {i}." for i in range(12))
    chunks = chunk_passages([Passage(paragraph + "\n\n" + paragraph)], count_tokens, target=128, overlap=0)
    _check_bounds_for(chunks, 128)
    assert all(c.text.endswith(".") for c in chunks)  # never mid-sentence
    assert all(c.text.startswith("Sentence number") for c in chunks)


def _check_bounds_for(chunks, target: int) -> None:
    assert chunks and all(count_tokens(c.text) == c.tokens <= target for c in chunks)


def test_pages_and_headings_are_carried_and_never_crossed() -> None:
    words = " ".join(f"word{i}" for i in range(400))
    passages = [
        Passage(words, page=1, heading="One"),
        Passage("Short tail of page one.", page=1, heading="One"),
        Passage("Page two begins.", page=2, heading="One"),
        Passage("Under a new heading.", page=2, heading="Two"),
    ]
    chunks = chunk_passages(passages, count_tokens)
    assert {(c.page, c.heading) for c in chunks} == {(1, "One"), (2, "One"), (2, "Two")}
    assert [c.text for c in chunks if c.page == 2] == ["Page two begins.", "Under a new heading."]
    assert "Short tail of page one." in chunks[-3].text


def test_neighbours_overlap_by_at_most_the_overlap() -> None:
    text = " ".join(f"Fact {i} is that the number {i} follows {i - 1}." for i in range(1, 300))
    chunks = chunk_passages([Passage(text)], count_tokens)
    assert len(chunks) > 5
    for before, after in zip(chunks, chunks[1:]):
        shared = before.start + len(before.text) - after.start
        assert shared > 0, "no overlap"
        assert count_tokens(after.text[:shared]) <= OVERLAP_TOKENS
        assert after.text[:shared].strip() == before.text[-shared:].strip()


@pytest.mark.parametrize(
    "line",
    [
        "word " * 200_000,  # 1 MB, spaces only
        "a" * 10_000_000,  # 10 MB with no break at all: one [UNK] per 100 characters
        "日本語の文章です" * 50_000,  # no spaces, a token per character
    ],
    ids=["words", "ten-megabytes-no-break", "cjk"],
)
def test_one_long_line_is_cut_in_linear_time(line: str) -> None:
    began = time.perf_counter()
    chunks = chunk_passages([Passage(line)], count_tokens)
    elapsed = time.perf_counter() - began
    _check_bounds(chunks[::25])  # every chunk was counted whole inside; a sample is recounted here
    assert all(c.tokens <= CHUNK_TOKENS and len(c.text) <= MAX_CHUNK_CHARS for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "").startswith(line[:1000].replace(" ", ""))
    assert elapsed < 30, elapsed


def test_empty_and_blank_passages_give_no_chunks() -> None:
    assert chunk_passages([], count_tokens) == []
    assert chunk_passages([Passage("   \n\n  ")], count_tokens) == []


def test_sizes_outside_the_model_are_refused() -> None:
    with pytest.raises(ValueError):
        chunk_passages([Passage("x")], count_tokens, target=EMBED_MAX_TOKENS + 1)
