"""Which GGUF files in a repository make up which model, and at what quantization.

Hugging Face repositories of GGUFs name files by convention only: the quantization is a
token such as `Q4_K_M`, `IQ2_XS`, `f16` or `BF16` somewhere in the name, and a model too big
for one file is split into `NAME-00001-of-00003.gguf` parts that llama.cpp loads together
from the first one. This module reads those conventions from the names alone, so listing a
repository needs no download.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

# I-quants and K-quants (Q4_K_M, IQ2_XXS, Q4_0_4_4, unsloth's UD-Q4_K_XL), ternary and
# MXFP4 quants, and the unquantized float types. Matched as a whole token of the name.
_QUANT = re.compile(
    r"(?<![A-Za-z0-9])("
    r"(?:UD-)?I?Q[1-8](?:_(?:K|XXS|XS|NL|S|M|L|XL|\d))*"
    r"|TQ[12]_0|MXFP4(?:_MOE)?|BF16|FP?16|FP?32"
    r")(?![A-Za-z0-9])",
    re.IGNORECASE,
)
# llama.cpp's split-model naming; it loads the rest of the parts from the first.
SPLIT_NAME = re.compile(r"^(?P<base>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)
# Where a download that fails its checksum is moved, beside the models, out of the picker's sight.
QUARANTINE_DIR = "quarantine"
# GGUFs that are not chat models: vision projectors and importance matrices.
_NOT_A_MODEL = re.compile(r"mmproj|imatrix", re.IGNORECASE)
UNKNOWN_QUANT = "unknown"


@dataclass(frozen=True)
class RemoteFile:
    """One file of a repository, with what the Hub says about its content."""

    path: str  # inside the repository, possibly in a folder
    size: int
    sha256: str | None  # LFS files: the sha256 of the content
    git_sha1: str | None  # every file: the git blob id, the only checksum of non-LFS files

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name


@dataclass(frozen=True)
class RemoteModel:
    """A model one can download: a single GGUF, or all the parts of a split one, in order."""

    repo_id: str
    revision: str  # the commit the listing came from, so every part comes from the same one
    quant: str
    parts: tuple[RemoteFile, ...]

    @property
    def name(self) -> str:
        """The local file name llama.cpp is given (the first part of a split model)."""
        return self.parts[0].name

    @property
    def size(self) -> int:
        return sum(part.size for part in self.parts)


def quant_of(path: str) -> str:
    """The quantization named in a file path, upper-case ('Q4_K_M', 'F16'), or 'unknown'.

    The file name wins over its folder; within a name the last token wins, because names
    such as 'Q8-Model-Q4_K_M.gguf' put the quant last.
    """
    for component in reversed(PurePosixPath(path).parts):
        stem = SPLIT_NAME.sub(r"\g<base>", component)
        stem = re.sub(r"\.gguf$", "", stem, flags=re.IGNORECASE)
        matches = _QUANT.findall(stem)
        if matches:
            quant = matches[-1].upper()
            return {"FP16": "F16", "FP32": "F32"}.get(quant, quant)
    return UNKNOWN_QUANT


def group_models(repo_id: str, revision: str, files: Iterable[RemoteFile]) -> list[RemoteModel]:
    """The downloadable models among a repository's files, smallest first.

    Parts of a split model become one RemoteModel. A split model with a part missing from
    the listing is left out: llama.cpp could not load it.
    """
    singles: list[RemoteModel] = []
    split_sets: dict[tuple[str, int], dict[int, RemoteFile]] = {}
    for file in files:
        if not file.name.lower().endswith(".gguf") or _NOT_A_MODEL.search(file.name):
            continue
        split = SPLIT_NAME.match(file.path)
        if split is None:
            singles.append(RemoteModel(repo_id, revision, quant_of(file.path), (file,)))
        else:
            key = (split["base"], int(split["count"]))
            split_sets.setdefault(key, {})[int(split["index"])] = file
    for (_, count), parts in split_sets.items():
        if sorted(parts) == list(range(1, count + 1)):
            ordered = tuple(parts[index] for index in range(1, count + 1))
            singles.append(RemoteModel(repo_id, revision, quant_of(ordered[0].path), ordered))
    return sorted(singles, key=lambda model: (model.size, model.name))


def by_quant(models: Iterable[RemoteModel]) -> dict[str, list[RemoteModel]]:
    """Models grouped by quantization, groups in order of their smallest model."""
    groups: dict[str, list[RemoteModel]] = {}
    for model in sorted(models, key=lambda model: model.size):
        groups.setdefault(model.quant, []).append(model)
    return groups
