"""PDFs with real text pages, written by PDFium itself through pypdfium2's raw API (its helper
classes make pages but no text objects): each line a text object in a standard font, so the
reader's page numbers and text are checked against a file a PDF library made."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c


def write_pdf(path: Path, pages: list[list[str]], font_size: float = 11.0) -> Path:
    """A US-letter PDF at `path`, one page per item of `pages`, each string a line down from
    the top. Only what the standard Helvetica covers (Latin-1) renders as written."""
    document = pdfium.PdfDocument.new()
    try:
        for lines in pages:
            page = document.new_page(612, 792)
            for number, line in enumerate(lines):
                text_object = pdfium_c.FPDFPageObj_NewTextObj(document.raw, b"Helvetica", font_size)
                encoded = (line + "\0").encode("utf-16-le")
                buffer = ctypes.create_string_buffer(encoded, len(encoded))
                pdfium_c.FPDFText_SetText(text_object, ctypes.cast(buffer, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
                pdfium_c.FPDFPageObj_Transform(text_object, 1, 0, 0, 1, 56, 740 - number * font_size * 1.5)
                pdfium_c.FPDFPage_InsertObject(page.raw, text_object)
            pdfium_c.FPDFPage_GenerateContent(page.raw)
            page.close()
        document.save(path)
    finally:
        document.close()
    return path
