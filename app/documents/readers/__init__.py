"""Reading one file into passages: `read_document(path)` picks the reader by the file's suffix
and hands it the file's bytes, read once under the size cap (files.py: no link followed, nothing
but a regular file read). Every failure is a DocumentError saying why; an empty file is no
passages, not an error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.documents.readers.docx import read_docx
from app.documents.readers.files import read_bytes
from app.documents.readers.html import read_html
from app.documents.readers.markdown import read_markdown
from app.documents.readers.pdf import read_pdf
from app.documents.readers.text import read_text
from app.documents.types import DocumentError, Passage

Reader = Callable[[bytes], list[Passage]]

# Source code and the text formats around it: read as plain text, paragraph by paragraph.
CODE_SUFFIXES = frozenset(
    {
        ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".c", ".h", ".cc", ".cpp", ".cxx",
        ".hpp", ".hh", ".cs", ".rs", ".go", ".java", ".kt", ".kts", ".scala", ".swift", ".m", ".mm",
        ".rb", ".php", ".pl", ".lua", ".r", ".jl", ".dart", ".zig", ".hs", ".ml", ".ex", ".exs",
        ".clj", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".toml", ".yaml", ".yml", ".json",
        ".ini", ".cfg", ".conf", ".xml", ".css", ".scss", ".sql", ".proto", ".graphql", ".cmake",
        ".gradle", ".tex", ".rst", ".csv", ".tsv",
    }
)  # fmt: skip
READERS: dict[str, Reader] = {
    ".txt": read_text,
    ".text": read_text,
    ".md": read_markdown,
    ".markdown": read_markdown,
    ".html": read_html,
    ".htm": read_html,
    ".xhtml": read_html,
    ".pdf": read_pdf,
    ".docx": read_docx,
    **{suffix: read_text for suffix in CODE_SUFFIXES},
}
SUPPORTED_SUFFIXES = frozenset(READERS)
# What the window hands to the system's default program when a source is opened: the document
# formats, never code or scripts, which a system may run rather than show (a .bat opened on
# Windows runs; some desktops run an executable .sh).
OPENED_BY_THE_SYSTEM = SUPPORTED_SUFFIXES - CODE_SUFFIXES


def read_document(path: Path) -> list[Passage]:
    """The passages of the file at `path`, in document order. Raises DocumentError when it is
    not a format Hearth reads, is too large, is not a regular file, or is damaged."""
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise DocumentError(f"is not a format Hearth reads ({path.suffix or 'no suffix'})")
    data = read_bytes(path)
    if not data:
        return []
    return reader(data)
