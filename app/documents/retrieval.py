"""The sources for a question: the chunks of one or more collections that answer it, best first,
the same for `hearth chat --docs` and the window's attached collections.

The question is embedded once, by the embedding model in use. A collection indexed with another
model cannot be searched by that vector (its vectors mean something else): it is searched by its
words alone, and the Retrieval says which ones were, so the user can be told rather than left
wondering why meaning-alike passages were missed. Hits of several collections are merged by their
fused score (reciprocal rank, on one scale whatever the collection), a passage found in two of
them (a file in both) counted once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..engine.embedding.types import Embedder
from .index import DocumentIndex
from .search import DocumentSearch
from .types import Hit


@dataclass(frozen=True)
class Retrieval:
    """What a question found: the hits, best first, and the collections searched by their words
    only (indexed with another embedding model than the one in use)."""

    hits: tuple[Hit, ...]
    words_only: tuple[str, ...] = ()


def retrieve(index: DocumentIndex, names: Sequence[str], query: str, embedder: Embedder, top: int,
             search: DocumentSearch | None = None) -> Retrieval:
    """The `top` chunks of the collections `names` for `query`. `search` keeps its collections'
    vectors in memory between calls (one per thread, as the index is); raises DocumentIndexError
    for a collection that is gone."""
    search = search or DocumentSearch(index)
    collections = [index.collection(name) for name in dict.fromkeys(names)]
    vector = None
    if any(collection.model == embedder.name for collection in collections):
        vector = embedder.embed([query])[0]
    hits: list[Hit] = []
    words_only: list[str] = []
    for collection in collections:
        same_model = collection.model == embedder.name
        if not same_model:
            words_only.append(collection.name)
        hits.extend(search.search(collection.name, query, vector if same_model else None, top))
    merged: dict[tuple[str, str], Hit] = {}
    for hit in sorted(hits, key=lambda hit: -hit.score):
        merged.setdefault((str(hit.source), hit.text), hit)
    return Retrieval(tuple(list(merged.values())[:top]), tuple(words_only))
