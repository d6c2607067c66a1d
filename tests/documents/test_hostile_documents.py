"""Files that are damaged, lie about their format or try to exhaust the reader: each is a
DocumentError with its reason, in bounded time, never a crash, a hang or a huge allocation. An
empty file is no passages and no error."""

from __future__ import annotations

import io
import os
import time
import zipfile
from pathlib import Path

import pytest
from support.pdf_pages import write_pdf

from app.documents import limits
from app.documents.readers import read_document
from app.documents.types import DocumentError


def _refused(path: Path, reason: str) -> None:
    with pytest.raises(DocumentError, match=reason):
        read_document(path)


def test_truncated_pdf(tmp_path: Path) -> None:
    whole = write_pdf(tmp_path / "whole.pdf", [["Some text."], ["More text."]]).read_bytes()
    path = tmp_path / "cut.pdf"
    path.write_bytes(whole[: len(whole) // 2])
    _refused(path, "damaged or not a PDF")


def test_garbage_named_pdf(tmp_path: Path) -> None:
    path = tmp_path / "fake.pdf"
    path.write_bytes(os.urandom(64 * 1024))
    _refused(path, "damaged or not a PDF")


def test_docx_that_is_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    path.write_bytes(b"This was never a Word document.\n" * 100)
    _refused(path, "not a zip archive")


def test_zip_that_is_not_a_docx(tmp_path: Path) -> None:
    path = tmp_path / "other.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    _refused(path, "not a Word document")


def test_docx_with_broken_xml(tmp_path: Path) -> None:
    path = tmp_path / "broken.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types")
        archive.writestr("word/document.xml", "<w:document")
    _refused(path, "damaged or not a Word document")


def test_docx_that_would_unpack_too_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.documents.readers.docx.MAX_UNZIPPED_BYTES", 1000)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", " " * 100_000)  # compresses to a few hundred bytes
    path = tmp_path / "bomb.docx"
    path.write_bytes(buffer.getvalue())
    _refused(path, "would unpack to")


def test_binary_data_named_txt(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(bytes(range(256)) * 1000)
    _refused(path, "looks like binary data, not text")


def test_binary_without_nul_bytes_named_txt(tmp_path: Path) -> None:
    path = tmp_path / "noise.txt"
    path.write_bytes(bytes(b for b in os.urandom(200_000) if b) or b"\x01")
    _refused(path, "looks like binary data, not text")


def test_ten_megabyte_line_reads_in_bounded_time(tmp_path: Path) -> None:
    path = tmp_path / "one-line.txt"
    path.write_bytes(b"word " * 2_000_000)
    began = time.perf_counter()
    passages = read_document(path)
    assert time.perf_counter() - began < 10
    assert len(passages) == 1 and len(passages[0].text) == 10_000_000


@pytest.mark.parametrize("name", ["one-line.md", "one-line.html"])
def test_ten_megabyte_line_in_markup_reads_in_bounded_time(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"# " + b" " * 5_000_000 + b"a" + b" #" * 2_500_000)  # hostile to a heading regex
    began = time.perf_counter()
    read_document(path)
    assert time.perf_counter() - began < 10


@pytest.mark.parametrize("name", ["empty.txt", "empty.md", "empty.html", "empty.pdf", "empty.docx", "empty.py"])
def test_empty_file_is_no_passages(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"")
    assert read_document(path) == []


def test_file_over_the_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.documents.readers.files.MAX_FILE_BYTES", 1000)
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 1001)
    _refused(path, "is 1,001 bytes, more than the 1,000 Hearth reads")
    assert limits.MAX_FILE_BYTES == 50_000_000


def test_sparse_file_over_the_real_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as file:
        file.truncate(limits.MAX_FILE_BYTES + 1)  # no disk used, nothing read
    _refused(path, "is 50,000,001 bytes, more than the 50,000,000 Hearth reads")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_links_are_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("real text", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    _refused(link, "is a link")
    loop_a, loop_b = tmp_path / "a.txt", tmp_path / "b.txt"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    _refused(loop_a, "is a link")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "pipe.txt"
    os.mkfifo(path)
    _refused(path, "not a regular file")


def test_folder_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "folder.txt").mkdir()
    _refused(tmp_path / "folder.txt", "not a regular file")
    _refused(tmp_path / "gone.txt", "no longer exists")


def test_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "photo.jpeg"
    path.write_bytes(b"\xff\xd8\xff")
    _refused(path, "not a format Hearth reads")
