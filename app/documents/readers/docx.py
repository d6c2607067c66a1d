"""Word (.docx) through python-docx: the body's paragraphs and tables in document order, each
a passage under the nearest paragraph styled as a heading (Title, Heading 1–9). The archive is
checked before python-docx opens it: a file that is no zip, or whose members would unpack to
more than MAX_UNZIPPED_BYTES, is refused by what its directory says, before anything inflates."""

from __future__ import annotations

import io
import re
import zipfile

from app.documents.limits import MAX_TEXT_CHARS, MAX_UNZIPPED_BYTES
from app.documents.types import DocumentError, Passage

_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ufffe\uffff]")
_NOT_WORD = "is damaged or not a Word document"


def read_docx(data: bytes) -> list[Passage]:
    """The passages of a .docx file; none for a document without text."""
    _check_archive(data)
    import docx  # here: python-docx and lxml load only when a .docx is read

    try:
        document = docx.Document(io.BytesIO(data))
        return _passages(document)
    except DocumentError:
        raise
    except Exception:  # noqa: BLE001 — python-docx and lxml raise many kinds for a bad file
        raise DocumentError(_NOT_WORD) from None


def _check_archive(data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
            names = set(archive.namelist())
    except (zipfile.BadZipFile, ValueError, OSError):
        raise DocumentError("is not a Word document: it is not a zip archive") from None
    if unpacked > MAX_UNZIPPED_BYTES:
        raise DocumentError(f"would unpack to {unpacked:,} bytes, more than the {MAX_UNZIPPED_BYTES:,} Hearth reads")
    if "word/document.xml" not in names and "[Content_Types].xml" not in names:
        raise DocumentError("is a zip archive but not a Word document")


def _passages(document) -> list[Passage]:
    passages: list[Passage] = []
    heading = ""
    total = 0
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            text = "\n".join(" | ".join(_clean(cell.text) for cell in row.cells) for row in block.rows)
        else:
            text = _clean(block.text)
            if text and _is_heading(block):
                heading = " ".join(text.split())
                continue
        total += len(text)
        if total > MAX_TEXT_CHARS:
            raise DocumentError(f"holds more than the {MAX_TEXT_CHARS:,} characters Hearth reads from one file")
        if text.strip():
            passages.append(Passage(text, heading=heading))
    return passages


def _is_heading(paragraph) -> bool:
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    return name == "Title" or name.startswith("Heading")


def _clean(text: str) -> str:
    return _NOT_TEXT.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).strip()
