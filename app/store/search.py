"""Finding conversations by the words in their titles and messages.

With FTS5 the index uses external-content tables: the text is stored once (in conversations and
messages) and the index holds only tokens. Triggers keep it in step with every insert, update
and delete, including the cascade when the trash is purged. The index is derived data, so it
lives outside the versioned migrations: install() creates and back-fills it whenever it is
missing. Without FTS5 (or when turned off) the triggers are dropped, because writes would fail
on them, and search falls back to LIKE; a later start with FTS5 rebuilds the index.

A message is found by its text, and by its tools: the tool a result answers (tool_name) and
the names and arguments of the calls a reply made (tool_calls_text); a search's words may be
spread over them.
"""

from __future__ import annotations

import sqlite3

from app.common.sqlite_files import transaction

# index table -> (content table, indexed columns)
_INDEXES = {"conversation_fts": ("conversations", ("title",)),
            "message_fts": ("messages", ("content", "tool_name", "tool_calls_text"))}
_MESSAGE_COLUMNS = _INDEXES["message_fts"][1]
_TRIGGER_SUFFIXES = ("insert", "delete", "update")
# A search hit's snippet: about this many words around the match (FTS5), or characters (LIKE).
SNIPPET_WORDS = 10
SNIPPET_CHARS = 90


def fts5_available(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0])


def install(conn: sqlite3.Connection, wanted: bool = True) -> bool:
    """Make the full-text index ready if wanted and possible; True when search uses it."""
    existing = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    triggers = [f"{index}_{suffix}" for index in _INDEXES for suffix in _TRIGGER_SUFFIXES]
    if not (wanted and fts5_available(conn)):
        if existing.intersection(triggers):
            with transaction(conn):
                for trigger in triggers:
                    conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        return False
    stale = [index for index in _INDEXES
             if not existing.issuperset([index, *(f"{index}_{suffix}" for suffix in _TRIGGER_SUFFIXES)])]
    if stale:
        # An index with a trigger missing has missed writes, or was built for the table a
        # migration replaced (whose columns may differ): it is built again from its table.
        with transaction(conn):
            for index in stale:
                table, columns = _INDEXES[index]
                for statement in _index_ddl(index, table, columns):
                    conn.execute(statement)
                conn.execute(f"INSERT INTO {index} ({index}) VALUES ('rebuild')")
    return True


def _index_ddl(index: str, table: str, columns: tuple[str, ...]) -> list[str]:
    names = ", ".join(columns)
    remove = (f"INSERT INTO {index} ({index}, rowid, {names}) VALUES "
              f"('delete', old.id, {', '.join(f'old.{column}' for column in columns)});")
    add = f"INSERT INTO {index} (rowid, {names}) VALUES (new.id, {', '.join(f'new.{column}' for column in columns)});"
    return [
        *(f"DROP TRIGGER IF EXISTS {index}_{suffix}" for suffix in _TRIGGER_SUFFIXES),
        f"DROP TABLE IF EXISTS {index}",
        (f"CREATE VIRTUAL TABLE {index} USING fts5({names}, content='{table}', "
         f"content_rowid='id', tokenize='unicode61 remove_diacritics 2')"),
        f"CREATE TRIGGER {index}_insert AFTER INSERT ON {table} BEGIN {add} END",
        f"CREATE TRIGGER {index}_delete AFTER DELETE ON {table} BEGIN {remove} END",
        f"CREATE TRIGGER {index}_update AFTER UPDATE OF {names} ON {table} BEGIN {remove} {add} END",
    ]


def find(conn: sqlite3.Connection, words: list[str], full_text: bool) -> list[sqlite3.Row]:
    """Conversations not in the trash whose title, or any one message (any version, not a
    deleted one), has all the words.

    FTS matches words by prefix ("stream" finds "streaming"), ignoring case and accents; the
    LIKE fallback matches substrings, ignoring ASCII case only.
    """
    if full_text:
        params: dict[str, str] = {"query": _fts_query(words)}
        title_match = "c.id IN (SELECT rowid FROM conversation_fts WHERE conversation_fts MATCH :query)"
        message_match = (
            "c.id IN (SELECT m.conversation_id FROM message_fts JOIN messages m "
            "ON m.id = message_fts.rowid WHERE message_fts MATCH :query AND m.deleted_at IS NULL)"
        )
    else:
        params = {f"w{i}": "%" + _like_escape(word) + "%" for i, word in enumerate(words)}
        title_match = " AND ".join(f"c.title LIKE :{name} ESCAPE '\\'" for name in params)
        message_match = ("EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.deleted_at IS NULL"
                         f" AND {_like_all(params, 'm.')})")
    sql = (
        f"SELECT c.* FROM conversations c WHERE c.deleted_at IS NULL "
        f"AND (({title_match}) OR ({message_match})) ORDER BY c.updated_at DESC, c.id DESC"
    )
    return conn.execute(sql, params).fetchall()


def snippets(conn: sqlite3.Connection, words: list[str], full_text: bool, conversation_ids: list[int]) -> dict[int, str]:
    """For each of conversation_ids with a message that has all the words: the words around
    them in its newest such message, raw (the caller puts them on one line). Conversations
    found by their title alone have none."""
    found = {}
    for conversation_id, message_id in newest_hits(conn, words, full_text, conversation_ids).items():
        if full_text:
            row = conn.execute(
                f"SELECT snippet(message_fts, -1, '', '', '…', {SNIPPET_WORDS}) FROM message_fts "
                "WHERE message_fts MATCH ? AND rowid = ?", (_fts_query(words), message_id)).fetchone()
            if row is not None:
                found[conversation_id] = row[0]
        else:
            # A window of characters around the first word, read by SQLite: a message may be a
            # megabyte. Its text first, then its tools' names and arguments, as FTS reads them.
            row = conn.execute(
                f"SELECT instr(lower(text), lower(:first)) AS at, substr(text, max(1, instr(lower(text), "
                f"lower(:first)) - {SNIPPET_CHARS // 3}), {SNIPPET_CHARS}) AS around FROM (SELECT content"
                " || COALESCE(char(10) || NULLIF(tool_name, ''), '') || COALESCE(char(10) || NULLIF(tool_calls_text, ''), '')"
                " AS text FROM messages WHERE id = :id)",
                {"first": words[0], "id": message_id}).fetchone()
            found[conversation_id] = ("…" if row["at"] > SNIPPET_CHARS // 3 + 1 else "") + row["around"] + "…"
    return found


def newest_hits(conn: sqlite3.Connection, words: list[str], full_text: bool, conversation_ids: list[int]) -> dict[int, int]:
    """For each of conversation_ids: its newest message, in any version not deleted, that has
    all the words (where a search opens it), if one has."""
    if not conversation_ids:
        return {}
    wanted = set(conversation_ids)
    if full_text:
        rows = conn.execute(
            "SELECT m.conversation_id, MAX(m.id) FROM message_fts JOIN messages m ON m.id = message_fts.rowid "
            "WHERE message_fts MATCH ? AND m.deleted_at IS NULL GROUP BY m.conversation_id", (_fts_query(words),))
        return {conversation_id: message_id for conversation_id, message_id in rows if conversation_id in wanted}
    params = {f"w{i}": "%" + _like_escape(word) + "%" for i, word in enumerate(words)}
    matches = _like_all(params)
    found = {}
    for conversation_id in conversation_ids:
        row = conn.execute(
            f"SELECT MAX(id) FROM messages WHERE conversation_id = :conversation AND deleted_at IS NULL AND {matches}",
            params | {"conversation": conversation_id}).fetchone()
        if row[0] is not None:
            found[conversation_id] = row[0]
    return found


def _fts_query(words: list[str]) -> str:
    return " ".join(_fts_phrase(word) for word in words)


def _fts_phrase(word: str) -> str:
    """A user's word as a quoted FTS5 prefix phrase, so quotes, '-' or 'OR' are just text."""
    return '"' + word.replace('"', '""') + '"*'


def _like_all(params: dict[str, str], row: str = "") -> str:
    """SQL: each word (a LIKE pattern in params) is somewhere in the message's indexed text."""
    return " AND ".join("({})".format(" OR ".join(f"{row}{column} LIKE :{name} ESCAPE '\\'" for column in _MESSAGE_COLUMNS))
                        for name in params)


def _like_escape(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
