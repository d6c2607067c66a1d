"""Which GGUF files in a repository make up which model, and at what quantization.

Hugging Face repositories of GGUFs name files by convention only: the quantization is a
token such as `Q4_K_M`, `IQ2_XS`, `f16` or `BF16` somewhere in the name, and a model too big
for one file is split into `NAME-00001-of-00003.gguf` parts that llama.cpp loads together
from the first one. This module reads those conventions from the names alone, so listing a
repository needs no download.

A vision model comes with a projector (`mmproj-*.gguf`) that llama.cpp loads beside it; a
repository holds one or several (`f16`, `Q8_0`...) for all its quantizations. Each model is
listed with the projector it would be downloaded with (`RemoteModel.projector`, chosen by
`projector_order`), saved beside the model under a name that says whose it is (`projector_name`),
so library/projectors.py pairs them on disk by the same rule.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, replace
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
_PROJECTOR = re.compile(r"mmproj", re.IGNORECASE)  # how llama.cpp's converter and every repository name them
# A projector's precision, best first, when several would do: f16 is what llama.cpp's converter
# writes by default and what model cards recommend (a projector is small, and quantizing it
# costs image understanding more than it saves), then Q8_0, then the other float types.
PROJECTOR_PRECISIONS = ("F16", "Q8_0", "BF16", "F32")
_WORD = re.compile(r"[a-z0-9]+")
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
    saved_as: PurePosixPath | None = None  # where it goes, where not its own path (a model's projector)

    @property
    def local_path(self) -> PurePosixPath:
        """Where the file goes under the models folder: its repository path, made safe."""
        return self.saved_as if self.saved_as is not None else local_path(self.path)

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
    projector: RemoteFile | None = None  # downloaded with it, into its folder: it then reads images

    @property
    def name(self) -> str:
        """The local file name llama.cpp is given (the first part of a split model)."""
        return self.parts[0].name

    @property
    def local_path(self) -> PurePosixPath:
        """The file llama.cpp is given, relative to the models folder."""
        return self.parts[0].local_path

    @property
    def files(self) -> tuple[RemoteFile, ...]:
        """Every file a download brings: the parts, then the projector."""
        return self.parts + ((self.projector,) if self.projector is not None else ())

    @property
    def size(self) -> int:
        """Bytes to download, and roughly to hold: the parts and the projector."""
        return sum(file.size for file in self.files)


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
    """The downloadable models among a repository's files, smallest first, each with the
    repository's projector for it where it has projectors (`_with_projector`).

    Parts of a split model become one RemoteModel. A split model with a part missing from
    the listing is left out: llama.cpp could not load it.
    """
    singles: list[RemoteModel] = []
    split_sets: dict[tuple[str, int], dict[int, RemoteFile]] = {}
    projectors: list[RemoteFile] = []
    for file in files:
        if not file.name.lower().endswith(".gguf"):
            continue
        if is_projector_name(file.name) and not SPLIT_NAME.match(file.name):
            projectors.append(file)
        if _NOT_A_MODEL.search(file.name):
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
    paired = [_with_projector(model, projectors) for model in singles]
    return sorted(paired, key=lambda model: (model.size, model.name))


def _with_projector(model: RemoteModel, projectors: list[RemoteFile]) -> RemoteModel:
    """The model with the repository's projector for it, saved beside it: one in the model's own
    folder before the others, then by `projector_order`."""
    if not projectors:
        return model
    folder = PurePosixPath(model.parts[0].path).parent
    best = min(projectors, key=lambda file: (PurePosixPath(file.path).parent != folder,
                                             *projector_order(model.name, file.name)))
    saved_as = model.local_path.parent / projector_name(model.name, best.name)
    return replace(model, projector=replace(best, saved_as=saved_as))


def is_projector_name(name: str) -> bool:
    """Whether a file name is a projector's (`mmproj` in it, as every repository names them)."""
    return _PROJECTOR.search(name) is not None


def name_words(name: str) -> tuple[str, ...]:
    """The words of a file name that say which model it is: lower-case, without its extension,
    split-part suffix, quantization and "mmproj". `mmproj-gemma-3-4b-it-f16.gguf` and
    `gemma-3-4b-it-Q4_K_M.gguf` both say ("gemma", "3", "4b", "it")."""
    return tuple(_WORD.findall(_QUANT.sub(" ", _PROJECTOR.sub(" ", _model_stem(name))).lower()))


def shared_words(model_name: str, projector_file: str) -> int:
    """How many leading words a projector's file name shares with a model's (name_words)."""
    count = 0
    for model_word, projector_word in zip(name_words(model_name), name_words(projector_file)):
        if model_word != projector_word:
            break
        count += 1
    return count


def projector_order(model_name: str, projector_file: str) -> tuple:
    """How a projector ranks for a model, best first (a sort key): the one whose name shares the
    most leading words with the model's, then by precision (PROJECTOR_PRECISIONS, others after),
    then by name, so the choice never depends on the order files were listed in."""
    quant = quant_of(projector_file)
    precision = PROJECTOR_PRECISIONS.index(quant) if quant in PROJECTOR_PRECISIONS else len(PROJECTOR_PRECISIONS)
    return -shared_words(model_name, projector_file), precision, projector_file.casefold(), projector_file


def projector_name(model_name: str, projector_file: str) -> str:
    """The name a projector is saved under beside `model_name`: its own where it names the model
    already (`mmproj-gemma-3-4b-it-f16.gguf` beside `gemma-3-4b-it-Q4_K_M.gguf`), else
    `mmproj-<model>-<its precision>.gguf`. Repositories often name theirs `mmproj-model-f16.gguf`
    or `mmproj-F16.gguf`; saved under that, two vision models' projectors would collide in one
    folder, and neither would say which model it goes with."""
    if name_words(projector_file) == name_words(model_name):
        return projector_file
    model = re.sub(r"[-_. ]{2,}", "-", _QUANT.sub("", _model_stem(model_name))).strip("-_. ") or "model"
    quant = quant_of(projector_file)
    return safe_file_name(f"mmproj-{model}{'' if quant == UNKNOWN_QUANT else '-' + quant}.gguf")


def _model_stem(name: str) -> str:
    """A file name without its extension and split-part suffix."""
    return re.sub(r"\.gguf$", "", SPLIT_NAME.sub(r"\g<base>", name), flags=re.IGNORECASE)


def by_quant(models: Iterable[RemoteModel]) -> dict[str, list[RemoteModel]]:
    """Models grouped by quantization, groups in order of their smallest model."""
    groups: dict[str, list[RemoteModel]] = {}
    for model in sorted(models, key=lambda model: model.size):
        groups.setdefault(model.quant, []).append(model)
    return groups
