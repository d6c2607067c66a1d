"""One file's bytes, read one way for every reader and for the window's source view: nothing is
followed (a link is refused: its target may be anywhere, or a loop), nothing that is not a
regular file is read (a FIFO would block for ever, a device would never end), and never more
than the cap. Every failure is a DocumentError saying why."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from app.documents.limits import MAX_FILE_BYTES
from app.documents.types import DocumentError


def read_bytes(path: Path) -> bytes:
    """The file's bytes, opened without following a link (O_NOFOLLOW where the system has it,
    the link checked first everywhere) and without blocking (O_NONBLOCK: a FIFO opens and is
    then refused), its size checked on the open file, and never more than the cap read."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise DocumentError("is a link; Hearth reads files, not links")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        descriptor = os.open(path, flags)
    except DocumentError:
        raise
    except OSError as error:
        raise DocumentError(_open_reason(error)) from None
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_FILE_BYTES:
        os.close(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise DocumentError("is not a regular file")
        raise DocumentError(f"is {status.st_size:,} bytes, more than the {MAX_FILE_BYTES:,} Hearth reads")
    with os.fdopen(descriptor, "rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)  # a file that grew since fstat is still bounded
    if len(data) > MAX_FILE_BYTES:
        raise DocumentError(f"is more than the {MAX_FILE_BYTES:,} bytes Hearth reads")
    return data


def _open_reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "is a link; Hearth reads files, not links"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "cannot be read: permission denied"
    if error.errno == errno.ENOENT:
        return "no longer exists"
    if error.errno == errno.EISDIR:
        return "is a folder, not a file"
    return f"cannot be read ({error.strerror or 'error'})"
