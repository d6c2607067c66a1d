"""Hybrid search on a real index: words by BM25, meaning by the nearest vectors, the two fused by
reciprocal rank; hostile query text never raises; the vectors kept in memory follow changes."""

from __future__ import annotations

import numpy as np
import pytest

from app.documents.index import DocumentIndex, DocumentIndexError
from app.documents.search import DocumentSearch, fts_query, fuse, query_terms, telling_terms
from app.documents.types import Chunk

DIMS = 16


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def axis(number: int, wobble: float = 0.0) -> np.ndarray:
    """A unit vector near axis `number`: the nearest ones to axis(n) are those built from n."""
    vector = np.full(DIMS, wobble, dtype=np.float32)
    vector[number] = 1.0
    return unit(vector)


@pytest.fixture
def index(tmp_path):
    with DocumentIndex(tmp_path / "documents.sqlite3") as opened:
        opened.add_collection("notes", "test-model", DIMS)
        yield opened


def put(index: DocumentIndex, path: str, texts: list[str], vectors: list[np.ndarray], collection: str = "notes") -> None:
    index.replace_file(collection, path, 1, 1, "0" * 64, [Chunk(text) for text in texts], np.stack(vectors))


def test_words_are_found_by_bm25(index):
    put(index, "/a.txt", ["the kettle boils water", "a teapot holds tea", "kettle kettle kettle descaling"],
        [axis(0), axis(1), axis(2)])
    hits = DocumentSearch(index).search("notes", "Kettle?", None)
    assert [hit.text for hit in hits][:2] == ["kettle kettle kettle descaling", "the kettle boils water"]
    assert all(hit.vector_rank is None and hit.keyword_rank for hit in hits)
    assert hits[0].source.as_posix() == "/a.txt"


def test_the_nearest_vectors_are_found(index):
    put(index, "/a.txt", [f"chunk {n}" for n in range(8)], [axis(n) for n in range(8)])
    search = DocumentSearch(index)
    hits = search.search("notes", "", axis(5, wobble=0.01), top=3)
    assert hits[0].text == "chunk 5" and hits[0].vector_rank == 1 and hits[0].keyword_rank is None
    assert len(hits) == 3


def test_a_chunk_found_by_both_ranks_above_those_found_by_one(index):
    texts = ["apples and pears", "the orchard", "pruning apples", "cider"]
    put(index, "/a.txt", texts, [axis(0), axis(1), axis(2), axis(3)])
    # "pruning apples" is second by words (one of two "apples") and second by meaning; each
    # search's own first is found by that one alone.
    query = unit(axis(3) + 0.8 * axis(2))
    hits = DocumentSearch(index).search("notes", "pruning apples", query, top=4)
    assert hits[0].text == "pruning apples"
    assert hits[0].keyword_rank is not None and hits[0].vector_rank is not None
    assert hits[0].score > hits[1].score


def test_fusion_adds_reciprocal_ranks():
    fused = dict(fuse([[1, 2, 3], [3, 4]], k=60))
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[1] == pytest.approx(1 / 61)
    assert next(iter(dict(fuse([[1, 2, 3], [3, 4]])))) == 3


@pytest.mark.parametrize("query", [
    '"', '""', 'a"b', 'NEAR(kettle water, 2)', 'kettle*', '*', '(', ')', '((kettle', 'kettle OR', 'AND', 'NOT kettle',
    '-kettle', '^kettle', 'text:kettle', '{text heading}: kettle', 'collection_id : 1', '+', ':', "'; DROP TABLE chunks; --",
    'Ünïcödé straße', '水を沸かす', '½ ²', 'emoji 🫖 kettle', '\x00\x1f', 'kettle_water', 'e\u0301', ' ', '!!! ??? ...',
    "kettle " * 5000,
])
def test_hostile_queries_never_raise(index, query):
    put(index, "/a.txt", ["the kettle boils water", "Straße und Ünïcödé", "水を沸かす"], [axis(0), axis(1), axis(2)])
    hits = DocumentSearch(index).search("notes", query, axis(0))
    assert hits and any(hit.text == "the kettle boils water" and hit.vector_rank == 1 for hit in hits)


def test_a_query_of_punctuation_is_searched_by_its_vector_alone(index):
    put(index, "/a.txt", ["one", "two"], [axis(0), axis(1)])
    assert fts_query(query_terms("?!(*)\"'")) is None
    hits = DocumentSearch(index).search("notes", "?!(*)\"'", axis(1))
    assert hits[0].text == "two" and all(hit.keyword_rank is None for hit in hits)


def test_query_terms_are_the_tokenizers_words():
    assert query_terms('Héllo, "WORLD" hello_world NEAR(x)') == ["hello", "world", "near", "x"]
    assert fts_query(["a", 'b"c']) == '"a" OR "b""c"'


def test_the_commonest_terms_are_left_out_within_the_budget():
    counts = {"the": 9000, "kettle": 40, "how": 3000, "descaling": 3}
    assert telling_terms(["how", "the", "kettle", "descaling", "unseen"], counts, budget=100) == ["kettle", "descaling"]
    assert telling_terms(["the", "how"], counts, budget=100) == ["how"]  # the rarest is always kept
    assert telling_terms(["how", "the"], counts, budget=100_000) == ["how", "the"]
    assert telling_terms(["unseen"], counts) == []


def test_a_search_stays_in_its_collection(index):
    index.add_collection("other", "test-model", DIMS)
    put(index, "/a.txt", ["kettle here"], [axis(0)])
    put(index, "/b.txt", ["kettle there"], [axis(0)], collection="other")
    hits = DocumentSearch(index).search("notes", "kettle", axis(0))
    assert [hit.text for hit in hits] == ["kettle here"]


def test_the_vectors_kept_follow_changes_to_the_collection(index):
    search = DocumentSearch(index)
    put(index, "/a.txt", ["first"], [axis(0)])
    assert search.search("notes", "", axis(0))[0].text == "first"
    put(index, "/b.txt", ["second"], [axis(1)])
    assert search.search("notes", "", axis(1))[0].text == "second"
    index.remove_missing("notes", ["/b.txt"])
    assert [hit.text for hit in search.search("notes", "", axis(0))] == ["second"]


def test_a_query_vector_of_another_length_is_a_typed_error(index):
    put(index, "/a.txt", ["one"], [axis(0)])
    with pytest.raises(DocumentIndexError, match="16 long"):
        DocumentSearch(index).search("notes", "one", np.ones(4, np.float32))


def test_an_empty_collection_finds_nothing(index):
    assert DocumentSearch(index).search("notes", "anything", axis(0)) == []


def test_ten_thousand_chunks_are_searched(index):
    rng = np.random.default_rng(3)
    words = [f"word{n}" for n in range(2000)]
    vectors = rng.standard_normal((10_000, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for file in range(100):
        drawn = rng.integers(0, len(words), size=(100, 40))
        chunks = [Chunk(" ".join(words[i] for i in row)) for row in drawn]
        index.replace_file("notes", f"/{file}.txt", 1, 1, "0" * 64, chunks, vectors[file * 100:(file + 1) * 100])
    search = DocumentSearch(index)
    for number in range(5):
        hits = search.search("notes", f"word{number} word{number + 7} missing", vectors[number * 37] + 0.01, top=5)
        assert len(hits) == 5 and any(hit.vector_rank == 1 for hit in hits)
