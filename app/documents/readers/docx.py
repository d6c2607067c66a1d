"""Word (.docx) with the standard library only (zipfile and ElementTree, no python-docx and
lxml in the bundle): the body's paragraphs and tables in document order, each a passage under
the nearest paragraph styled as a heading (Title, Heading 1–9, by style id or by the name
word/styles.xml gives a localized id). word/document.xml is streamed (iterparse), each block
dropped once read, so a huge body never becomes a tree. The archive is checked before anything
inflates: a file that is no zip, or whose members would unpack to more than MAX_UNZIPPED_BYTES,
is refused by what its directory says. An XML part that declares a DOCTYPE (where entities,
and so a "billion laughs", would be declared) is refused before it is parsed."""

from __future__ import annotations

import io
import re
import zipfile
from typing import IO
from xml.etree.ElementTree import Element, iterparse

from app.documents.limits import MAX_TEXT_CHARS, MAX_UNZIPPED_BYTES
from app.documents.types import DocumentError, Passage

_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ufffe\uffff]")
_NOT_WORD = "is damaged or not a Word document"
_DOCUMENT = "word/document.xml"
_STYLES = "word/styles.xml"
# WordprocessingML as Word writes it (transitional) and as ISO strict spells it.
_W = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",
)
_PROLOG_BYTES = 64 * 1024  # Word's prolog is one line; a root not begun by here is refused
_ROOT_START = re.compile(rb"<[^?!]")  # the first tag that is not <?xml …?>, <!-- --> or <!DOCTYPE
_DECLARATION = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
_BREAKS = {"tab": "\t", "ptab": "\t", "cr": "\n", "noBreakHyphen": "-"}
_SKIPPED = frozenset({"pPr", "del", "moveFrom"})  # tab stops, tracked deletions: not text


def read_docx(data: bytes) -> list[Passage]:
    """The passages of a .docx file; none for a document without text."""
    _check_archive(data)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            styles = _style_names(archive) if _STYLES in archive.namelist() else {}
            with archive.open(_DOCUMENT) as part:
                return _passages(_guarded(part), styles)
    except DocumentError:
        raise
    except Exception:  # noqa: BLE001 — zipfile, zlib and expat raise many kinds for a bad file
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
    if _DOCUMENT not in names and "[Content_Types].xml" not in names:
        raise DocumentError("is a zip archive but not a Word document")


def _guarded(part: IO[bytes]) -> IO[bytes]:
    """The part as a stream for the parser, after its prolog (everything before the root
    element) is checked for a DOCTYPE or ENTITY declaration: ElementTree resolves no external
    entity, but it would expand internal ones, so any declaration is refused unparsed. NULs are
    dropped before looking, so a UTF-16 or UTF-32 part is checked as well as a UTF-8 one."""
    head = part.read(_PROLOG_BYTES)
    plain = head.replace(b"\x00", b"")
    root = _ROOT_START.search(plain)
    prolog = plain[: root.start()] if root else plain
    if _DECLARATION.search(prolog) or (root is None and len(head) == _PROLOG_BYTES):
        raise DocumentError(_NOT_WORD)
    return _Joined(head, part)


class _Joined(io.RawIOBase):
    """The bytes already read, then the rest of the stream: the check reads ahead, the parser
    still streams from the start without the part being inflated twice or held whole."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        chunk = self._rest.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _local(tag: str) -> str | None:
    """A WordprocessingML element's or attribute's local name; None for any other namespace."""
    namespace, _, name = tag[1:].partition("}")
    return name if tag.startswith("{") and namespace in _W else None


def _attribute(element: Element, name: str) -> str | None:
    for namespace in _W:
        value = element.get(f"{{{namespace}}}{name}")
        if value is not None:
            return value
    return None


def _style_names(archive: zipfile.ZipFile) -> dict[str, str]:
    """Paragraph style ids to their names ("berschrift1" → "heading 1"), from word/styles.xml."""
    names: dict[str, str] = {}
    with archive.open(_STYLES) as part:
        for _, element in iterparse(_guarded(part), events=("end",)):
            if _local(element.tag) == "style":
                style_id = _attribute(element, "styleId")
                name = next((_attribute(child, "val") for child in element if _local(child.tag) == "name"), None)
                if style_id and name and _attribute(element, "type") in (None, "paragraph"):
                    names[style_id] = name
                element.clear()
    return names


def _is_heading(style_id: str, styles: dict[str, str]) -> bool:
    name = styles.get(style_id, style_id).strip().lower()
    return name == "title" or name.startswith("heading")


def _passages(stream: IO[bytes], styles: dict[str, str]) -> list[Passage]:
    """One pass over document.xml's events. A block is a paragraph outside any table, or an
    outermost table; a paragraph inside another (a text box's) is left out, as Word's own text
    of the paragraph leaves it, and so are tab stops and tracked deletions."""
    passages: list[Passage] = []
    heading = ""
    total = 0
    parents: list[Element] = []  # the open elements, the body's child first … the current one last
    body: Element | None = None
    skipped = 0  # open elements whose content is not text (pPr, del, moveFrom)
    paragraphs = 0  # open w:p, nested ones included
    tables = 0  # open w:tbl, nested ones included
    runs: list[str] = []  # the current paragraph's text
    block = 0  # characters of text gathered for the current block
    style = ""
    cell: list[str] = []  # the outermost table's current cell: its paragraphs' text
    row: list[str] = []
    rows: list[str] = []

    for event, element in iterparse(stream, events=("start", "end")):
        name = _local(element.tag)
        if event == "start":
            if body is not None:
                parents.append(element)
            elif name == "body":
                body = element
            if name in _SKIPPED:
                skipped += 1
            elif name == "p":
                paragraphs += 1
                if paragraphs == 1:
                    runs, style = [], ""
            elif name == "tbl" and not paragraphs:
                tables += 1  # a table in a text box (inside a paragraph) is no block of its own
            elif name == "pStyle" and paragraphs == 1 and skipped == 1:
                style = _attribute(element, "val") or ""
            continue

        if body is not None and parents:
            parents.pop()
        if name in _SKIPPED:
            skipped -= 1
        elif name == "p":
            paragraphs -= 1
            if not paragraphs and not skipped:
                text = "".join(runs)
                runs = []
                if tables:
                    cell.append(text)
                else:
                    text = _clean(text)
                    if text and style and _is_heading(style, styles):
                        heading = " ".join(text.split())
                    else:
                        total += len(text)
                        if text.strip():
                            passages.append(Passage(text, heading=heading))
                    block = 0
        elif paragraphs:
            if paragraphs == 1 and not skipped:
                if name == "t":
                    if element.text:
                        runs.append(element.text)
                        block += len(element.text)
                elif name in _BREAKS:
                    runs.append(_BREAKS[name])
                elif name == "br":
                    runs.append("\n" if _attribute(element, "type") in (None, "textWrapping") else "")
            if name == "r":
                element.clear()  # its text is taken: a long paragraph holds no tree of its runs
        elif name == "tc" and tables == 1:
            row.append(_clean("\n".join(cell)))
            cell = []
        elif name == "tr" and tables == 1:
            rows.append(" | ".join(row))
            row = []
        elif name == "tbl" and tables:
            tables -= 1
            if not tables:
                text = "\n".join(rows)
                rows = []
                total += len(text)
                if text.strip():
                    passages.append(Passage(text, heading=heading))
                block = 0
        if total + block > MAX_TEXT_CHARS:
            raise DocumentError(f"holds more than the {MAX_TEXT_CHARS:,} characters Hearth reads from one file")
        if body is not None and not parents and element is not body:
            body.clear()  # a block of the body is read: drop it, so memory holds one block at most
    return passages


def _clean(text: str) -> str:
    return _NOT_TEXT.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).strip()
