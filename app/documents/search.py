"""Hybrid search over a collection, the way GPT4All's LocalDocs does it: words by BM25 (SQLite's
FTS5) and meaning by vector similarity, the two rankings fused by reciprocal rank.

Each finds what the other misses: BM25 the exact name, number or rare word a question repeats,
the vectors a passage that says the same in other words. Reciprocal rank fusion (Cormack et
al., 2009) adds 1 / (k + rank) over the rankings a chunk is in; it needs no calibration between
BM25's scores and cosines, which live on unrelated scales, and with k = 60 a chunk both found
near the top beats one found first by only one of them.

The vectors are searched exactly, in numpy: this Python's sqlite3 cannot load extensions (so no
sqlite-vec), and a matrix product over a collection's float32 matrix, held in memory once read,
meets the speed figure on 100,000 chunks (bench/docs_search.py). The matrix is read again when
the collection's generation says it changed, in this process or in another.

Query text is the user's: it becomes FTS5 syntax only as quoted terms (fts_query), so quotes,
NEAR, *, ^, parentheses, column names and AND/OR/NOT are words to look for, never operators; a
query without a word (punctuation only) is searched by its vector alone.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.documents.index import DocumentIndex, DocumentIndexError
from app.documents.limits import CANDIDATES, MAX_QUERY_CHARS, MAX_TERMS, RRF_K, SCORED_CHUNKS, TOP
from app.documents.types import Hit

# A word as FTS5's unicode61 tokenizer reads one: letters, digits (of any script), no underscore.
_WORD = re.compile(r"[^\W_]+")


def query_terms(text: str, max_terms: int = MAX_TERMS) -> list[str]:
    """text's words as the full-text index's tokenizer writes them (folded, accents taken off),
    each once, in order, at most max_terms."""
    # Accents come off first (canonical decomposition, its marks dropped) and the words are cut
    # after, so that each term is one token of the index's (a term of two would be a phrase,
    # stricter than the word asked for) and is counted as the tokenizer wrote it.
    decomposed = unicodedata.normalize("NFD", text[:MAX_QUERY_CHARS].casefold())
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    terms: list[str] = []
    for term in _WORD.findall(plain):
        if term not in terms:
            terms.append(term)
            if len(terms) == max_terms:
                break
    return terms


def fts_query(terms: Sequence[str]) -> str | None:
    """An FTS5 expression that matches any of terms ('"a" OR "b"'), each quoted (a quote inside
    one doubled), so nothing in it is read as an operator; None without terms."""
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def telling_terms(terms: Sequence[str], chunk_counts: dict[str, int], budget: int = SCORED_CHUNKS) -> list[str]:
    """The rarest of terms, in their order, as many as keep the chunks BM25 must score within
    budget (the sum of their chunk counts, each counted up to budget + 1; the rarest one is always
    kept); terms no chunk has are left out (they find nothing).

    FTS5 scores every chunk that matches any term before it sorts them, about 1.7 µs each: "how",
    "the" or "does" are in a third to all of the chunks, and with them a question over 100,000
    chunks took 174 ms (bench/docs_search.py). They are also the terms that count least: BM25's
    idf, log((N - n + 0.5) / (n + 0.5)), is near 0 for them (FTS5 sets it to 1e-6 from half the
    chunks up), so the chunks they alone find would rank last, and the order of the others
    changes little. A collection smaller than the budget keeps every term: its BM25 is exact."""
    seen = sorted((count, order, term) for order, term in enumerate(terms) if (count := chunk_counts.get(term, 0)))
    kept: list[tuple[int, str]] = []
    scored = 0
    for count, order, term in seen:
        if kept and scored + count > budget:
            break
        kept.append((order, term))
        scored += count
    return [term for _, term in sorted(kept)]


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: each id's sum of 1 / (k + rank) over the rankings (rank 1 first),
    best first; ties keep the order in which the ids were first met."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])


@dataclass(frozen=True)
class _Vectors:
    """A collection's vectors as read at `generation`: chunk ids and their rows, in one order."""

    generation: int
    dims: int
    ids: np.ndarray
    matrix: np.ndarray


class DocumentSearch:
    """Searches one index; keeps each collection's vectors in memory between searches (about
    1.5 KB a chunk for a 384-long model). One per thread, as its index."""

    def __init__(self, index: DocumentIndex):
        self.index = index
        self._vectors: dict[int, _Vectors] = {}

    def search(self, collection: str, query: str, query_vector: np.ndarray | None, top: int = TOP) -> list[Hit]:
        """The `top` chunks of the collection for query, best first: its words by BM25 and
        query_vector (the query embedded by the collection's model, unit length; None: words
        only) by cosine, fused by reciprocal rank. Each Hit says its rank in each search."""
        found = self.index.collection(collection)
        keyword = self.keyword(found.id, query)
        vector = self.nearest(found.id, query_vector) if query_vector is not None else []
        fused = fuse([keyword, vector])[:top]
        chunks = self.index.chunks([chunk_id for chunk_id, _ in fused])
        keyword_rank = {chunk_id: rank for rank, chunk_id in enumerate(keyword, start=1)}
        vector_rank = {chunk_id: rank for rank, chunk_id in enumerate(vector, start=1)}
        return [Hit(source=chunk.source, text=chunk.text, score=score, page=chunk.page, heading=chunk.heading,
                    chunk_id=chunk_id, keyword_rank=keyword_rank.get(chunk_id), vector_rank=vector_rank.get(chunk_id))
                for chunk_id, score in fused if (chunk := chunks.get(chunk_id)) is not None]

    def keyword(self, collection_id: int, query: str, limit: int = CANDIDATES) -> list[int]:
        """The collection's chunk ids by BM25 for query's words, best first ([] without words)."""
        terms = query_terms(query)
        if not terms:
            return []
        match = fts_query(telling_terms(terms, self.index.term_chunks(terms, SCORED_CHUNKS)))
        return self.index.keyword_ranks(collection_id, match, limit) if match else []

    def nearest(self, collection_id: int, query_vector: np.ndarray, limit: int = CANDIDATES) -> list[int]:
        """The collection's chunk ids by cosine to query_vector (rows and query are unit length,
        so a dot product), best first."""
        vectors = self._current(collection_id)
        query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != vectors.dims:
            raise DocumentIndexError(f"The question's vector is {query.shape[0]} long; this collection's model "
                                     f"makes them {vectors.dims} long.")
        if not len(vectors.ids):
            return []
        scores = vectors.matrix @ query
        count = min(limit, len(scores))
        best = np.argpartition(-scores, count - 1)[:count]
        best = best[np.argsort(-scores[best], kind="stable")]
        return vectors.ids[best].tolist()

    def forget(self, collection_id: int | None = None) -> None:
        """Drop the vectors kept for a collection (every collection with None): memory back."""
        if collection_id is None:
            self._vectors.clear()
        else:
            self._vectors.pop(collection_id, None)

    def _current(self, collection_id: int) -> _Vectors:
        """The collection's vectors, read again only when its generation moved since."""
        found = self.index.collection_by_id(collection_id)
        if found is None:
            self._vectors.pop(collection_id, None)
            raise DocumentIndexError("The collection is gone.")
        kept = self._vectors.get(collection_id)
        if kept is None or kept.generation != found.generation:
            self._vectors.pop(collection_id, None)  # the old matrix is freed before the new one is read
            ids, matrix = self.index.load_vectors(collection_id, found.dims)
            kept = self._vectors[collection_id] = _Vectors(found.generation, found.dims, ids, matrix)
        return kept
