"""A process killed between writing an image's file and committing the message that names it
leaves at worst a file no row names, never a row without its file; the next start sweeps the
file. Likewise a process killed mid-write (a temporary file), and one killed after emptying the
trash but before deleting the files. Real processes, SIGKILL, a real SQLite file."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from app.store import ConversationStore
from app.store.image_files import images_folder

REPO = Path(__file__).resolve().parents[2]

# The child stores a first message with an image, then dies at the named moment of the second.
CHILD = """
import io, os, signal, sys
from PIL import Image as PillowImage
from app.images.intake import read_image
from app.store import ConversationStore, image_files

def picture(color):
    buffer = io.BytesIO()
    PillowImage.new("RGB", (64, 48), color).save(buffer, "PNG")
    return read_image(buffer.getvalue())

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

store = ConversationStore(sys.argv[1])
cid = store.create_conversation(title="Crash")
store.add_message(cid, "user", "Kept", images=(picture("red"),))
moment = sys.argv[2]
if moment == "after the file":  # the file is whole and renamed; the message is not committed
    write = image_files.ImageFiles.write
    image_files.ImageFiles.write = lambda self, image: (write(self, image), die())
elif moment == "mid-write":  # the temporary file is written, not yet renamed
    image_files.os.replace = die
if moment == "after the purge":  # the rows are erased and committed; the files are not deleted
    image_files.ImageFiles.sweep = die
    store.delete(cid)
    store.purge_deleted()
store.add_message(cid, "user", "Lost", images=(picture("blue"),))
print("not killed")
"""


def run_child(db_path: Path, moment: str) -> None:
    child = subprocess.run([sys.executable, "-c", CHILD, str(db_path), moment], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr


def image_files_in(db_path: Path) -> list[str]:
    return sorted(path.name for path in images_folder(db_path).rglob("*") if path.is_file())


def message_rows(db_path: Path) -> list[tuple]:
    with closing(sqlite3.connect(db_path)) as raw:
        return raw.execute("SELECT m.content, i.digest FROM messages m LEFT JOIN message_images i"
                           " ON i.message_id = m.id ORDER BY m.id").fetchall()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
@pytest.mark.parametrize(("moment", "left"), [("after the file", ".png"), ("mid-write", ".partial")])
def test_a_kill_between_the_file_and_its_message_leaves_a_file_the_next_start_sweeps(db_path, moment, left):
    run_child(db_path, moment)
    ((content, kept),) = message_rows(db_path)  # the second message never reached the database
    assert content == "Kept"
    files = image_files_in(db_path)
    assert len(files) == 2 and f"{kept}.png" in files and any(name.endswith(left) for name in files if kept not in name)
    with ConversationStore(db_path) as store:
        (message,) = store.messages(store.list_conversations()[0].id)
        assert store.image(message.images[0]).digest == kept
    assert image_files_in(db_path) == [f"{kept}.png"]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_a_kill_after_emptying_the_trash_leaves_files_the_next_start_sweeps(db_path):
    run_child(db_path, "after the purge")
    assert message_rows(db_path) == []
    assert len(image_files_in(db_path)) == 1
    with ConversationStore(db_path) as store:
        assert store.list_conversations() == []
    assert image_files_in(db_path) == []
