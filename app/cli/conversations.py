"""`hearth conversations list | export | import`: the stored conversations, for scripts and backups.

They use the same data folder as the window (HEARTH_HOME, else the user's), and may run while
the window does. The one thing they must not do then is what opening the database does first:
take every reply still 'streaming' for one cut off by a crash and mark it interrupted. While
Hearth runs, such a reply is the one its window is writing. So:

- `list` and `export` read without that recovery while the data folder is in use (when it is
  not, a 'streaming' reply was cut off, and they find it interrupted as the window would);
- `import` adds its conversation in one transaction on a connection of its own, which never
  recovers anything: the very call the window's File → Import makes on a worker thread beside
  a streaming reply. It does not conflict, and runs while Hearth runs (its list shows the new
  conversation when it is next refreshed);
- `hearth chat --conversation` (app/cli/conversation_chat.py) writes a reply of its own, so it
  refuses while the data folder is in use, and holds it for as long as it runs.

"In use" is the lock file the window holds (app/ui/app/single_instance.py), tested with QLockFile
itself rather than by reading the PID in it: QLockFile's own rule (taken while its process, the
same program, is alive) is the one the window applies, so the two always agree, a lock left by
a killed process counts as free, and a PID reused by another program is not mistaken for Hearth.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import QLockFile

from ..common.text import printable, shorten
from ..owners import paths
from ..store import Conversation, ConversationStore, StoreError, import_file

IN_USE_MESSAGE = "Hearth is running with this data folder ({folder}{holder}); close it first"
TITLE_SHOWN = 60
MODEL_SHOWN = 40


def add_conversations_parser(subparsers) -> None:
    conversations = subparsers.add_parser(
        "conversations", help="list, export and import the conversations Hearth keeps (HEARTH_HOME or your profile)")
    actions = conversations.add_subparsers(dest="action", required=True, metavar="{list,export,import}")

    listing = actions.add_parser("list", help="the conversations, most recently active first")
    listing.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    listing.set_defaults(run=run_list)

    export = actions.add_parser("export", help="write one conversation as JSON (every version) or Markdown")
    export.add_argument("id", type=int, help="the conversation's id (from `hearth conversations list`)")
    export.add_argument("--format", choices=["json", "md"], default="json",
                        help="json: the whole tree, for backups and import (default); md: the branch shown, to read")
    export.add_argument("--out", type=Path, metavar="FILE", help="write to FILE instead of standard output")
    export.set_defaults(run=run_export)

    importing = actions.add_parser("import", help="add an exported JSON conversation; prints its new id")
    importing.add_argument("file", type=Path)
    importing.set_defaults(run=run_import)


# --- the data folder's lock ---------------------------------------------------------------------


def _lock() -> QLockFile:
    lock = QLockFile(str(paths.data_dir() / paths.INSTANCE_LOCK_FILE))
    lock.setStaleLockTime(0)  # as the window's: stale only when its process is gone
    return lock


def data_folder_in_use() -> bool:
    """Whether a running Hearth (or a `hearth chat --conversation`) holds the data folder: the
    lock is tried and, if taken, let go at once."""
    lock = _lock()
    if not lock.tryLock(0):
        return True
    lock.unlock()
    return False


@contextmanager
def holding_data_folder(remedy: str) -> Iterator[None]:
    """Hold the data folder as a running Hearth does, so that neither the window nor another
    command opens the database meanwhile (a window started now says Hearth is running). Raises
    StoreError while someone else holds it: IN_USE_MESSAGE, then `remedy` (", or …")."""
    lock = _lock()
    if not lock.tryLock(0):
        pid = lock.getLockInfo()[0]  # 0 when the lock file cannot be read
        holder = f", process {pid}" if pid else ""
        raise StoreError(IN_USE_MESSAGE.format(folder=paths.data_dir(), holder=holder) + f"{remedy}.")
    try:
        yield
    finally:
        lock.unlock()


def open_to_read() -> ConversationStore:
    """The conversation database, for list and export: with crash recovery only when nobody
    holds the data folder (then a 'streaming' reply was cut off, and is found interrupted, as
    the window would find it)."""
    return ConversationStore(paths.database_path(), recover=not data_folder_in_use())


def conversation(store: ConversationStore, conversation_id: int) -> Conversation:
    """The conversation; one in the trash is no more there for the command line than in the list."""
    found = store.get_conversation(conversation_id)
    if found.deleted_at is not None:
        raise StoreError(f"There is no conversation {conversation_id} (it is in the trash).")
    return found


# --- the commands -------------------------------------------------------------------------------


def run_list(args) -> int:
    """A table (id, last activity in UTC, messages on the branch shown, model, title), or with
    --json one array of {"id", "title", "created_at", "updated_at", "messages", "model"}."""
    with open_to_read() as store:
        rows = [(c, _branch_length(store, c.id)) for c in store.list_conversations()]
    if args.json:
        listed = [{"id": c.id, "title": c.title, "created_at": c.created_at, "updated_at": c.updated_at,
                   "messages": count, "model": c.model} for c, count in rows]
        _write(json.dumps(listed, ensure_ascii=False, indent=2) + "\n")
        return 0
    if not rows:
        print(f"hearth: no conversations in {paths.database_path()}", file=sys.stderr)
        return 0
    models = [printable(c.model or "-", limit=MODEL_SHOWN) for c, _ in rows]
    ids = max(len("ID"), *(len(str(c.id)) for c, _ in rows))
    width = max(len("MODEL"), *map(len, models))
    lines = [f"{'ID':>{ids}}  {'UPDATED (UTC)':16}  {'MESSAGES':>8}  {'MODEL':{width}}  TITLE"]
    for (c, count), model in zip(rows, models):
        updated, title = c.updated_at[:16].replace("T", " "), shorten(c.title, TITLE_SHOWN) or "(untitled)"
        lines.append(f"{c.id:>{ids}}  {updated:16}  {count:>8}  {model:{width}}  {title}")
    _write("\n".join(lines) + "\n")
    return 0


def _branch_length(store: ConversationStore, conversation_id: int) -> int:
    """Messages on the branch shown (what the window shows and Markdown exports), from its
    last message's depth: other versions are not counted."""
    leaf = store.leaf_message(conversation_id)
    return leaf.position + 1 if leaf is not None else 0


def run_export(args) -> int:
    with open_to_read() as store:
        conversation(store, args.id)
        if args.format == "md":
            text = store.export_markdown(args.id)
        else:  # as the window's File → Export writes it
            text = json.dumps(store.export_json(args.id), ensure_ascii=False, indent=2) + "\n"
    if args.out is None:
        _write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
    return 0


def run_import(args) -> int:
    """All or nothing (app.store.import_file); the new conversation's id on stdout."""
    conversation_id = import_file(paths.database_path(), args.file)
    print(conversation_id, flush=True)
    if data_folder_in_use():
        print("hearth: Hearth is running: its list shows the imported conversation when next refreshed "
              "(a search, or another conversation started).", file=sys.stderr)
    return 0


def _write(text: str) -> None:
    """UTF-8 whatever the locale says: titles and replies are in every language."""
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.flush()
