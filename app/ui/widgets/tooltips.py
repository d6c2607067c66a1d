"""Tooltips that show foreign text (file and repository names, server messages) as written."""

from __future__ import annotations

import html

_TOOLTIP_CHARS = 2000  # a listing's names, or a file's path, can be of any length


def plain_tooltip(text: str) -> str:
    """`text` as a tooltip that shows it as written.

    Qt renders a tooltip as HTML whenever it looks like HTML, and file and repository names
    come from the disk or the server; so the text is escaped and marked up as rich text, its
    line breaks kept, and cut short if it is huge.
    """
    if len(text) > _TOOLTIP_CHARS:
        text = text[:_TOOLTIP_CHARS - 1] + "…"
    return f"<p style='white-space:pre-wrap'>{html.escape(text, quote=False)}</p>"
