"""What every SQLite file of Hearth's does the same way (the conversations, the documents'
index): schema upgrades one transaction per step, transactions that take the write lock up
front, telling a damaged file from another failure, and moving a damaged file aside with its
WAL. Each room keeps its own schema and its own words for the user; these are the mechanics."""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ToError = Callable[[str | os.PathLike, sqlite3.Error], Exception]  # the room's words for an SQLite error

# The folder of images the conversation store keeps beside its database (store/image_files.py).
IMAGES_SUFFIX = "-images"
# The file and what is kept beside it under its name: SQLite's files, and a folder of images,
# which must stay with its database.
DATABASE_FILES = ("", "-wal", "-shm", "-journal", IMAGES_SUFFIX)


def open_file(path: str | os.PathLike, to_error: ToError, migrate: Callable[[sqlite3.Connection], None],
              first: Sequence[str] = ()) -> sqlite3.Connection:
    """Open (creating if needed) and upgrade the file at path, in autocommit mode (changes of
    several statements go through transaction()), with foreign keys, WAL and `first` (pragmas
    that must come before any table). An SQLite error becomes the room's (`to_error`); the
    file is left as it was."""
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise to_error(path, exc) from exc
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        for pragma in first:
            conn.execute(pragma)
        migrate(conn)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.Error as exc:
        conn.close()
        raise to_error(path, exc) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def reporting_errors(to_error: ToError) -> Callable[[type], type]:
    """A class decorator: every public method of the class (whose instances have `path`) turns
    an SQLite error into the room's (`to_error`), whichever call meets it first, so a damaged or
    full file is a message the window can show and never a traceback in a slot."""

    def guarded(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except sqlite3.DatabaseError as exc:
                raise to_error(self.path, exc) from exc

        return call

    def decorate(cls: type) -> type:
        for name, value in list(vars(cls).items()):
            if callable(value) and not name.startswith("_"):
                setattr(cls, name, guarded(value))
        return cls

    return decorate


def migrate(conn: sqlite3.Connection, migrations: tuple[str, ...], too_new: Callable[[int], Exception]) -> None:
    """Bring the file up to len(migrations), one transaction per step. A file newer than the
    migrations known is refused before anything is written (`too_new(its version)` is raised):
    an older Hearth must not guess at a schema it has never seen."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(migrations):
        raise too_new(version)
    for number, script in enumerate(migrations[version:], start=version + 1):
        # executescript() would commit an open transaction first, so BEGIN/COMMIT go inside it.
        try:
            conn.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Several statements as one commit; IMMEDIATE takes the write lock up front."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def is_damage(exc: sqlite3.Error) -> bool:
    """The file's pages are corrupt or it is no database (not a full disk, a lock, a permission)."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF  # extended codes keep the primary in the low byte
    return code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def move_aside(path: str | Path) -> Path:
    """Rename the file, with its -wal, -shm and -journal files and its -images folder, to a
    timestamped name beside it (conversations.sqlite3.damaged-20250101-120000), so a fresh one
    can take its place and nothing in the old one is lost: SQLite still finds the renamed file's
    WAL under its new name, the store its images. Never overwrites: a second move in the same
    second gets "-2"."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    number = 2
    while any(Path(f"{target}{suffix}").exists() for suffix in DATABASE_FILES):
        target = path.with_name(f"{path.name}.damaged-{stamp}-{number}")
        number += 1
    for suffix in DATABASE_FILES:  # a WAL or journal goes with its file: never replayed into a new one,
        # and its images with it: a new database would take them for files no message names
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.rename(f"{target}{suffix}")
    return target
