""".docx parts written by hand, for what python-docx cannot write: a heading style whose id is
localized (Word in German names "heading 1" "berschrift1"), runs with tabs, breaks, tab stops
and tracked deletions, a text box's paragraph, and XML that declares entities (a "billion
laughs"), which is refused unparsed."""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

import pytest

from app.documents.readers import read_document
from app.documents.types import DocumentError, Passage

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">' for i in range(1, 10))
    + "]>"
)


def _docx(path: Path, body: str, styles: str | None = None, prolog: str = "") -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", f"{prolog}<w:document {W}><w:body>{body}</w:body></w:document>")
        if styles is not None:
            archive.writestr("word/styles.xml", f"<w:styles {W}>{styles}</w:styles>")
    return path


def _paragraph(text: str, style: str = "") -> str:
    properties = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{properties}<w:r><w:t>{text}</w:t></w:r></w:p>"


def test_localized_heading_style_is_named_by_styles_xml(tmp_path: Path) -> None:
    styles = (
        '<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Titel"><w:name w:val="Title"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Zitat"><w:name w:val="Quote"/></w:style>'
    )
    body = (
        _paragraph("Ein Bericht", "Titel")
        + _paragraph("Vorwort.")
        + _paragraph("Einleitung", "berschrift1")
        + _paragraph("Worum es geht.", "Zitat")
        + _paragraph("Methoden", "Heading2")  # an id that is its own English name, not in styles.xml
        + _paragraph("Wie gemessen wurde.")
    )
    path = _docx(tmp_path / "bericht.docx", body, styles)
    assert read_document(path) == [
        Passage("Vorwort.", heading="Ein Bericht"),
        Passage("Worum es geht.", heading="Einleitung"),
        Passage("Wie gemessen wurde.", heading="Methoden"),
    ]


def test_runs_tabs_breaks_and_what_is_not_text(tmp_path: Path) -> None:
    body = (
        '<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>'
        "<w:r><w:t>Name</w:t><w:tab/><w:t>Value</w:t><w:br/><w:t>line two</w:t><w:cr/><w:t>three</w:t></w:r>"
        '<w:del w:id="1"><w:r><w:delText>gone</w:delText></w:r></w:del>'
        '<w:hyperlink><w:r><w:t xml:space="preserve"> linked</w:t></w:r></w:hyperlink>'
        "<w:r><w:txbxContent><w:p><w:r><w:t>in a text box</w:t></w:r></w:p></w:txbxContent></w:r>"
        "</w:p>"
    )
    path = _docx(tmp_path / "runs.docx", body)
    assert read_document(path) == [Passage("Name\tValue\nline two\nthree linked")]


@pytest.mark.parametrize("part", ["word/document.xml", "word/styles.xml"])
def test_entity_declarations_are_refused_unparsed(tmp_path: Path, part: str) -> None:
    path = tmp_path / "laughs.docx"
    xml = f"{LAUGHS}<w:document {W}><w:body>{_paragraph('&lol9;')}</w:body></w:document>"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", xml if part == "word/document.xml" else _paragraph("fine"))
        if part == "word/styles.xml":
            archive.writestr("word/styles.xml", f"{LAUGHS}<w:styles {W}/>")
    began = time.perf_counter()
    with pytest.raises(DocumentError, match="damaged or not a Word document"):
        read_document(path)
    assert time.perf_counter() - began < 5


def test_entity_declaration_in_utf16_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wide.docx"
    xml = LAUGHS.replace('version="1.0"', 'version="1.0" encoding="UTF-16"') + f"<w:document {W}/>"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", xml.encode("utf-16"))
    with pytest.raises(DocumentError, match="damaged or not a Word document"):
        read_document(path)


def test_text_over_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.documents.readers.docx.MAX_TEXT_CHARS", 1000)
    path = _docx(tmp_path / "long.docx", _paragraph("word " * 100) * 3)
    with pytest.raises(DocumentError, match="holds more than the 1,000 characters"):
        read_document(path)


def test_many_paragraphs_stream(tmp_path: Path) -> None:
    buffer = io.StringIO()
    for number in range(50_000):
        buffer.write(_paragraph(f"Paragraph {number}."))
    path = _docx(tmp_path / "many.docx", buffer.getvalue())
    began = time.perf_counter()
    passages = read_document(path)
    assert time.perf_counter() - began < 10
    assert len(passages) == 50_000 and passages[-1] == Passage("Paragraph 49999.")
