"""A small folder of documents the documents tests index: two that read, one that does not (a
.docx that is no zip archive, skipped with its reason)."""

from __future__ import annotations

from pathlib import Path


def small_folder(parent: Path) -> Path:
    docs = parent / "docs"
    docs.mkdir()
    (docs / "garden.md").write_text("# Tomatoes\n\nWater tomatoes in the morning, deeply, twice a week.\n")
    (docs / "bread.txt").write_text("Knead the dough for ten minutes, then let it rise for an hour.\n")
    (docs / "broken.docx").write_bytes(b"not a zip at all")
    return docs
