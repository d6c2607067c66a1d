"""One saved KV state on disk: written whole or not at all, read back only if it is intact.

Layout (little-endian), format 1:

    0   8  magic b"HEARTHKV"
    8   4  format version (u32)
    12  4  key length in bytes (u32, at most MAX_KEY_BYTES)
    16  8  token count (u64)
    24  8  payload length in bytes (u64)
    32 32  SHA-256 of everything after the header: key, tokens, payload
    64     key bytes, then the tokens (int32 each), then the payload (llama.cpp's sequence state)

A file is written under a temporary name in the same folder and renamed over the real one
(`os.replace`, atomic), so a crash leaves either the old file or the new one, never half of
one under the real name. It is not fsynced: after a power cut the renamed file may hold
garbage, and the checksum, read before anything is trusted, catches exactly that.

The folder is the user's and anything may be put in it, so a reader trusts nothing: the
lengths in the header must add up to the file's size before anything is allocated, each is
capped by the caller's limits, and the file must be a regular file (a link is not followed).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"HEARTHKV"
FORMAT_VERSION = 1
MAX_KEY_BYTES = 4096
_HEADER = struct.Struct("<8sIIQQ32s")  # magic, version, key length, token count, payload length, checksum
HEADER_BYTES = _HEADER.size
TEMP_SUFFIX = ".tmp"
_TOKEN = "i"  # int32, as llama_token (a C int is 4 bytes on every platform llama.cpp builds for)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class DamagedState(Exception):
    """The file is not an intact saved state of this format; the message says what is wrong."""


class KeyMismatch(DamagedState):
    """An intact file, but for another key: as useless here as a damaged one."""


@dataclass(frozen=True)
class Limits:
    """The most a file may claim before a byte of it is read into memory."""

    max_tokens: int
    max_payload_bytes: int


@dataclass(frozen=True)
class StateFile:
    key: bytes
    tokens: array  # array("i")
    payload: bytes


def write(path: Path, key: bytes, tokens: array, payload: bytes) -> None:
    """Write a state to `path` atomically (a temporary file in the same folder, then a rename).

    Raises OSError where the disk refuses; the temporary file is removed then.
    """
    if len(key) > MAX_KEY_BYTES:
        raise ValueError(f"a state key is at most {MAX_KEY_BYTES} bytes")
    token_bytes = _little_endian(tokens).tobytes()
    digest = hashlib.sha256()
    for part in (key, token_bytes, payload):
        digest.update(part)
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, len(key), len(tokens), len(payload), digest.digest())
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    try:
        with temporary.open("xb") as handle:
            for part in (header, key, token_bytes, payload):
                handle.write(part)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read(path: Path, limits: Limits, expected_key: bytes | None = None) -> StateFile:
    """The state in the file at `path`, checked whole; DamagedState if anything is wrong.

    With `expected_key`, a file for another key raises KeyMismatch before its tokens and
    payload are read.
    """
    with _open(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        key_length, n_tokens, payload_length, checksum = _header(handle.read(HEADER_BYTES), size)
        if n_tokens > limits.max_tokens:
            raise DamagedState(f"it claims {n_tokens:,} tokens, more than {limits.max_tokens:,}")
        if payload_length > limits.max_payload_bytes:
            raise DamagedState(f"it claims a payload of {payload_length:,} bytes, more than {limits.max_payload_bytes:,}")
        if HEADER_BYTES + key_length + 4 * n_tokens + payload_length != size:
            raise DamagedState(f"its lengths do not add up to its size ({size:,} bytes): truncated or padded")
        key = _exactly(handle, key_length)
        if expected_key is not None and key != expected_key:
            raise KeyMismatch("it was saved for another model or other settings")
        token_bytes = _exactly(handle, 4 * n_tokens)
        payload = _exactly(handle, payload_length)
    digest = hashlib.sha256()
    for part in (key, token_bytes, payload):
        digest.update(part)
    if digest.digest() != checksum:
        raise DamagedState("its checksum does not match: it was damaged")
    tokens = array(_TOKEN)
    tokens.frombytes(token_bytes)
    return StateFile(key, _little_endian(tokens), payload)


def is_prefix(tokens: array, prompt: Sequence[int]) -> bool:
    """Whether `prompt` begins with exactly `tokens`."""
    return len(tokens) <= len(prompt) and tokens.tolist() == list(prompt[:len(tokens)])


def _open(path: Path):
    """The file for reading, refusing anything but a regular file (no links, fifos, devices)."""
    descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _BINARY)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise DamagedState("it is not a regular file")
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _header(raw: bytes, size: int) -> tuple[int, int, int, bytes]:
    if len(raw) < HEADER_BYTES:
        raise DamagedState(f"it is {size:,} bytes, shorter than a header")
    magic, version, key_length, n_tokens, payload_length, checksum = _HEADER.unpack(raw)
    if magic != MAGIC:
        raise DamagedState("it is not a Hearth state file")
    if version != FORMAT_VERSION:
        raise DamagedState(f"it is format {version}, not {FORMAT_VERSION}")
    if key_length > MAX_KEY_BYTES:
        raise DamagedState(f"its key is {key_length:,} bytes long")
    return key_length, n_tokens, payload_length, checksum


def _exactly(handle, count: int) -> bytes:
    data = handle.read(count)
    if len(data) != count:  # the file shrank while being read
        raise DamagedState("it ended early")
    return data


def _little_endian(tokens: array) -> array:
    if sys.byteorder == "little":
        return tokens
    swapped = array(_TOKEN, tokens)
    swapped.byteswap()
    return swapped
