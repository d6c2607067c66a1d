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

from .header import BadHeader, file_version
from .metadata import Invalid
from .reading import header_end

WEIGHT_SAMPLES = 16  # pages of the data section hashed with the header
SAMPLE_BYTES = 4096


class NoFingerprint(Exception):
    """The file could not be read as a GGUF header (a model that loaded is never one)."""


@dataclass(frozen=True)
class ModelFingerprint:
    size: int
    digest: str  # hex SHA-256 of the header and the sampled weights


def model_fingerprint(path: str | os.PathLike) -> ModelFingerprint:
    """The identity of the GGUF file at `path`. Costs the header walk, once per file version
    (reading.py keeps where it ends: the load that asks for this has walked it already), and hashing the
    header's bytes and WEIGHT_SAMPLES pages, read from the file as it is now."""
    try:
        version = file_version(path)
        end = header_end(version)
        with version.path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            digest = hashlib.sha256()
            digest.update(len(buf).to_bytes(8, "little"))
            digest.update(buf[:end])
            span = max(0, len(buf) - end - SAMPLE_BYTES)
            for index in range(WEIGHT_SAMPLES):  # the first page of the weights, the last, and between
                start = end + span * index // (WEIGHT_SAMPLES - 1)
                digest.update(buf[start:start + SAMPLE_BYTES])
            return ModelFingerprint(len(buf), digest.hexdigest())
    except (BadHeader, Invalid) as exc:
        raise NoFingerprint(f"{path}: its header cannot be read ({type(exc).__name__}: {exc})") from None
    except (OSError, ValueError) as exc:
        raise NoFingerprint(f"{path}: {exc}") from None
