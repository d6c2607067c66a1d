"""What Hearth reads from a model file, for one walk of its header per file version.

A load asks a file for its info (`inspect_model`), its memory shape (`model_shape`, the memory
plan's input) and, when it first saves a conversation's state, where its header ends (the
fingerprint's `header_end`); the model picker asks every listed file for the first two. One
walk answers all three, and what is kept per file version (its path, size and modification
time) is the answers: a ModelInfo, a ModelShape and an offset, kilobytes. Not the walked
header: its bytes run to megabytes for a large vocabulary, and the window would hold them for
every listed file while it sits idle.

An answer that cannot be given (the file is fine as a model but not as a shape, say) is not
kept: asking for it again walks the header again and raises the reason, worded for the user.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ...common.text import printable
from .header import FileVersion, Header, file_version, read_header
from .modelfile import ModelInfo, model_file_errors, model_info, regular_file_size
from .shape import ModelShape, shape_of

READINGS_KEPT = 256  # file versions; a reading is a few kilobytes

T = TypeVar("T")


@dataclass(frozen=True)
class _Reading:
    info: ModelInfo | None  # None: not a model Hearth can use (inspect_model says why)
    shape: ModelShape | None  # None: its shape cannot be read (model_shape says why)
    header_end: int


def inspect_model(path: str | os.PathLike) -> ModelInfo:
    """Read a GGUF's metadata, or raise ModelFileError saying what is wrong with it."""
    path = Path(path)
    regular_file_size(path, printable(path.name))
    return _answer(path, lambda reading: reading.info, model_info)


def model_shape(path: str | os.PathLike) -> ModelShape:
    """The shape of the model at `path`, or ModelFileError saying why it cannot be read."""
    return _answer(Path(path), lambda reading: reading.shape, shape_of)


def header_end(version: FileVersion) -> int:
    """Where the header of the file at `version` ends; raises BadHeader, metadata.Invalid or
    OSError (the fingerprint says which)."""
    return _reading(version).header_end


def _answer(path: Path, kept: Callable[[_Reading], T | None], interpret: Callable[[FileVersion, Header], T]) -> T:
    with model_file_errors(path):
        version = file_version(path)
        answer = kept(_reading(version))
        return answer if answer is not None else interpret(version, read_header(version))


@functools.lru_cache(maxsize=READINGS_KEPT)
def _reading(version: FileVersion) -> _Reading:
    header = read_header(version)
    return _Reading(_or_none(model_info, version, header), _or_none(shape_of, version, header), header.end)


def _or_none(interpret: Callable[[FileVersion, Header], T], version: FileVersion, header: Header) -> T | None:
    try:
        return interpret(version, header)
    except Exception:  # said when that answer is asked for, in model_file_errors' words
        return None
