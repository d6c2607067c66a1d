import hashlib
import sqlite3
from contextlib import closing

import pytest

from app.store import ConversationStore, DatabaseDamaged, StoreError
from app.store.schema import MIGRATIONS, SCHEMA_VERSION, connect, migrate


def user_version(path):
    with closing(sqlite3.connect(path)) as raw:
        return raw.execute("PRAGMA user_version").fetchone()[0]


def test_new_database_is_at_the_current_version_in_wal_mode(store, db_path):
    assert SCHEMA_VERSION >= 1
    assert user_version(db_path) == SCHEMA_VERSION
    with closing(sqlite3.connect(db_path)) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_version_0_database_is_upgraded(db_path):
    db_path.touch()  # an empty file is an SQLite database at user_version 0
    assert user_version(db_path) == 0
    with ConversationStore(db_path) as store:
        cid = store.create_conversation(title="after upgrade")
        assert store.get_conversation(cid).title == "after upgrade"
    assert user_version(db_path) == SCHEMA_VERSION


def test_older_schema_gets_later_migrations_and_keeps_its_data(store, db_path):
    cid = store.create_conversation(title="old data")
    store.add_message(cid, "user", "kept")
    store.close()
    newer = MIGRATIONS + ("ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;",)
    with closing(connect(db_path)) as conn:
        migrate(conn, newer)
        assert [tuple(row) for row in conn.execute("SELECT title, pinned FROM conversations")] == [("old data", 0)]
        assert [tuple(row) for row in conn.execute("SELECT content FROM messages")] == [("kept",)]
    assert user_version(db_path) == SCHEMA_VERSION + 1


def test_failing_migration_leaves_the_previous_version_intact(store, db_path):
    store.close()
    broken = MIGRATIONS + ("CREATE TABLE half_done (x); INSERT INTO no_such_table VALUES (1);",)
    with closing(connect(db_path)) as conn:
        with pytest.raises(sqlite3.OperationalError):
            migrate(conn, broken)
        assert not conn.in_transaction
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in tables
    assert user_version(db_path) == SCHEMA_VERSION


def test_database_from_a_newer_hearth_is_refused_untouched(store, db_path):
    store.create_conversation(title="from the future")
    store.close()
    with closing(sqlite3.connect(db_path)) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    with pytest.raises(StoreError, match="newer version of Hearth"):
        ConversationStore(db_path)
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before
    assert user_version(db_path) == SCHEMA_VERSION + 1


def test_a_file_that_is_not_a_database_is_a_store_error(db_path):
    db_path.write_bytes(b"definitely not sqlite " * 100)
    with pytest.raises(DatabaseDamaged, match="conversations.sqlite3 is damaged"):
        ConversationStore(db_path)
    assert db_path.read_bytes() == b"definitely not sqlite " * 100
