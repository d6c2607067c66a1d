"""Which images a message holds, in order (the message_images rows, schema 6), kept in step
with their files (image_files.py): a file is written inside the transaction that first names
it, before its COMMIT; it is unlinked only when no row names it any more, after the commit that
removed the last one, while holding the write lock (sweep).

A message's images are read with it, as one column of the message query (IMAGES_COLUMN):
references only; the bytes are read when asked for (read), and checked against their digest.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable

from app.common.sqlite_files import transaction
from app.images.image import Image, ImageRef
from app.images.limits import MAX_IMAGE_BYTES, MAX_IMAGES_PER_MESSAGE
from app.store.image_files import ImageFiles, file_name
from app.store.records import MissingImage, StoreError, shorten

# A message's images as one column of a query over `messages m`: "position digest type width
# height" entries, comma-separated, in no set order (records.refs_from_column puts them in order).
IMAGES_COLUMN = """(SELECT group_concat(i.position || ' ' || i.digest || ' ' || i.media_type || ' ' || i.width
    || ' ' || i.height, ',') FROM message_images i WHERE i.message_id = m.id) AS images"""
_TYPE_WORDS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP"}


def named(ref: ImageRef) -> str:
    """An image in words a person can tell apart and find again: "640 × 480 PNG, sha256 1a2b3c4d"."""
    return f"{ref.width} × {ref.height} {_TYPE_WORDS.get(ref.media_type, ref.media_type)}, sha256 {ref.digest[:8]}"


def check_images(role: str, images: tuple[Image, ...]) -> None:
    """Refuse images on anything but a user message, and more than a message may hold."""
    if images and role != "user":
        raise StoreError(f"Only a user message holds images, not a {shorten(role)} message.")
    if len(images) > MAX_IMAGES_PER_MESSAGE:
        raise StoreError(f"A message holds up to {MAX_IMAGES_PER_MESSAGE} images, not {len(images)}.")


def store_images(conn: sqlite3.Connection, files: ImageFiles, message_id: int, images: Iterable[Image]) -> None:
    """Inside the caller's transaction: the images' files (those not there yet), then the rows
    that name them."""
    images = tuple(images)
    write_files(files, images)
    link(conn, message_id, [image.ref for image in images])


def write_files(files: ImageFiles, images: Iterable[Image]) -> None:
    """Write the files, inside the caller's transaction; a disk that refuses is a StoreError
    (the transaction then rolls back, and a file already written is swept later)."""
    for image in images:
        try:
            files.write(image)
        except OSError as exc:
            raise StoreError(f"The image {named(image.ref)} could not be saved in {files.folder}: "
                             f"{exc.strerror or exc}.") from exc


def link(conn: sqlite3.Connection, message_id: int, refs: Iterable[ImageRef]) -> None:
    conn.executemany(
        "INSERT INTO message_images (message_id, position, digest, media_type, width, height)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(message_id, position, ref.digest, ref.media_type, ref.width, ref.height)
         for position, ref in enumerate(refs)])


def copy_links(conn: sqlite3.Connection, source_id: int, target_id: int) -> None:
    """The images of message source_id, in order, for message target_id (a copy in a branch, a
    version that keeps them): the same files, named once more."""
    conn.execute("INSERT INTO message_images (message_id, position, digest, media_type, width, height)"
                 " SELECT ?, position, digest, media_type, width, height FROM message_images WHERE message_id = ?",
                 (target_id, source_id))


def sweep(conn: sqlite3.Connection, files: ImageFiles) -> int:
    """Unlink the files no row names (left by a crash, or by the last message that used them);
    returns how many. Under the write lock, so that no other connection is between writing a
    file and committing the row that names it."""
    with transaction(conn):
        named = conn.execute("SELECT DISTINCT digest, media_type FROM message_images")
        keep = {file_name(digest, media_type) for digest, media_type in named}
        return files.sweep(keep)


def read(conn: sqlite3.Connection, files: ImageFiles, ref: ImageRef) -> Image:
    """The image's bytes from its file, checked against its digest. A file that is gone,
    cannot be read or holds other bytes is MissingImage, naming the image and the conversation
    that holds it."""
    path = files.path(ref)
    try:
        data = files.read(ref, MAX_IMAGE_BYTES)
    except FileNotFoundError:
        problem = f"its file {path} is not there any more"
    except OSError as exc:
        problem = f"its file {path} cannot be read ({exc.strerror or exc})"
    else:
        if hashlib.sha256(data).hexdigest() == ref.digest:
            return Image(data, ref.media_type, ref.width, ref.height, ref.digest)
        problem = f"its file {path} no longer holds the image that was attached"
    raise MissingImage(f"The image {named(ref)} in {_holder(conn, ref.digest)} cannot be used: {problem}.")


def _holder(conn: sqlite3.Connection, digest: str) -> str:
    """Which conversation holds the image, in words: the latest one that does."""
    rows = conn.execute(
        "SELECT DISTINCT c.id, c.title, c.updated_at FROM message_images i JOIN messages m ON m.id = i.message_id"
        " JOIN conversations c ON c.id = m.conversation_id WHERE i.digest = ? ORDER BY c.updated_at DESC LIMIT 2",
        (digest,)).fetchall()
    if not rows:
        return "the conversation database"
    first = f"the conversation “{shorten(rows[0]['title'] or 'Untitled conversation')}”"
    return first + (" (and others)" if len(rows) > 1 else "")
