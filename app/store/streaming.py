"""A reply while it streams: stored as 'streaming', its text replaced as it grows, closed once
with its statistics and status; one still 'streaming' when the store opens was cut off by a
crash, and is kept as far as it got, marked cancelled with the stop reason "interrupted".

A write to a reply that is no longer streaming is refused, so that a late save cannot
overwrite a finished reply.
"""

from __future__ import annotations

import json
import sqlite3

from app.common.sqlite_files import transaction
from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store.records import STATUSES, StoreError, calls_search_text, calls_to_json, require_choice, utc_now


def save_partial(conn: sqlite3.Connection, message_id: int, content: str) -> None:
    """One UPDATE, one small commit."""
    cursor = conn.execute(
        "UPDATE messages SET content = ?, updated_at = ? WHERE id = ? AND status = 'streaming'",
        (content, utc_now(), message_id),
    )
    if cursor.rowcount == 0:
        raise StoreError(f"Message {message_id} is not a streaming reply.")


def finish(conn: sqlite3.Connection, message_id: int, content: str, stats: ReplyStats | None,
           status: ReplyStatus, tool_calls: tuple[ToolCall, ...] = ()) -> None:
    """The final text, the stats, the status and the tool calls the reply ended with, and the
    conversation's last activity. Only a reply (role "assistant") makes calls."""
    require_choice("status", status, tuple(s for s in STATUSES if s != "streaming"))
    now = utc_now()
    with transaction(conn):
        cursor = conn.execute(
            "UPDATE messages SET content = ?, stats_json = ?, status = ?, updated_at = ?, tool_calls_json = ?,"
            " tool_calls_text = ? WHERE id = ? AND status = 'streaming' AND (role = 'assistant' OR ?)",
            (content, json.dumps(stats.to_dict() if stats else {}), str(status), now, calls_to_json(tool_calls),
             calls_search_text(tool_calls), message_id, not tool_calls),
        )
        if cursor.rowcount == 0:
            raise StoreError(f"Message {message_id} is not a streaming reply.")
        conn.execute(
            "UPDATE conversations SET updated_at = ? WHERE id = (SELECT conversation_id FROM messages WHERE id = ?)",
            (now, message_id),
        )


def recover_interrupted(conn: sqlite3.Connection) -> None:
    """Replies still 'streaming' at open were cut off by a crash: keep their text, mark them."""
    rows = conn.execute("SELECT id, stats_json FROM messages WHERE status = 'streaming'").fetchall()
    if not rows:
        return
    with transaction(conn):
        for row in rows:
            stats = {**json.loads(row["stats_json"]), "stop_reason": StopReason.INTERRUPTED.value}
            conn.execute(
                "UPDATE messages SET status = 'cancelled', stats_json = ? WHERE id = ?",
                (json.dumps(stats), row["id"]),
            )
