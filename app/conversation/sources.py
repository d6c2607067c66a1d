"""Answers from the user's documents: the passages a search found (documents/retrieval.py) given
to the model as numbered sources it is asked to cite, and listed for the user after the reply,
the same way on the command line (`hearth chat --docs`) and in the window.

The sources go into the user's message they answer, before its question, as GPT4All's LocalDocs
does, not into the system message: they are kept with that message in the store
(StoredMessage.sources), so at every later turn the conversation reads exactly as it did and the
engine reuses the prefix it keeps, where sources in the system message would change the
conversation's first tokens at every question and make every turn read everything again. Each
source carries its file's name and page, and its text as it was indexed; the model is asked to
cite them as [n] and to say when they do not hold the answer, rather than make one up.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..common.text import printable
from ..documents.types import Hit
from ..store import Source
from .context_use import estimate_tokens

# The most of the context window a question's sources may fill: the rest is for the conversation,
# the question and the reply. Sources past it are left out, the best kept.
CONTEXT_SHARE = 0.5
INSTRUCTION = ("Answer from the numbered sources below, taken from the user's documents. Cite the sources you use "
               "as [1], [2]… If they do not hold the answer, say so.")
QUESTION = "Question:"


def sources_of(hits: Sequence[Hit], by_tool: bool = False) -> tuple[Source, ...]:
    """A search's hits as the store keeps them with the message they answer (`by_tool`: found by
    the model's own search_documents call)."""
    return tuple(Source(str(hit.source), hit.text, hit.page, hit.heading, by_tool) for hit in hits)


def fitting(sources: Sequence[Source], context_tokens: int | None) -> tuple[Source, ...]:
    """The best of `sources` (they come best first) that fill at most CONTEXT_SHARE of a context
    window of `context_tokens` (None: not known, all of them), by the estimate the context meter
    uses: a small context is not filled by sources before the question is read. Half the
    window, not what the conversation leaves of it: this question's sources matter more than its
    oldest turns, which the engine leaves out to fit (the window's line shows where), as it does
    for any long conversation."""
    if context_tokens is None:
        return tuple(sources)
    room, kept = int(context_tokens * CONTEXT_SHARE), []
    for number, source in enumerate(sources, start=1):
        room -= estimate_tokens(len(f"[{number}] {where(source)}\n{source.text}\n\n"))
        if room < 0:
            break
        kept.append(source)
    return tuple(kept)


def where(source: Source) -> str:
    """`notes.pdf, page 3`: the file's name (the path is the user's, shown in full to them only)."""
    return printable(Path(source.path).name + (f", page {source.page}" if source.page else ""), limit=None)


def with_sources(question: str, sources: Sequence[Source]) -> str:
    """The user's message as the model reads it: the instruction, the numbered sources a lookup
    found, then the question (the question alone where there are none). Sources the model found
    with its own search_documents call are in that call's result already, not put here; each
    source keeps the number of its place among all of them, so the numbers agree with the
    citations whichever came first."""
    blocks = [f"[{number}] {where(source)}\n{source.text.strip()}"
              for number, source in enumerate(sources, start=1) if not source.by_tool]
    if not blocks:
        return question
    return f"{INSTRUCTION}\n\n" + "\n\n".join(blocks) + f"\n\n{QUESTION} {question}"


def sources_list(sources: Sequence[Source]) -> str:
    """The sources as the user reads them after the reply: a line each, with the full path."""
    return "\n".join(f"[{number}] {printable(source.path, limit=None)}" + (f", page {source.page}" if source.page else "")
                     for number, source in enumerate(sources, start=1))
