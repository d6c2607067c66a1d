"""The SQL that reads a conversation's tree of message versions.

A message's parent is the one it follows; its siblings are its versions; `position` is its
depth. These are the walks the store makes over that tree: a message with its place among its
versions, the branch up from a leaf, the live subtree below a message, and the branch below a
message that was seen last. Shared by ConversationStore and the importer.
"""

from __future__ import annotations

import sqlite3

# A message as StoredMessage reads it: its row, and its place among its versions (siblings).
MESSAGE = """SELECT m.*,
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
