"""The v1 database builder writes what Hearth's schema-version-1 store wrote, so the v1 -> v2
migration is tested on real v1 files: the released schema, a full-text index in step with the
rows, positions as v1 kept them, and every hard case the migration must carry over."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
import tarfile
from contextlib import closing
from pathlib import Path

import pytest
from support.v1_database import (
    ODD_TITLES,
    RELEASED_COMMIT,
    STATS_KEYS,
    STOP_REASONS,
    V1_SCHEMA,
    build_v1_database,
    main,
    read_v1,
)

from app.store.schema import MIGRATIONS

REPO = Path(__file__).resolve().parents[2]
BUILDER = Path(__file__).parents[1] / "support" / "v1_database.py"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One default-sized database (about 3,000 messages) for the read-only tests."""
    return build_v1_database(tmp_path_factory.mktemp("v1") / "conversations.sqlite3")


def schema_of(conn: sqlite3.Connection, names: set[str] | None = None) -> list[tuple]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
    return [row for row in rows if names is None or row[1] in names]


def messages_of(summary) -> list[dict]:
    return [message for conversation in summary.conversations for message in conversation.messages]


def test_schema_is_the_released_migration_0(built):
    """MIGRATIONS[0] is never edited once released, so the store's own copy must still be the
    text frozen here; and the built file holds exactly what running it creates."""
    assert V1_SCHEMA == MIGRATIONS[0]
    with closing(sqlite3.connect(":memory:")) as fresh, closing(sqlite3.connect(built.path)) as conn:
        fresh.executescript(MIGRATIONS[0])
        expected = schema_of(fresh)
        assert schema_of(conn, {row[1] for row in expected}) == expected
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_full_text_index_is_installed_and_in_step_with_the_rows(built):
    """Edits, partial saves and truncations all went through the triggers: the index agrees
    with the content, as v1's search found it."""
    with closing(sqlite3.connect(built.path)) as conn:
        names = {row[1] for row in schema_of(conn)}
        assert {f"{index}_{suffix}" for index in ("conversation_fts", "message_fts")
                for suffix in ("insert", "delete", "update")} <= names
        conn.execute("INSERT INTO message_fts (message_fts, rank) VALUES ('integrity-check', 1)")
        conn.execute("INSERT INTO conversation_fts (conversation_fts, rank) VALUES ('integrity-check', 1)")
        for word in ("lighthouse", "zurich", "edited"):  # remove_diacritics: "zurich" finds "Zürich"
            found = conn.execute("SELECT rowid FROM message_fts WHERE message_fts MATCH ? ORDER BY rowid", (word,))
            spelled = {"zurich": "zürich"}.get(word, word)
            scanned = conn.execute("SELECT id FROM messages WHERE content LIKE ? ORDER BY id", (f"%{spelled}%",))
            assert found.fetchall() == scanned.fetchall() != []
        titled = conn.execute("SELECT rowid FROM conversation_fts WHERE conversation_fts MATCH 'Ångström'").fetchall()
        assert titled == conn.execute("SELECT id FROM conversations WHERE title LIKE '%Ångström%'").fetchall() != []


def test_summary_is_every_row_and_positions_run_from_0(built):
    with closing(sqlite3.connect(built.path)) as conn:
        assert read_v1(conn) == built.conversations
    assert len(built.conversations) == 60
    assert 2_500 <= built.message_count <= 3_500
    for conversation in built.conversations:
        positions = [message["position"] for message in conversation.messages]
        assert positions == list(range(len(positions)))
        assert {message["conversation_id"] for message in conversation.messages} <= {conversation.row["id"]}


def test_every_status_ending_and_statistic_is_present(built):
    messages = messages_of(built)
    assert {m["status"] for m in messages} == {"complete", "streaming", "cancelled", "error"}
    assert [m["id"] for m in messages if m["status"] == "streaming"] == [built.streaming_message_id]
    stats = {m["id"]: json.loads(m["stats_json"]) for m in messages}
    assert stats[built.interrupted_message_id]["stop_reason"] == "interrupted"
    assert stats[built.null_stop_reason_message_id]["stop_reason"] is None
    finished = [s for s in stats.values() if len(s) > 1]
    assert all(tuple(s) == STATS_KEYS for s in finished)  # ReplyStats.to_dict()'s keys, in its order
    assert [s for s in stats.values() if len(s) == 1] == [{"stop_reason": "interrupted"}]  # recovered
    assert {s["stop_reason"] for s in stats.values() if s} == {*STOP_REASONS, None}
    assert any(s["dropped_messages"] > 0 for s in finished)
    assert any(s["completion_tokens"] is None and s["error"] for s in finished)  # ReplyStats.failed
    assert all(m["stats_json"] == "{}" and m["params_json"] == "{}" for m in messages if m["role"] == "user")
    params = [json.loads(m["params_json"]) for m in messages if m["role"] == "assistant"]
    assert any(p["stop"] for p in params) and any(p["logit_bias"] for p in params)
    assert any(p["seed"] is None for p in params) and any(p["seed"] is not None for p in params)


def test_models_prompts_titles_and_the_trash(built):
    rows = [conversation.row for conversation in built.conversations]
    messages = messages_of(built)
    assert len({m["model"] for m in messages if m["role"] == "assistant"}) >= 4
    assert any(m["role"] == "system" for m in messages)
    assert len({row["system_prompt"] for row in rows}) >= 3
    titles = [row["title"] for row in rows]
    assert set(ODD_TITLES) <= set(titles)
    assert any(title.endswith("…") for title in titles)  # auto_title cut a long first message
    assert {row["id"] for row in rows if row["deleted_at"]} == set(built.trashed_conversation_ids)
    assert len(built.trashed_conversation_ids) == 2
    empty = built.conversation(built.empty_conversation_id)
    assert empty.messages == () and empty.row["title"] == "" and empty.row["model"] is None
    assert len(next(m for m in messages if m["id"] == built.huge_message_id)["content"]) == 200_000


def test_edit_and_regenerate_reused_positions(built):
    """v1's Edit deleted every message after the edited one; the reply written next took the
    freed position."""
    messages = built.conversation(built.edited_conversation_id).messages
    edited = next(m for m in messages if m["content"].startswith("Edited: "))
    after = messages[edited["position"] + 1]
    assert edited["created_at"] < edited["updated_at"] < after["created_at"]


def test_same_seed_builds_the_same_database(tmp_path):
    first = build_v1_database(tmp_path / "a.sqlite3", messages=300)
    again = build_v1_database(tmp_path / "b.sqlite3", messages=300)
    other = build_v1_database(tmp_path / "c.sqlite3", messages=300, seed=1)
    assert again.conversations == first.conversations and again.huge_message_id == first.huge_message_id
    assert other.conversations != first.conversations


def test_never_builds_over_an_existing_file(tmp_path):
    path = tmp_path / "mine.sqlite3"
    path.write_bytes(b"precious")
    with pytest.raises(FileExistsError):
        build_v1_database(path)
    assert path.read_bytes() == b"precious"


def test_script_builds_a_database(tmp_path, capsys):
    out = tmp_path / "bench.sqlite3"
    assert main([str(out), "--messages", "500"]) == 0
    assert "messages" in capsys.readouterr().out
    with closing(sqlite3.connect(out)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert 400 <= conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] <= 600


def _released_tree(into: Path) -> Path | None:
    """df0482f's app/ extracted under into, or None where this clone lacks that commit."""
    try:
        archive = subprocess.run(["git", "archive", "--format=tar", RELEASED_COMMIT, "app"], cwd=REPO,
                                 capture_output=True, timeout=60)
    except OSError:
        return None
    if archive.returncode != 0:
        return None
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def _timeline(conn: sqlite3.Connection) -> list[tuple]:
    """Every timestamp replaced by its rank among them all: the two files' clocks differ, but
    each store call must stamp the same rows at the same moment, in the same order."""
    stamps = [(f"c{row[0]}", *row[1:]) for row in conn.execute(
        "SELECT id, created_at, updated_at, deleted_at FROM conversations ORDER BY id")]
    stamps += [(f"m{row[0]}", *row[1:], None) for row in conn.execute(
        "SELECT id, created_at, updated_at FROM messages ORDER BY id")]
    ranks = {stamp: rank for rank, stamp in enumerate(sorted({s for row in stamps for s in row[1:] if s}))}
    return [(row[0], *(ranks.get(stamp) for stamp in row[1:])) for row in stamps]


def test_builder_writes_what_the_released_store_wrote(tmp_path):
    """The same history through df0482f's own ConversationStore (in a process of its own) and
    through the frozen copy: the same schema and rows, timestamps apart from their values."""
    tree = _released_tree(tmp_path / "released")
    if tree is None:
        pytest.skip(f"this clone has no commit {RELEASED_COMMIT}")
    released = tmp_path / "released.sqlite3"
    subprocess.run([sys.executable, str(BUILDER), str(released), "--messages", "400", "--released-app", str(tree)],
                   cwd=tmp_path, check=True, capture_output=True, timeout=120)
    frozen = build_v1_database(tmp_path / "frozen.sqlite3", messages=400)
    columns = ("SELECT id, title, model, system_prompt, deleted_at IS NULL FROM conversations ORDER BY id",
               "SELECT id, conversation_id, position, role, content, model, params_json, stats_json, status"
               " FROM messages ORDER BY id")
    with closing(sqlite3.connect(released)) as theirs, closing(sqlite3.connect(frozen.path)) as ours:
        assert schema_of(ours) == schema_of(theirs)
        for query in columns:
            assert ours.execute(query).fetchall() == theirs.execute(query).fetchall()
        assert _timeline(ours) == _timeline(theirs)
