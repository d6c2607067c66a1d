"""Answers from the user's documents: the chunks a search found (documents/search.py) given to
the model as numbered sources it is asked to cite, and listed for the user after the reply, the
same way on the command line (`hearth chat --docs`) and, later, in the window.

The sources go into the system message, after the user's own system prompt: a template reads a
system message whatever its family, and the conversation's turns stay as they were, so the
prefix the engine keeps for them is reused. Each source carries its file's name and page, and
its text as it was indexed; the model is asked to cite them as [n] and to say when they do not
hold the answer, rather than make one up.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..common.text import printable
from ..documents.types import Hit

INSTRUCTION = ("Answer from the numbered sources below, taken from the user's documents. Cite the sources you use "
               "as [1], [2]… If they do not hold the answer, say so.")


def source_label(number: int, hit: Hit) -> str:
    """`[1] notes.pdf, page 3` (the file's name: the path is the user's, shown in full to them only)."""
    where = hit.source.name + (f", page {hit.page}" if hit.page else "")
    return f"[{number}] {printable(where, limit=None)}"


def with_sources(messages: list[dict], hits: Sequence[Hit]) -> list[dict]:
    """The messages with the sources in the system message (one made if there is none)."""
    if not hits:
        return messages
    blocks = [f"{source_label(number, hit)}\n{hit.text.strip()}" for number, hit in enumerate(hits, start=1)]
    note = INSTRUCTION + "\n\n" + "\n\n".join(blocks)
    if messages and messages[0]["role"] == "system":
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def sources_list(hits: Sequence[Hit]) -> str:
    """The sources as the user reads them after the reply: a line each, with the full path."""
    return "\n".join(f"[{number}] {printable(str(hit.source), limit=None)}" + (f", page {hit.page}" if hit.page else "")
                     for number, hit in enumerate(hits, start=1))
