"""The typed values of documents: what a reader gives (Passage), what the index keeps (Chunk)
and what a search finds (Hit). Everything in them came from the user's files: untrusted text,
shown only through common/text.py and escaped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class DocumentError(ValueError):
    """A file that cannot be read as a document; the message says why (damaged, not the format
    its name says, too large), for the user, naming no more than the file."""


class EmbeddingStopped(Exception):
    """The embedder cannot go on with this run: it was cancelled between two batches, or another
    embedding model was chosen. The file being embedded is left unread (the next run reads it)
    and the run ends as cancelled."""


@dataclass(frozen=True)
class Passage:
    """A run of a document's text that belongs together: a paragraph, a page's text, a section
    under its heading. `page` is 1-based where the format has pages (PDF), else None; `heading`
    the nearest heading above it ("" where none)."""

    text: str
    page: int | None = None
    heading: str = ""


@dataclass(frozen=True)
class Chunk:
    """A piece of a document sized for the embedding model (chunking.py): its text, the page and
    heading it comes from, and where it starts in its document's text (for ordering)."""

    text: str
    page: int | None = None
    heading: str = ""
    start: int = 0
    tokens: int = 0


@dataclass(frozen=True)
class Hit:
    """A chunk a search found: its file, page (where known), text and fused score (higher is
    better), and its rank in each of the two searches (None where it was not among them)."""

    source: Path
    text: str
    score: float
    page: int | None = None
    heading: str = ""
    chunk_id: int = 0
    keyword_rank: int | None = None
    vector_rank: int | None = None
