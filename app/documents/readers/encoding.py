"""Bytes into text, with the encoding found out rather than assumed: a byte-order mark first,
then UTF-8 (what nearly every file written this century is), then charset-normalizer's guess.
Data that is not text at all (NUL bytes, control characters, undecodable runs) is refused here,
so a binary file named .txt never reaches the index as garbage."""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

from app.documents.limits import BINARY_CONTROL_SHARE, DETECT_SAMPLE_BYTES
from app.documents.types import DocumentError

# Longest first: UTF-32-LE's mark begins with UTF-16-LE's.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Control characters no text file holds (tab, newlines and form feed are text), and U+FFFD,
# what an undecodable byte became.
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")

_WESTERN_TOLERANCE = 0.05  # of charset-normalizer's chaos (0 is clean, 1 is noise)

NOT_TEXT = "looks like binary data, not text"


def decode_text(data: bytes) -> str:
    """The text `data` holds, newlines as they were. Raises DocumentError when it is not text."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _checked(data[len(bom) :].decode(encoding, errors="replace"))
    # Without a mark, a NUL byte means binary (UTF-16 without a mark is too rare to guess at).
    if b"\x00" in data:
        raise DocumentError(NOT_TEXT)
    try:
        return _checked(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    return _checked(data.decode(_guessed_encoding(data), errors="replace"))


def _guessed_encoding(data: bytes) -> str:
    """charset-normalizer's best encoding for a bounded sample (cut at a line end, so a
    multi-byte character is not split at the sample's end), so a 50 MB file costs no more to
    name than a 1 MB one."""
    sample = data
    if len(data) > DETECT_SAMPLE_BYTES:
        end = data.rfind(b"\n", 0, DETECT_SAMPLE_BYTES)
        sample = data[: end if end > 0 else DETECT_SAMPLE_BYTES]
    matches = from_bytes(sample)
    best = matches.best()
    if best is None:
        raise DocumentError(NOT_TEXT)
    # Single-byte Western text fits many code pages nearly as well: French in cp1252 scores best
    # as Baltic cp1257 ("naïve" read as "naďve"). Windows-1252, the most common of them (and
    # what the web reads "latin-1" as), wins whenever it is about as good as the best guess.
    for match in matches:
        if match.encoding == "cp1252" and match.chaos <= best.chaos + _WESTERN_TOLERANCE:
            return "cp1252"
    return best.encoding


def _checked(text: str) -> str:
    """`text`, unless more than a sliver of it is control characters or replacement marks
    (counted by one C-speed substitution, not a Python loop over 20 million characters)."""
    not_text = len(text) - len(_NOT_TEXT.sub("", text))
    if not_text > BINARY_CONTROL_SHARE * len(text):
        raise DocumentError(NOT_TEXT)
    return text
