"""Storing an exported conversation: the whole tree in one transaction, or nothing.

ConversationStore.import_json uses it on the GUI thread's connection; import_file on a
worker thread's own connection, so that a large file never freezes the window.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from app.common.sqlite_files import transaction
from app.images.image import Image
from app.store import exchange, image_links
from app.store.image_files import ImageFiles, images_folder
from app.store.records import utc_now
from app.store.schema import connect, database_error
from app.store.tree import last_seen_leaf


def import_file(database: str | os.PathLike, file: Path) -> int:
    """Import an export file into the database at `database`; returns the new conversation's id.

    For a worker thread, so that reading, checking and storing a large file never freezes the
    window: the connection is its own (ConversationStore's belongs to the GUI thread), and WAL
    lets the window keep reading meanwhile. All or nothing: every failure is a StoreError and
    adds nothing.
    """
    parsed = exchange.parse(exchange.read_export(Path(file)))
    conn = connect(database)
    try:
        return insert_import(conn, ImageFiles(images_folder(database)), *parsed)
    except sqlite3.DatabaseError as exc:
        raise database_error(database, exc) from exc
    finally:
        conn.close()


def insert_import(conn: sqlite3.Connection, files: ImageFiles, conversation: dict, messages: list[dict],
                  images: dict[str, Image]) -> int:
    """One transaction: the conversation and all its messages (each under its "parent", an
    index into messages, each naming its images by digest), or nothing. The images' files are
    written first, inside it: those its messages name. The branch shown is the one through
    "current"."""
    now = utc_now()
    with transaction(conn):
        named = {digest for message in messages for digest in message["images"]}
        image_links.write_files(files, (image for digest, image in images.items() if digest in named))
        conversation_id = conn.execute(
            "INSERT INTO conversations (title, model, system_prompt, created_at, updated_at)"
            " VALUES (:title, :model, :system_prompt, :created_at, :updated_at)",
            conversation,
        ).lastrowid
        ids: list[int] = []
        positions: list[int] = []
        for message in messages:
            parent = message["parent"]
            positions.append(0 if parent is None else positions[parent] + 1)
            ids.append(conn.execute(
                "INSERT INTO messages (conversation_id, parent_id, position, role, content, model, params_json,"
                " stats_json, status, created_at, updated_at, viewed_at, tool_calls_json, tool_calls_text,"
                " tool_call_id, tool_name, tool_error, sources_json) VALUES (:conversation_id, :parent_id, :position,"
                " :role, :content, :model, :params_json, :stats_json, :status, :created_at, :updated_at, :viewed_at,"
                " :tool_calls_json, :tool_calls_text, :tool_call_id, :tool_name, :tool_error, :sources_json)",
                {**message, "conversation_id": conversation_id, "position": positions[-1], "viewed_at": now,
                 "parent_id": None if parent is None else ids[parent]},
            ).lastrowid)
            image_links.link(conn, ids[-1], [images[digest].ref for digest in message["images"]])
        current = conversation["current"]
        if current is not None:
            conn.execute("UPDATE conversations SET leaf_id = ? WHERE id = ?",
                         (last_seen_leaf(conn, ids[current]), conversation_id))
    return conversation_id
