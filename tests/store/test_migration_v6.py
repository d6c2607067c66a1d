"""Schema 5 -> 6 (images): a version-5 database, written by the released migrations and the rows
version 5 wrote, opens after the upgrade with every row as it was and takes images; an upgrade
that fails leaves version 5 whole; a version-5 Hearth refuses the upgraded file; the table
refuses what would make a file name outside the images folder."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from app.store import ConversationStore, StoreError
from app.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate

V5_MIGRATIONS = MIGRATIONS[:5]
TS = "2025-06-01T10:00:00.000000+00:00"


@pytest.fixture
def v5(db_path):
    """A version-5 database: a conversation with a question asked of documents, a reply and a
    deleted version, and one in the trash."""
    with closing(sqlite3.connect(db_path, isolation_level=None)) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, V5_MIGRATIONS)
        conn.executescript(f"""
            BEGIN;
            INSERT INTO conversations (id, title, created_at, updated_at, model, collections_json, leaf_id)
                VALUES (1, 'Garden', '{TS}', '{TS}', 'tiny.gguf', '["notes"]', 2);
            INSERT INTO conversations (id, title, created_at, updated_at, deleted_at) VALUES (2, 'Old', '{TS}', '{TS}', '{TS}');
            INSERT INTO messages (id, conversation_id, parent_id, position, role, content, created_at, updated_at,
                                  viewed_at, sources_json)
                VALUES (1, 1, NULL, 0, 'user', 'When to prune?', '{TS}', '{TS}', '{TS}',
                        '[{{"path": "/n.md", "page": null, "heading": "", "text": "Late winter."}}]');
            INSERT INTO messages (id, conversation_id, parent_id, position, role, content, created_at, updated_at,
                                  viewed_at) VALUES (2, 1, 1, 1, 'assistant', 'Late winter [1].', '{TS}', '{TS}', '{TS}');
            INSERT INTO messages (id, conversation_id, parent_id, position, role, content, created_at, updated_at,
                                  viewed_at, deleted_at) VALUES (3, 1, 1, 1, 'assistant', 'Spring.', '{TS}', '{TS}', '{TS}', '{TS}');
            INSERT INTO messages (id, conversation_id, parent_id, position, role, content, created_at, updated_at,
                                  viewed_at) VALUES (4, 2, NULL, 0, 'user', 'Trash', '{TS}', '{TS}', '{TS}');
            COMMIT;
        """)
    return db_path


def rows(path) -> dict[str, list[tuple]]:
    with closing(sqlite3.connect(path)) as conn:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
                for table in ("conversations", "messages")}


def user_version(path) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def test_every_row_survives_and_the_upgraded_file_takes_images(v5, picture):
    before = rows(v5)
    assert user_version(v5) == 5
    with ConversationStore(v5) as store:
        question, reply = store.messages(1)
        assert (question.sources[0].text, question.images, reply.content) == ("Late winter.", (), "Late winter [1].")
        red = picture("red")
        edited = store.add_version(question.id, "When to prune roses?", images=(red,))
        assert store.message(edited).images == (red.ref,) and store.image(red.ref) == red
    after = rows(v5)
    assert after["conversations"][1:] == before["conversations"][1:] and after["messages"][:4] == before["messages"]
    assert user_version(v5) == SCHEMA_VERSION == 6
    with closing(sqlite3.connect(v5)) as conn:
        assert conn.execute("SELECT message_id, position, width, height FROM message_images").fetchall() == [(5, 0, 64, 48)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_an_upgrade_that_fails_at_its_last_statement_changes_nothing(v5):
    before = rows(v5)
    with closing(sqlite3.connect(v5, isolation_level=None)) as conn, pytest.raises(sqlite3.OperationalError):
        migrate(conn, (*V5_MIGRATIONS, MIGRATIONS[5] + "\nSELECT no_such_function();"))
    assert user_version(v5) == 5 and rows(v5) == before
    with closing(sqlite3.connect(v5)) as conn:
        assert "message_images" not in {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}


def test_a_version_5_hearth_refuses_the_upgraded_file(v5):
    with ConversationStore(v5):
        pass
    with closing(sqlite3.connect(v5, isolation_level=None)) as conn, pytest.raises(StoreError, match="newer"):
        migrate(conn, V5_MIGRATIONS)


@pytest.mark.parametrize(("digest", "media_type", "width"), [
    ("../" * 21 + "x", "image/png", 1),  # 64 characters that would climb out of the folder
    ("A" * 64, "image/png", 1),  # not lowercase hex
    ("a" * 63, "image/png", 1),
    ("a" * 64, "image/gif", 1),
    ("a" * 64, "image/png", 0),
    ("a" * 64, "image/png", "wide"),
])
def test_the_table_refuses_what_is_not_an_image_reference(store, digest, media_type, width):
    cid = store.create_conversation()
    message_id = store.add_message(cid, "user", "hi")
    with pytest.raises(sqlite3.IntegrityError):
        store._conn.execute("INSERT INTO message_images VALUES (?, 0, ?, ?, ?, 1)", (message_id, digest, media_type, width))
