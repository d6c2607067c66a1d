"""A model file's identity for saved KV state: what the file is, wherever it lies.

A saved state may be used only with the weights that computed it. The path says nothing (a
file is renamed, moved, or replaced by a new download under the same name), so the identity
is the file's size, its whole GGUF header (architecture, hyperparameters, vocabulary, every
tensor's name, shape, type and offset), and a sample of the weights themselves: two
fine-tunes of one base quantized the same way can share a header byte for byte, and a few
pages spread through the data section tell them apart at the cost of a few reads.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

from .checks import Metadata, data_alignment
from .header import Array, HeaderReader, Scalar, String, read_tensor_infos

WEIGHT_SAMPLES = 16  # pages of the data section hashed with the header
SAMPLE_BYTES = 4096


class NoFingerprint(Exception):
    """The file could not be read as a GGUF header (a model that loaded is never one)."""


@dataclass(frozen=True)
class ModelFingerprint:
    size: int
    digest: str  # hex SHA-256 of the header and the sampled weights


def model_fingerprint(path: str | os.PathLike) -> ModelFingerprint:
    """The identity of the GGUF file at `path`. Costs one pass over the header (a few MB for a
    large vocabulary: milliseconds) and WEIGHT_SAMPLES page reads."""
    try:
        with Path(path).open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            header_end = _header_end(buf)
            digest = hashlib.sha256()
            digest.update(len(buf).to_bytes(8, "little"))
            digest.update(buf[:header_end])
            span = max(0, len(buf) - header_end - SAMPLE_BYTES)
            for index in range(WEIGHT_SAMPLES):  # the first page of the weights, the last, and between
                start = header_end + span * index // (WEIGHT_SAMPLES - 1)
                digest.update(buf[start:start + SAMPLE_BYTES])
            return ModelFingerprint(len(buf), digest.hexdigest())
    except (OSError, ValueError) as exc:
        raise NoFingerprint(f"{path}: {exc}") from None


def _header_end(buf: mmap.mmap) -> int:
    """Where the header's tensor descriptions end: the same walk modelfile.inspect_model makes
    (which has already refused any file llama.cpp could not load)."""
    reader = HeaderReader(buf)
    if bytes(buf[:4]) != b"GGUF":
        raise ValueError("not a GGUF file")
    reader.pos = 4
    try:
        reader.scalar("<I")  # the format version
        tensor_count = reader.scalar("<Q")
        kv_count = reader.scalar("<Q")
        if kv_count > len(buf) // 13 or tensor_count > len(buf) // 32:  # the least each can take
            raise ValueError("its header counts more entries than the file can hold")
        entries: dict[str, Scalar | String | Array] = {}
        for _ in range(kv_count):
            key = reader.key()
            entries[key] = reader.value(reader.scalar("<I"), key)
        read_tensor_infos(reader, tensor_count, data_alignment(Metadata(entries, buf, reader.vocabulary)))
    except Exception as exc:  # Truncated, Corrupt, Invalid: the header is not readable
        raise ValueError(f"its header cannot be read ({type(exc).__name__}: {exc})") from None
    return reader.pos
