"""PDF through PDFium (pypdfium2): each page's text a passage with its 1-based page number, for
citations that open the file at that page, and the heading from the document's outline where it
has one. PDFium is not safe to call from two threads at once, so every use here holds one lock:
two indexers reading PDFs wait for each other rather than corrupting its state."""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.documents.limits import MAX_PDF_PAGES, MAX_TEXT_CHARS
from app.documents.readers.files import read_bytes
from app.documents.readers.text import normalise_newlines
from app.documents.types import DocumentError, Passage

_PDFIUM = threading.Lock()
MAX_RENDER_PIXELS = 4_000_000  # a page drawn for the source view (a 10 m poster page is not 1 GB of pixels)
_MAX_OUTLINE_ITEMS = 5000  # bookmarks read for headings; an outline past this is not walked
# What PDFium leaves in extracted text that is no text: control characters, its own markers.
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ufffe\uffff]")
# PDFium's FPDF_ERR_PASSWORD and FPDF_ERR_SECURITY; any other failure to open is damage.
_REASONS = {4: "is protected by a password", 5: "uses a security handler Hearth cannot open"}


def read_pdf(data: bytes) -> list[Passage]:
    """A passage per page that has text (a scanned page without a text layer has none)."""
    import pypdfium2 as pdfium

    with _opened(data) as document:
        try:
            return _pages(document)
        except pdfium.PdfiumError:
            raise DocumentError("is damaged: a page could not be read") from None


@contextmanager
def _opened(data: bytes):
    """The PDF in `data`, open and closed under the lock; one that does not open is a DocumentError."""
    import pypdfium2 as pdfium  # here: its 8 MB library loads only when a PDF is read

    with _PDFIUM:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as error:
            raise DocumentError(_REASONS.get(error.err_code, "is damaged or not a PDF")) from None
        try:
            yield document
        finally:
            document.close()


def _pages(document) -> list[Passage]:
    count = len(document)
    if count > MAX_PDF_PAGES:
        raise DocumentError(f"has {count:,} pages, more than the {MAX_PDF_PAGES:,} Hearth reads")
    headings = _outline_headings(document, count)
    passages: list[Passage] = []
    total = 0
    heading = ""
    for index in range(count):
        heading = headings.get(index, heading)
        page = document[index]
        try:
            text_page = page.get_textpage()
            text = text_page.get_text_range()
            text_page.close()
        finally:
            page.close()
        text = _NOT_TEXT.sub("", normalise_newlines(text)).strip()
        total += len(text)
        if total > MAX_TEXT_CHARS:
            raise DocumentError(f"holds more than the {MAX_TEXT_CHARS:,} characters Hearth reads from one file")
        if text:
            passages.append(Passage(text, page=index + 1, heading=heading))
    return passages


def _outline_headings(document, count: int) -> dict[int, str]:
    """Page index → the title of the last bookmark that points there, in outline order. An
    outline that cannot be read gives no headings, never a failed file."""
    headings: dict[int, str] = {}
    try:
        for number, bookmark in enumerate(document.get_toc(max_depth=6)):
            if number >= _MAX_OUTLINE_ITEMS:
                break
            destination = bookmark.get_dest()
            index = destination.get_index() if destination is not None else None
            title = " ".join(bookmark.get_title().split())
            if index is not None and 0 <= index < count and title:
                headings[index] = title
    except Exception:  # noqa: BLE001 — a damaged outline costs the headings, not the file
        return {}
    return headings


@dataclass(frozen=True)
class PageImage:
    """One page drawn: `width` × `height` pixels, rows of `stride` bytes, BGRx (as PDFium draws
    and Qt's QImage.Format_RGB32 reads on a little-endian machine)."""

    width: int
    height: int
    stride: int
    pixels: bytes
    pages: int  # in the whole document, so a viewer can say "page 3 of 12"


def render_page(path: Path, page: int, width: int) -> PageImage:
    """Page `page` (1-based) of the PDF at `path`, drawn `width` pixels wide, for the window's
    source view (a citation opens its page). Raises DocumentError for a file that is gone,
    damaged or has no such page; at most MAX_RENDER_PIXELS are drawn, whatever the page's shape."""
    import pypdfium2 as pdfium

    with _opened(read_bytes(path)) as document:
        try:
            count = len(document)
            if not 1 <= page <= count:
                raise DocumentError(f"has no page {page} (it has {count})")
            drawn = document[page - 1]
            try:
                points_wide, points_high = drawn.get_size()
                scale = max(min(width / max(points_wide, 1.0),
                                (MAX_RENDER_PIXELS / max(points_wide * points_high, 1.0)) ** 0.5), 0.05)
                bitmap = drawn.render(scale=scale, prefer_bgrx=True)
                image = PageImage(bitmap.width, bitmap.height, bitmap.stride, bytes(bitmap.buffer), count)
                bitmap.close()
                return image
            finally:
                drawn.close()
        except pdfium.PdfiumError:
            raise DocumentError(f"is damaged: page {page} could not be drawn") from None
