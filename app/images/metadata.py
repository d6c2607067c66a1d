"""What a kept image's bytes lose on the way in: the metadata that says where and when a photo was
taken and with what (EXIF, with its GPS position; XMP; IPTC; comments; data after the image's end,
such as a phone's motion-photo video), while every byte that draws the picture stays as it was.

Why: an attached image is stored, exported, and sent to a remote server where the user chose one;
a phone photo's EXIF carries the place it was taken, which the user meant to share no more than
the model needs (the pixels). Re-encoding would drop it too, at the cost of a second generation
of loss; removing the metadata segments costs nothing.

- JPEG: the APPn segments before the first scan, except JFIF/JFXX (APP0), an ICC colour profile
  (APP2 "ICC_PROFILE") and Adobe's colour transform (APP14), which decoders read; comments (COM);
  anything after the end-of-image marker. (A kept JPEG is upright, so its EXIF orientation said
  nothing that dropping it changes.)
- PNG: the text chunks (tEXt, zTXt, iTXt), eXIf and tIME, and anything after IEND.
- WebP: its metadata lives in RIFF chunks whose sizes and flags the container repeats; such a
  file is re-encoded rather than edited (`None`), which is rare (cameras do not write WebP).

No decoding here: the bytes were decoded and checked (decode.py) before this runs.
"""

from __future__ import annotations

import struct

_JPEG_KEPT_APPS = {0xE0, 0xEE}  # JFIF/JFXX, Adobe
_JPEG_ICC = b"ICC_PROFILE\x00"
_JPEG_SOS, _JPEG_EOI, _JPEG_COM = 0xDA, 0xD9, 0xFE
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_DROPPED = {b"tEXt", b"zTXt", b"iTXt", b"eXIf", b"tIME"}
_WEBP_METADATA = (b"EXIF", b"XMP ")


def without_metadata(data: bytes, format: str) -> bytes | None:
    """`data` without its metadata; None where that cannot be done without re-encoding."""
    if format == "JPEG":
        return _jpeg(data)
    if format == "PNG":
        return _png(data)
    return None if any(code in data[12:] for code in _WEBP_METADATA) and _webp_has_metadata(data) else data


def _jpeg(data: bytes) -> bytes:
    kept = [data[:2]]  # SOI
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return data  # not where a marker should be: leave what decoded well alone
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        length = struct.unpack(">H", data[at + 2:at + 4])[0]
        segment = data[at:at + 2 + length]
        if marker == _JPEG_SOS:
            kept.append(_until_end_of_image(data, at))
            return b"".join(kept)
        is_app = 0xE0 <= marker <= 0xEF
        keep = (not is_app and marker != _JPEG_COM) or marker in _JPEG_KEPT_APPS or (
            marker == 0xE2 and segment[4:4 + len(_JPEG_ICC)] == _JPEG_ICC)
        if keep:
            kept.append(segment)
        at += 2 + length
    return data


def _until_end_of_image(data: bytes, at: int) -> bytes:
    """The scans from `at` to the end-of-image marker, inclusive (a stuffed 0xFF00 or a restart
    marker is scan data; any other marker between scans is kept)."""
    position = at
    while True:
        position = data.find(b"\xff", position)
        if position < 0 or position + 1 >= len(data):
            return data[at:]
        if data[position + 1] == _JPEG_EOI:
            return data[at:position + 2]
        position += 2 if data[position + 1] != 0xFF else 1


def _png(data: bytes) -> bytes:
    kept = [_PNG_SIGNATURE]
    at = len(_PNG_SIGNATURE)
    while at + 12 <= len(data):
        length = struct.unpack(">I", data[at:at + 4])[0]
        code = data[at + 4:at + 8]
        end = at + 12 + length
        if code not in _PNG_DROPPED:
            kept.append(data[at:end])
        if code == b"IEND":
            return b"".join(kept)
        at = end
    return data


def _webp_has_metadata(data: bytes) -> bool:
    at = 12
    while at + 8 <= len(data):
        code, length = data[at:at + 4], struct.unpack("<I", data[at + 4:at + 8])[0]
        if code in _WEBP_METADATA:
            return True
        at += 8 + length + (length & 1)
    return False
