"""The bytes of the images messages hold: one file per image, named by its digest, in a folder
beside the database (`conversations.sqlite3-images/1a/1a2b…64 hex….png`).

Files, not BLOBs: the database stays small (a backup, a quick_check and every WAL checkpoint
read it all), and an image sent twice, or kept by every branch and version that copies the
message, is stored once.

Crash safety, with image_links.py, which decides when: a file is written whole (a temporary
file, fsync, rename, the folder fsynced) inside the transaction that commits the first row
naming it, before its COMMIT, so a crash leaves at worst a file that no row names (swept at the
next start), never a row without its file. A file is unlinked only after the commit that
removed its last reference, while holding the write lock: every connection writes its files
inside its own write transaction, so no file that a commit is about to name is ever taken.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from app.common.sqlite_files import IMAGES_SUFFIX
from app.images.image import Image, ImageRef

EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}  # by media type
_DIGEST = re.compile(r"[0-9a-f]{64}")
_FILE = re.compile(r"[0-9a-f]{64}\.(?:png|jpg|webp)")
_SHARD = re.compile(r"[0-9a-f]{2}")
TEMPORARY_SUFFIX = ".partial"  # a file being written; one left by a crash is swept


def images_folder(database: str | os.PathLike) -> Path:
    """Where the images of the database at `database` live: beside it, named after it, so that
    a database moved aside (damaged) keeps its own and a fresh one starts with none."""
    return Path(f"{os.fspath(database)}{IMAGES_SUFFIX}")  # move_aside moves it with its database


def file_name(digest: str, media_type: str) -> str:
    """The name of an image's file. Refused (ValueError) unless the digest is 64 lowercase hex
    digits and the type one Hearth stores: a name read from a file cannot reach outside the folder."""
    if not _DIGEST.fullmatch(digest) or media_type not in EXTENSIONS:
        raise ValueError(f"not an image digest and media type: {digest[:80]!r}, {media_type[:80]!r}")
    return f"{digest}.{EXTENSIONS[media_type]}"


class ImageFiles:
    """The folder of one database's images. Every method may raise OSError."""

    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, ref: ImageRef) -> Path:
        return self.folder / ref.digest[:2] / file_name(ref.digest, ref.media_type)

    def write(self, image: Image) -> None:
        """Write the image's file unless it is there already, whole: a file damaged since it was
        written (its bytes no longer its digest) is written again."""
        target = self.path(image.ref)
        try:
            with open(target, "rb") as file:
                if hashlib.sha256(file.read(len(image.data) + 1)).hexdigest() == image.digest:
                    return
        except FileNotFoundError:
            pass
        shard = target.parent
        if not shard.is_dir():
            _make_folder(shard)
        descriptor, temporary = tempfile.mkstemp(dir=shard, prefix=f".{image.digest[:16]}-", suffix=TEMPORARY_SUFFIX)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(image.data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _sync_folder(shard)

    def read(self, ref: ImageRef, limit: int) -> bytes:
        """The file's bytes; at most limit + 1 are read, so that a file swapped for a huge one
        cannot fill the memory (the caller's digest check refuses it)."""
        with open(self.path(ref), "rb") as file:
            return file.read(limit + 1)

    def sweep(self, keep: set[str]) -> int:
        """Unlink every image file whose name is not in `keep`, and every temporary file a
        crash left; returns how many. Only names this module makes are touched. Best effort: a
        folder that cannot be listed or a file that cannot be unlinked stays (the next sweep
        tries again), and a start never fails for it."""
        swept = 0
        for shard in _entries(self.folder):
            if not (_SHARD.fullmatch(shard.name) and shard.is_dir(follow_symlinks=False)):
                continue
            for entry in _entries(shard.path):
                if entry.name.endswith(TEMPORARY_SUFFIX) or (_FILE.fullmatch(entry.name) and entry.name not in keep):
                    try:
                        os.unlink(entry.path)
                        swept += 1
                    except OSError:
                        pass
        return swept


def _entries(folder: str | Path) -> list[os.DirEntry]:
    """The folder's entries; none when it is missing or cannot be read."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []


def _make_folder(folder: Path) -> None:
    """Create the folder (and the images folder above it) durably: a file in a folder whose own
    entry a power cut loses is lost with it."""
    created = [parent for parent in (folder.parent, folder) if not parent.is_dir()]
    folder.mkdir(parents=True, exist_ok=True)
    for made in created:
        _sync_folder(made.parent)


def _sync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename or a new entry in it survives a power cut. Windows
    cannot open a folder; its NTFS journals the entry itself."""
    if os.name == "nt":
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
