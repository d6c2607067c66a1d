"""Finding the GGUF files a user can chat with, and saying what is wrong with the others.

The model picker lists what this returns. A file that fails inspection is still listed, with
the reason, because a model that silently does not appear ("I downloaded it, where is it?")
is worse than one that says it is truncated. Whatever goes wrong with one entry (a link loop,
a file that cannot be read or vanishes mid-scan, a name that is not valid UTF-8) stays that
entry's row or skips it: it never hides the other models. Inspection reads headers only, but
a folder of big models is still worth not re-reading: results are cached by path, size and
mtime.

A vision model's projector (an mmproj GGUF: library/projectors.py) is no chat model: a folder's
projectors are not listed, and each model with a projector that fits it beside it is marked
(`ModelEntry.projector`), so the list can say it reads images. A projector the user added as a
file of its own is listed, saying what it is, rather than silently left out.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..common.text import printable
from ..engine.gguf.modelfile import ModelFileError, ModelInfo
from ..engine.gguf.reading import inspect_model
from ..images.image import ImageError
from .homes import ModelHomes
from .projectors import is_projector, projector_for
from .quants import QUARANTINE_DIR, SPLIT_NAME

log = logging.getLogger(__name__)

# Files this many folders below a scanned folder are found; deeper ones are not, so adding
# a big folder (a home directory) by mistake costs a bounded walk, not the whole disk.
MAX_DEPTH = 3
# Downloads in progress (`.gguf.part`, `.gguf.partial`) don't end in `.gguf`, so they are
# never listed; files that failed their checksum wait in `quarantine/`, which is skipped.
SKIPPED_FOLDERS = frozenset({QUARANTINE_DIR})
_HF_REPO_PREFIX = "models--"

APP_MODELS_LABEL = "Hearth"
USER_MODELS_LABEL = "Your models"
HF_LABEL = "Hugging Face"


@dataclass(frozen=True)
class ModelEntry:
    """One listed model: a usable file (`info`) or an unusable one (`error`), never both."""

    path: Path  # as listed; in the Hugging Face cache, the snapshot's file name, not the blob
    origin: str  # where it was found, for people: "Hearth", "Your models", a folder, a repo
    size: int  # bytes, all parts of a split model together
    info: ModelInfo | None
    error: str | None
    projector: Path | None = None  # the projector beside it that fits it (projectors.projector_for)
    projector_problem: str | None = None  # why the projector named for it can't be used

    @property
    def usable(self) -> bool:
        return self.info is not None

    @property
    def reads_images(self) -> bool:
        return self.projector is not None

    @property
    def name(self) -> str:
        return self.info.name if self.info else printable(self.path.name, limit=None)


def hf_cache_dir() -> Path:
    """huggingface_hub's cache folder (it honours HF_HOME and HF_HUB_CACHE)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def model_folders(homes: ModelHomes, extra: Iterable[Path] = ()) -> list[Path]:
    """Every folder Hearth looks in, in listing order; duplicates and missing ones dropped."""
    folders: list[Path] = []
    seen: set[Path] = set()
    for folder in (homes.shipped, homes.user, *extra, hf_cache_dir()):
        folder = Path(folder).expanduser()
        key = resolved(folder)
        if key not in seen and _is_dir(folder):
            seen.add(key)
            folders.append(folder)
    return folders


def scan(folders: Iterable[Path], files: Iterable[Path] = (), homes: ModelHomes | None = None) -> list[ModelEntry]:
    """List the models in `folders`, then the single `files` the user added; `homes` are named
    by name in the folder column (folder_label).

    A folder laid out as a Hugging Face cache (`models--org--name/snapshots/…`) is read as
    one: each file is listed under its repository. The same file reached twice (a symlink,
    a folder inside another) is listed once, where it was found first. A folder's projectors
    are not listed; one of the `files` is, saying what it is.
    """
    entries: list[ModelEntry] = []
    seen: set[Path] = set()

    def add(path: Path, origin: str, added: bool = False) -> None:
        key = resolved(path)
        if key not in seen and os.path.lexists(path):  # not if it vanished since it was listed
            seen.add(key)
            entry = _entry_or_its_failure(path, origin, added)
            if entry is not None:
                entries.append(entry)

    for folder in folders:
        folder = Path(folder)
        if _is_hf_cache(folder):
            for path, repo in _hf_cache_files(folder):
                add(path, f"{HF_LABEL} · {repo}")
        else:
            origin = folder_label(folder, homes)
            for path in _gguf_files(folder):
                add(path, origin)
    for path in files:
        path = Path(path)
        if _is_listed_name(path.name):
            add(path, folder_label(path.parent, homes), added=True)
    return entries


def folder_label(folder: Path, homes: ModelHomes | None = None) -> str:
    """How the folder column names a folder: Hearth's own by name, others by their path."""
    key = resolved(folder)
    if homes is not None and key == resolved(homes.shipped):
        return APP_MODELS_LABEL
    if homes is not None and key == resolved(homes.user):
        return USER_MODELS_LABEL
    home = Path.home()
    try:
        return printable(str(Path("~") / folder.relative_to(home)), limit=None)
    except ValueError:
        return printable(str(folder), limit=None)


def resolved(path: Path) -> Path:
    """The path with links followed, to tell whether two names are one file."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a drive that went away; a link loop (RuntimeError before 3.13)
        return path.absolute()


def _is_dir(path: Path) -> bool:
    """Path.is_dir, but False instead of an error for a folder Hearth may not look into."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _is_listed_name(name: str) -> bool:
    """A `.gguf` that is a whole model or the first part of a split one."""
    if not name.lower().endswith(".gguf"):
        return False
    split = SPLIT_NAME.match(name)
    return split is None or int(split["index"]) == 1


def _gguf_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, names in os.walk(folder, onerror=lambda exc: log.info("skipping %s: %s", exc.filename, exc)):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = [] if depth >= MAX_DEPTH else [
            d for d in dirs if not d.startswith(".") and d.lower() not in SKIPPED_FOLDERS
        ]
        found.extend(Path(root, name) for name in names if _is_listed_name(name))
    return sorted(found, key=lambda p: str(p.relative_to(folder)).lower())


def _is_hf_cache(folder: Path) -> bool:
    try:
        return any(child.name.startswith(_HF_REPO_PREFIX) and child.is_dir() for child in folder.iterdir())
    except OSError:
        return False


def _hf_cache_files(cache: Path) -> list[tuple[Path, str]]:
    """(snapshot path, "org/name") for every model file in every snapshot of every repo."""
    found = []
    for repo_dir in sorted(cache.glob(f"{_HF_REPO_PREFIX}*")):
        repo = repo_dir.name.removeprefix(_HF_REPO_PREFIX).replace("--", "/")
        for snapshot in sorted((repo_dir / "snapshots").glob("*")):
            if _is_dir(snapshot):
                found.extend((path, repo) for path in _gguf_files(snapshot))
    return found


def _entry_or_its_failure(path: Path, origin: str, added: bool) -> ModelEntry | None:
    """The entry for one file (None: a projector in a folder, not listed; `added`: the user
    added this file); if listing it fails in a way nobody foresaw, a row saying so."""
    try:
        return _entry(path, origin, added)
    except Exception as exc:
        log.exception("listing %s failed", path)
        return ModelEntry(path, origin, _stat_size(path), None,
                          f"Hearth could not list {printable(path.name)}: {printable(str(exc))}")


def _entry(path: Path, origin: str, added: bool) -> ModelEntry | None:
    size = _stat_size(path)
    if is_projector(path):  # by its name (a damaged one too), else by its header
        return ModelEntry(path, origin, size, None, _projector_row(path)) if added else None
    split = SPLIT_NAME.match(path.name)
    if split:
        count = int(split["count"])
        for index in range(2, count + 1):
            part = path.with_name(f"{split['base']}-{index:05d}-of-{count:05d}.gguf")
            if not os.path.exists(part):
                return ModelEntry(path, origin, size, None, f"Part {index} of {count} ({printable(part.name)}) is missing.")
            size += _stat_size(part)
    result = _INSPECTIONS.inspect(path)
    if not isinstance(result, ModelInfo):
        return ModelEntry(path, origin, size, None, result)
    projector, problem = _pairing(path)
    return ModelEntry(path, origin, size, result, None, projector, problem)


def _pairing(path: Path) -> tuple[Path | None, str | None]:
    """The projector beside the model that fits it, or why the one named for it does not."""
    try:
        return projector_for(path), None
    except ImageError as exc:
        return None, str(exc)
    except ModelFileError:  # the model's shape can't be read: its load will say why
        return None, None


def _projector_row(path: Path) -> str:
    return (f"{printable(path.name)} is a vision projector (mmproj): it goes with a language model "
            "and cannot be chatted with on its own.")


def _stat_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class _InspectionCache:
    """inspect_model results by path, valid while the file's size and mtime are unchanged.

    Shared by scans on worker threads, hence the lock. One slot per path, so a file that
    changes replaces its old result instead of piling up.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._results: dict[Path, tuple[int, int, ModelInfo | str]] = {}

    def inspect(self, path: Path) -> ModelInfo | str:
        try:
            stat = path.stat()
        except OSError:
            return _inspect(path)  # the inspector words "not found" for the user
        with self._lock:
            cached = self._results.get(path)
        if cached and cached[:2] == (stat.st_size, stat.st_mtime_ns):
            return cached[2]
        result = _inspect(path)
        with self._lock:
            self._results[path] = (stat.st_size, stat.st_mtime_ns, result)
        return result


def _inspect(path: Path) -> ModelInfo | str:
    try:
        info = inspect_model(path)  # it turns every failure, even its own bugs, into a message
    except ModelFileError as exc:
        return str(exc)
    return info


_INSPECTIONS = _InspectionCache()
