"""Reading one file into passages: `read_document(path)` picks the reader by the file's suffix
and hands it the file's bytes, read here once under the size cap. Nothing is followed: a link
is refused (its target may be anywhere, or a loop), and so is anything that is not a regular
file (a FIFO would block a read for ever, a device would never end). Every failure is a
DocumentError saying why; an empty file is no passages, not an error."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from app.documents.limits import MAX_FILE_BYTES
from app.documents.readers.docx import read_docx
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


def read_bytes(path: Path) -> bytes:
    """The file's bytes, opened without following a link (O_NOFOLLOW where the system has it,
    the link checked first everywhere) and without blocking (O_NONBLOCK: a FIFO opens and is
    then refused), its size checked on the open file, and never more than the cap read."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise DocumentError("is a link; Hearth reads files, not links")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        descriptor = os.open(path, flags)
    except DocumentError:
        raise
    except OSError as error:
        raise DocumentError(_open_reason(error)) from None
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_FILE_BYTES:
        os.close(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise DocumentError("is not a regular file")
        raise DocumentError(f"is {status.st_size:,} bytes, more than the {MAX_FILE_BYTES:,} Hearth reads")
    with os.fdopen(descriptor, "rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)  # a file that grew since fstat is still bounded
    if len(data) > MAX_FILE_BYTES:
        raise DocumentError(f"is more than the {MAX_FILE_BYTES:,} bytes Hearth reads")
    return data


def _open_reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "is a link; Hearth reads files, not links"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "cannot be read: permission denied"
    if error.errno == errno.ENOENT:
        return "no longer exists"
    if error.errno == errno.EISDIR:
        return "is a folder, not a file"
    return f"cannot be read ({error.strerror or 'error'})"
