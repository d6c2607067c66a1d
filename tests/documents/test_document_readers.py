"""Each format read from a real file written here (PDF by PDFium, .docx by python-docx): the
passages' text, PDF page numbers, headings, and text encodings found rather than assumed."""

from __future__ import annotations

import codecs
from pathlib import Path

import docx
import pytest
from support.pdf_pages import write_pdf

from app.documents.readers import SUPPORTED_SUFFIXES, read_document
from app.documents.types import Passage

FRENCH = (
    "Le café de la gare était fermé, alors nous sommes allés à l'hôtel où la propriétaire, une femme "
    "âgée et très aimable, nous a servi une crème brûlée. Ça coûte 5 € seulement, dit-elle, et le "
    "garçon a ri. Noël approche, et la forêt est déjà blanche."
)


def test_plain_text_paragraphs(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"First paragraph,\nstill first.\r\n\r\n  \nSecond one.\n")
    assert read_document(path) == [Passage("First paragraph,\nstill first."), Passage("Second one.")]


def test_source_code_is_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "tool.py"
    path.write_text("def one():\n    return 1\n\n\ndef two():\n    return 2\n", encoding="utf-8")
    assert [p.text for p in read_document(path)] == ["def one():\n    return 1", "def two():\n    return 2"]
    assert {".py", ".rs", ".go", ".toml", ".json", ".sql", ".sh", ".c", ".h"} <= SUPPORTED_SUFFIXES


def test_markdown_headings(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(
        "Intro before any heading.\n\n# Install ##\n\nRun the installer.\n\nUsage\n-----\n\n"
        "```sh\n# a comment, not a heading\n\nhearth docs add\n```\n\n### Empty\n",
        encoding="utf-8",
    )
    assert read_document(path) == [
        Passage("Intro before any heading."),
        Passage("Run the installer.", heading="Install"),
        Passage("```sh\n# a comment, not a heading\n\nhearth docs add\n```", heading="Usage"),
    ]


def test_html_visible_text_and_headings(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(
        "<!doctype html><html><head><title>The page</title><style>p{color:red}</style>"
        "<script>alert('no')</script></head><body><p>Before &amp; after</p><h2>Part <em>two</em></h2>"
        "<div>Some   text\nwrapped</div><script>var hidden = 1;</script><ul><li>one</li><li>two</li></ul>"
        "<pre>keep\n  spacing</pre></body></html>",
        encoding="utf-8",
    )
    assert read_document(path) == [
        Passage("Before & after", heading="The page"),
        Passage("Some text wrapped", heading="Part two"),
        Passage("one", heading="Part two"),
        Passage("two", heading="Part two"),
        Passage("keep\n  spacing", heading="Part two"),
    ]


def test_pdf_pages_are_numbered_from_one(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "report.pdf", [["Page one, line one.", "Line two."], [], ["Third page."]])
    assert read_document(path) == [
        Passage("Page one, line one.\nLine two.", page=1),
        Passage("Third page.", page=3),  # the blank second page yields nothing
    ]


def test_docx_paragraphs_headings_and_tables(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Opening words.")
    document.add_heading("Background", level=1)
    document.add_paragraph("Why it matters.")
    document.add_heading("Figures", level=2)
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, (("a", "b"), ("c", "d"))):
        for cell, value in zip(row.cells, values):
            cell.text = value
    path = tmp_path / "paper.docx"
    document.save(path)
    assert read_document(path) == [
        Passage("Opening words."),
        Passage("Why it matters.", heading="Background"),
        Passage("a | b\nc | d", heading="Figures"),
    ]


@pytest.mark.parametrize(
    "encoded",
    [
        FRENCH.encode("utf-8"),
        codecs.BOM_UTF8 + FRENCH.encode("utf-8"),
        codecs.BOM_UTF16_LE + FRENCH.encode("utf-16-le"),
        codecs.BOM_UTF16_BE + FRENCH.encode("utf-16-be"),
        codecs.BOM_UTF32_LE + FRENCH.encode("utf-32-le"),
        FRENCH.encode("cp1252"),
        FRENCH.replace("€", "EUR").encode("latin-1"),
    ],
    ids=["utf-8", "utf-8-bom", "utf-16-le-bom", "utf-16-be-bom", "utf-32-le-bom", "cp1252", "latin-1"],
)
def test_encodings_are_detected(tmp_path: Path, encoded: bytes) -> None:
    path = tmp_path / "letter.txt"
    path.write_bytes(encoded)
    expected = FRENCH.replace("€", "EUR") if b"EUR" in encoded else FRENCH
    assert read_document(path) == [Passage(expected)]


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Привет, как дела? Сегодня хорошая погода, и мы пойдём гулять в парк у реки. Москва большая.", "cp1251"),
        ("Zażółć gęślą jaźń. Pójdźmy nad rzekę, gdzie łódź czeka na nas już od rana. Świeże bułki.", "cp1250"),
    ],
)
def test_other_code_pages_are_not_taken_for_western(tmp_path: Path, text: str, encoding: str) -> None:
    path = tmp_path / "letter.txt"
    path.write_bytes(text.encode(encoding))
    assert read_document(path) == [Passage(text)]
