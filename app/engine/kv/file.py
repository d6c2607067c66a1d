"""One saved KV state on disk: written whole or not at all, read back only if it is intact.

Layout (little-endian), format 1:

    0    8  magic b"HEARTHKV"
    8    4  format version (u32)
    12   4  key length in bytes (u32, at most MAX_KEY_BYTES)
    16   8  token count (u64)
    24   8  meta length in bytes (u64)
    32   8  payload length in bytes (u64)
    40  32  SHA-256 of the key, the tokens and the meta (the head)
    72  32  SHA-256 of the payload
    104     the key, the tokens (int32 each), the meta (the engine's, opaque here), the payload
            (llama.cpp's sequence state)

The head has a checksum of its own so that the tokens and the meta can be read, checked, and
acted on (the engine tokenizes the next prompt with them) without reading a payload that may
be hundreds of megabytes; the payload's checksum is checked before it is handed out.

A file is written under a temporary name in the same folder and renamed over the real one
(`os.replace`, atomic), so a crash leaves either the old file or the new one, never half of
one under the real name. It is not fsynced: after a power cut the renamed file may hold
garbage, and the checksums, checked before anything is trusted, catch exactly that.

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
# magic, version, key length, token count, meta length, payload length, head checksum, payload checksum
_HEADER = struct.Struct("<8sIIQQQ32s32s")
HEADER_BYTES = _HEADER.size
TEMP_SUFFIX = ".tmp"
_TOKEN = "i"  # int32, as llama_token (a C int is 4 bytes on every platform llama.cpp builds for)
# Not following a link; not waiting for a writer where a fifo was put under a state's name.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class DamagedState(Exception):
    """The file is not an intact saved state of this format; the message says what is wrong."""


class KeyMismatch(DamagedState):
    """An intact file, but for another key: as useless here as a damaged one."""


@dataclass(frozen=True)
class Limits:
    """The most a file may claim before a byte of it is read into memory."""

    max_tokens: int
    max_bytes: int  # for the meta and the payload together


@dataclass(frozen=True)
class StateFile:
    key: bytes
    tokens: array  # array("i")
    meta: bytes
    payload: bytes | None  # None where only the head was read


def write(path: Path, key: bytes, tokens: array, meta: bytes, payload: bytes) -> None:
    """Write a state to `path` atomically (a temporary file in the same folder, then a rename).

    Raises OSError where the disk refuses; the temporary file is removed then.
    """
    if len(key) > MAX_KEY_BYTES:
        raise ValueError(f"a state key is at most {MAX_KEY_BYTES} bytes")
    token_bytes = _little_endian(tokens).tobytes()
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, len(key), len(tokens), len(meta), len(payload),
                          _digest(key, token_bytes, meta), _digest(payload))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    try:
        with temporary.open("xb") as handle:
            for part in (header, key, token_bytes, meta, payload):
                handle.write(part)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read(path: Path, limits: Limits, expected_key: bytes, with_payload: bool = True) -> StateFile:
    """The state in the file at `path`, every part read checked; DamagedState if anything is
    wrong, KeyMismatch (before the tokens are read) if it was saved under another key.

    Without `with_payload`, only the head (key, tokens, meta) is read and checked.
    """
    with _open(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        raw = handle.read(HEADER_BYTES)
        if len(raw) < HEADER_BYTES:
            raise DamagedState(f"it is {size:,} bytes, shorter than a header")
        magic, version, key_length, n_tokens, meta_length, payload_length, head_sum, payload_sum = _HEADER.unpack(raw)
        if magic != MAGIC:
            raise DamagedState("it is not a Hearth state file")
        if version != FORMAT_VERSION:
            raise DamagedState(f"it is format {version}, not {FORMAT_VERSION}")
        if key_length > MAX_KEY_BYTES:
            raise DamagedState(f"its key is {key_length:,} bytes long")
        if n_tokens > limits.max_tokens:
            raise DamagedState(f"it claims {n_tokens:,} tokens, more than {limits.max_tokens:,}")
        if meta_length > limits.max_bytes or payload_length > limits.max_bytes - meta_length:
            raise DamagedState(f"it claims {meta_length + payload_length:,} bytes of data, more than {limits.max_bytes:,}")
        if HEADER_BYTES + key_length + 4 * n_tokens + meta_length + payload_length != size:
            raise DamagedState(f"its lengths do not add up to its size ({size:,} bytes): truncated or padded")
        key = _exactly(handle, key_length)
        if key != expected_key:
            raise KeyMismatch("it was saved for another model or other settings")
        token_bytes = _exactly(handle, 4 * n_tokens)
        meta = _exactly(handle, meta_length)
        if _digest(key, token_bytes, meta) != head_sum:
            raise DamagedState("its tokens or meta do not match their checksum: it was damaged")
        payload = _exactly(handle, payload_length) if with_payload else None
    if payload is not None and _digest(payload) != payload_sum:
        raise DamagedState("its payload does not match its checksum: it was damaged")
    tokens = array(_TOKEN)
    tokens.frombytes(token_bytes)
    return StateFile(key, _little_endian(tokens), meta, payload)


def is_prefix(tokens: array, prompt: Sequence[int]) -> bool:
    """Whether `prompt` begins with exactly `tokens`."""
    return len(tokens) <= len(prompt) and tokens.tolist() == list(prompt[:len(tokens)])


def _digest(*parts: bytes) -> bytes:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return digest.digest()


def _open(path: Path):
    """The file for reading, refusing anything but a regular file (no links, fifos, devices)."""
    descriptor = os.open(path, _OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise DamagedState("it is not a regular file")
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


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
