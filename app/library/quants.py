"""Which GGUF files in a repository make up which model, and at what quantization.

Hugging Face repositories of GGUFs name files by convention only: the quantization is a
token such as `Q4_K_M`, `IQ2_XS`, `f16` or `BF16` somewhere in the name, and a model too big
for one file is split into `NAME-00001-of-00003.gguf` parts that llama.cpp loads together
from the first one. This module reads those conventions from the names alone, so listing a
repository needs no download.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
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
# A downloaded file keeps its repository folders, at most this many deep: the model picker
# looks no deeper (scan.MAX_DEPTH); deeper folders are joined into the last one kept.
MAX_LOCAL_FOLDERS = 3
# Bytes in one local file name: below the usual limit of 255, leaving room for the `.part`
# and `.corrupt` endings a name gets while it downloads or after it failed its checksum.
MAX_NAME_BYTES = 240
# Never part of a file name: path separators, the characters Windows refuses, and (checked by
# Unicode category) control, format, surrogate and line-separator characters.
_SEPARATORS_AND_RESERVED = frozenset('/\\:*?"<>|')
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_WINDOWS_DEVICE = re.compile(r"^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$", re.IGNORECASE)
_EDGE_DOTS_AND_SPACES = re.compile(r"^[\s.]+|[\s.]+$")


@dataclass(frozen=True)
class RemoteFile:
    """One file of a repository, with what the Hub says about its content."""

    path: str  # inside the repository, possibly in a folder, as the server wrote it
    size: int
    sha256: str | None  # LFS files: the sha256 of the content
    git_sha1: str | None  # every file: the git blob id, the only checksum of non-LFS files

    @property
    def local_path(self) -> PurePosixPath:
        """Where the file goes under the models folder: its repository path, made safe."""
        return local_path(self.path)

    @property
    def name(self) -> str:
        """The local file name, safe to show and to use as a path."""
        return self.local_path.name


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
    def local_path(self) -> PurePosixPath:
        """The file llama.cpp is given, relative to the models folder."""
        return self.parts[0].local_path

    @property
    def size(self) -> int:
        return sum(part.size for part in self.parts)


def safe_file_name(name: str) -> str:
    """`name`, from a listing or a server, made into one file name safe on any system.

    Every name a server sends that becomes part of a path goes through here: separators,
    control characters (newlines, NUL, bidi overrides) and the characters Windows refuses
    become "_"; edge dots and spaces go (no hidden files, no "..", nothing Windows trims);
    device names (CON, NUL) get a "_" before them; a name too long for the file system is
    shortened with a hash of what was cut, keeping the ending (".gguf", and the
    "-00001-of-00003.gguf" of a split part, so llama.cpp still finds the other parts).
    """
    name = unicodedata.normalize("NFC", name)
    name = "".join("_" if _unsafe_char(char) else char for char in name)
    name = _EDGE_DOTS_AND_SPACES.sub("", name)
    if not name or _WINDOWS_DEVICE.match(name):
        name = "_" + name
    return _shortened(name)


def local_path(repo_path: str) -> PurePosixPath:
    """A repository path as a relative local path: each folder and the name made safe,
    nothing that climbs out ("..", a leading "/"), at most MAX_LOCAL_FOLDERS folders, and no
    folder the model picker skips (the quarantine)."""
    components = [safe_file_name(part) for part in repo_path.split("/") if part]
    *folders, name = components or ["_"]
    if len(folders) > MAX_LOCAL_FOLDERS:
        kept = MAX_LOCAL_FOLDERS - 1
        folders = folders[:kept] + [safe_file_name("_".join(folders[kept:]))]
    folders = [folder + "_" if folder.lower() == QUARANTINE_DIR else folder for folder in folders]
    return PurePosixPath(*folders, name)


def _unsafe_char(char: str) -> bool:
    return char in _SEPARATORS_AND_RESERVED or unicodedata.category(char) in _UNSAFE_CATEGORIES


def _shortened(name: str) -> str:
    if len(name.encode()) <= MAX_NAME_BYTES:
        return name
    split = SPLIT_NAME.match(name)
    if split:
        stem = split["base"]
    else:
        stem, dot, extension = name.rpartition(".")
        stem = stem if dot and len(extension) <= 16 else name
    ending = name[len(stem):]
    digest = hashlib.sha1(stem.encode()).hexdigest()[:8]
    room = MAX_NAME_BYTES - len(ending.encode()) - len(digest) - 1
    kept = stem.encode()[:room].decode("utf-8", "ignore")
    return f"{kept}~{digest}{ending}"


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
