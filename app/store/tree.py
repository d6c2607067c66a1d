"""A conversation's tree of message versions: the SQL that walks it, and the branch shown.

A message's parent is the one it follows; its siblings are its versions; `position` is its
depth. These are the walks the store makes over that tree: a message with its place among its
versions, the branch up from a leaf (and its copy into another conversation), the live subtree
below a message, the whole live tree, and the branch below a message that was seen last; the
reply a tool result answers; and the leaf that ends the branch shown. Shared by
ConversationStore and the importer.
"""

from __future__ import annotations

import sqlite3

from app.store.image_links import IMAGES_COLUMN, copy_links
from app.store.records import StoredMessage, StoreError, utc_now

# A message as StoredMessage reads it: its row, its images, and its place among its versions (siblings).
MESSAGE = f"""SELECT m.*, {IMAGES_COLUMN},
    (SELECT COUNT(*) FROM messages s WHERE s.parent_id IS m.parent_id AND s.conversation_id = m.conversation_id
        AND s.deleted_at IS NULL) AS versions,
    (SELECT COUNT(*) FROM messages s WHERE s.parent_id IS m.parent_id AND s.conversation_id = m.conversation_id
        AND s.deleted_at IS NULL AND s.id <= m.id) AS version
    FROM messages m"""
# The ids of the branch ending at :leaf, walking up no further than position :lowest.
BRANCH = """WITH RECURSIVE branch(id, position) AS (
    SELECT id, position FROM messages WHERE id = :leaf
    UNION ALL
    SELECT m.parent_id, m.position - 1 FROM messages m JOIN branch b ON m.id = b.id
    WHERE m.parent_id IS NOT NULL AND b.position > :lowest)"""
# The ids of :top and every live message below it, for "id IN" (a statement that begins with
# WITH has no rowcount in sqlite3).
SUBTREE = """(WITH RECURSIVE subtree(id) AS (
    SELECT :top
    UNION ALL
    SELECT m.id FROM messages m JOIN subtree s ON m.parent_id = s.id WHERE m.deleted_at IS NULL)
    SELECT id FROM subtree)"""


def last_seen_leaf(conn: sqlite3.Connection, message_id: int) -> int:
    """The end of the branch below message_id (itself included) that was seen last; among
    branches never seen, the newest."""
    return conn.execute(
        f"SELECT id FROM messages m WHERE id IN {SUBTREE}"
        " AND NOT EXISTS (SELECT 1 FROM messages c WHERE c.parent_id = m.id AND c.deleted_at IS NULL)"
        " ORDER BY viewed_at DESC, id DESC LIMIT 1", {"top": message_id}).fetchone()[0]


def shown_leaf(conn: sqlite3.Connection, conversation_id: int) -> tuple[int, int] | None:
    """(id, position) of the message ending the branch shown, None for an empty conversation.
    A conversation whose leaf was lost (a database edited by hand) shows its newest branch."""
    conversation = conn.execute("SELECT leaf_id FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
    if conversation is None:
        raise StoreError(f"There is no conversation {conversation_id}.")
    row = conn.execute(
        "SELECT id, position FROM messages WHERE id = ? AND conversation_id = ? AND deleted_at IS NULL",
        (conversation["leaf_id"], conversation_id)).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT id, position FROM messages m WHERE conversation_id = ? AND deleted_at IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM messages c WHERE c.parent_id = m.id AND c.deleted_at IS NULL)"
            " ORDER BY viewed_at DESC, id DESC LIMIT 1", (conversation_id,)).fetchone()
    return (row["id"], row["position"]) if row else None


def branch_messages(conn: sqlite3.Connection, leaf: tuple[int, int], lowest: int, below: int) -> list[StoredMessage]:
    """The messages of the branch ending at leaf with lowest <= position < below: a walk up
    from the leaf, which stops at `lowest`."""
    rows = conn.execute(
        f"{BRANCH} {MESSAGE} JOIN branch USING (id) WHERE m.position < :below ORDER BY m.position",
        {"leaf": leaf[0], "lowest": lowest, "below": below},
    )
    return [StoredMessage.from_row(row) for row in rows]


def live_tree(conn: sqlite3.Connection, conversation_id: int) -> list[StoredMessage]:
    """Every live message of the conversation, parents before children (by depth, then id).
    Window functions number the versions in one pass: MESSAGE counts siblings per row, which a
    hundred thousand versions of one message would make quadratic."""
    return [StoredMessage.from_row(row) for row in conn.execute(
        f"SELECT m.*, {IMAGES_COLUMN}, ROW_NUMBER() OVER siblings AS version,"
        " COUNT(*) OVER (PARTITION BY parent_id) AS versions"
        " FROM messages m WHERE conversation_id = ? AND deleted_at IS NULL"
        " WINDOW siblings AS (PARTITION BY parent_id ORDER BY id) ORDER BY position, id",
        (conversation_id,))]


def set_leaf(conn: sqlite3.Connection, conversation_id: int, leaf_id: int | None) -> None:
    """Make leaf_id end the branch shown, and remember when it was seen."""
    conn.execute("UPDATE conversations SET leaf_id = ? WHERE id = ?", (leaf_id, conversation_id))
    if leaf_id is not None:
        conn.execute("UPDATE messages SET viewed_at = ? WHERE id = ?", (utc_now(), leaf_id))


def copy_branch(conn: sqlite3.Connection, message_id: int, conversation_id: int) -> int:
    """Copy the branch ending at message_id into conversation_id, images included (the same
    files, named once more), each copy marked seen now; returns the copy of message_id."""
    now = utc_now()
    parent = None
    for row in conn.execute(
        f"{BRANCH} SELECT m.* FROM messages m JOIN branch USING (id) ORDER BY m.position",
        {"leaf": message_id, "lowest": 0},
    ).fetchall():
        parent = conn.execute(
            "INSERT INTO messages (conversation_id, parent_id, position, role, content, model, params_json,"
            " stats_json, status, created_at, updated_at, viewed_at, tool_calls_json, tool_calls_text,"
            " tool_call_id, tool_name, tool_error, sources_json)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (conversation_id, parent, row["position"], row["role"], row["content"], row["model"],
             row["params_json"], row["stats_json"], row["status"], row["created_at"], row["updated_at"], now,
             row["tool_calls_json"], row["tool_calls_text"], row["tool_call_id"], row["tool_name"],
             row["tool_error"], row["sources_json"]),
        ).lastrowid
        copy_links(conn, row["id"], parent)
    return parent


def answered_reply(conn: sqlite3.Connection, message_id: int) -> StoredMessage | None:
    """The message whose tool calls a result added below message_id answers: message_id itself,
    or above the results already there (a reply's calls are answered one result after another),
    the first message that is not a tool result. None for an empty branch."""
    row = conn.execute(
        f"""WITH RECURSIVE up(id, role, parent_id) AS (
            SELECT id, role, parent_id FROM messages WHERE id = :start
            UNION ALL
            SELECT m.id, m.role, m.parent_id FROM messages m JOIN up ON m.id = up.parent_id WHERE up.role = 'tool')
        {MESSAGE} WHERE m.id = (SELECT id FROM up WHERE role != 'tool')""", {"start": message_id}).fetchone()
    return StoredMessage.from_row(row) if row is not None else None
