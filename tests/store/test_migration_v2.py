"""Schema 1 -> 2 (every version of a message): a user's database opens after the upgrade with
nothing lost, each conversation one branch; an upgrade that is cut off leaves version 1 as it
was. The version-1 files are built by tests/support/v1_database.py, a frozen copy of what the
released store wrote (cross-checked against it), with a few thousand messages."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing

import pytest
from support.v1_database import build_v1_database, read_v1

from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store import ConversationStore, StoreError
from app.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate

# Every column version 1 had; version 2 keeps them all and adds the tree's.
CONVERSATION_COLUMNS = ("id", "title", "created_at", "updated_at", "model", "system_prompt", "deleted_at")
MESSAGE_COLUMNS = ("id", "conversation_id", "role", "content", "model", "params_json", "stats_json", "status",
                   "created_at", "updated_at")


@pytest.fixture(scope="module")
def v1(tmp_path_factory):
    """A version-1 database of about 3,000 messages, kept pristine: each test upgrades a copy."""
    return build_v1_database(tmp_path_factory.mktemp("v1") / "conversations.sqlite3")


@pytest.fixture
def copy_of_v1(v1, tmp_path):
    path = tmp_path / "conversations.sqlite3"
    shutil.copy(v1.path, path)
    return path


def raw(path):
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    return closing(conn)


def test_every_conversation_and_message_survives_as_one_branch(v1, copy_of_v1):
    with ConversationStore(copy_of_v1) as store:
        pass  # opening upgrades
    with raw(copy_of_v1) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # and on through 2 -> 3
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conversations = {row["id"]: row for row in conn.execute("SELECT * FROM conversations")}
        assert len(conversations) == len(v1.conversations)
        for before in v1.conversations:
            after = conversations[before.row["id"]]
            assert {name: after[name] for name in CONVERSATION_COLUMNS} == {
                name: before.row[name] for name in CONVERSATION_COLUMNS}
            rows = conn.execute("SELECT * FROM messages WHERE conversation_id = ? ORDER BY position",
                                (before.row["id"],)).fetchall()
            expected = [{name: message[name] for name in MESSAGE_COLUMNS} for message in before.messages]
            # Crash recovery ran at this open, as it did in version 1: the reply left 'streaming' is
            # now the interrupted one. Everything else is exactly as it was.
            for message in expected:
                if message["id"] == v1.streaming_message_id:
                    message["status"] = "cancelled"
                    message["stats_json"] = json.dumps(
                        {**json.loads(message["stats_json"]), "stop_reason": StopReason.INTERRUPTED.value})
            assert [{name: row[name] for name in MESSAGE_COLUMNS} for row in rows] == expected
            # One branch: each message follows the one before it, numbered from 0, and ends at the last.
            assert [row["position"] for row in rows] == list(range(len(rows)))
            assert [row["parent_id"] for row in rows] == [None, *(row["id"] for row in rows)][:len(rows)]
            assert after["leaf_id"] == (rows[-1]["id"] if rows else None)
            assert all(row["deleted_at"] is None for row in rows)


def test_the_store_reads_the_upgraded_file_as_the_window_will(v1, copy_of_v1):
    with ConversationStore(copy_of_v1) as store:
        listed = {conversation.id for conversation in store.list_conversations()}
        assert listed == {c.row["id"] for c in v1.conversations} - set(v1.trashed_conversation_ids)
        for trashed in v1.trashed_conversation_ids:  # still in the bin, restorable
            assert store.get_conversation(trashed).deleted_at is not None
        store.restore(v1.trashed_conversation_ids[0])
        assert v1.trashed_conversation_ids[0] in {c.id for c in store.list_conversations()}

        edited = v1.conversation(v1.edited_conversation_id)
        stored = store.messages(v1.edited_conversation_id)
        assert [m.content for m in stored] == [m["content"] for m in edited.messages]
        assert all((m.version, m.versions) == (1, 1) for m in stored)
        assert store.messages(v1.empty_conversation_id) == []

        huge = store.message(v1.huge_message_id)
        assert len(huge.content) >= 200_000
        endings = store.messages(v1.endings_conversation_id)
        assert {m.status for m in endings} >= set(ReplyStatus) - {ReplyStatus.STREAMING}
        assert any(m.role == "system" for m in endings)
        assert store.message(v1.null_stop_reason_message_id).stats.stop_reason is None
        interrupted = store.message(v1.interrupted_message_id)
        assert interrupted.stats.stop_reason is StopReason.INTERRUPTED
        assert isinstance(interrupted.stats, ReplyStats)
        assert all(m.params == json.loads(row["params_json"]) for m, row in zip(endings, v1.conversation(
            v1.endings_conversation_id).messages))

        page = store.recent_messages(v1.edited_conversation_id, 2)
        assert page.earlier == len(edited.messages) - 2

        # The full-text index was rebuilt over the new table and finds what version 1 found.
        word = edited.messages[0]["content"].split()[0]
        assert v1.edited_conversation_id in {c.id for c in store.search(word)}
    with raw(copy_of_v1) as conn:
        for index in ("conversation_fts", "message_fts"):
            conn.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('integrity-check', 1)")


def test_the_upgraded_conversation_takes_new_versions(v1, copy_of_v1):
    with ConversationStore(copy_of_v1) as store:
        cid = v1.edited_conversation_id
        last = store.leaf_message(cid)
        again = store.add_version(last.id, "another version")
        assert store.message(again).versions == 2
        assert store.show_version(last.id) == last.id
        assert store.export_json(cid)["messages"][-1]["parent"] is not None


@pytest.mark.parametrize("cut_after_steps", [50, 5_000, 200_000])
def test_an_upgrade_cut_off_midway_leaves_version_1_intact(v1, copy_of_v1, cut_after_steps):
    """SQLite's progress handler aborts the upgrade after so many virtual-machine steps: early
    (copying rows), in the middle, and late; each time the file is still version 1, whole."""
    with closing(sqlite3.connect(copy_of_v1, isolation_level=None)) as conn:
        steps = 0

        def interrupt() -> int:
            nonlocal steps
            steps += 1
            return 1 if steps * 1000 >= cut_after_steps else 0

        conn.set_progress_handler(interrupt, 1000)
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            migrate(conn, MIGRATIONS[:2])
    with raw(copy_of_v1) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert read_v1(conn) == v1.conversations
        assert "messages_v2" not in {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    with ConversationStore(copy_of_v1) as store:  # and the next start upgrades it in full
        assert len(store.messages(v1.edited_conversation_id)) == len(v1.conversation(v1.edited_conversation_id).messages)


def test_an_upgrade_that_fails_at_its_last_statement_changes_nothing(v1, copy_of_v1):
    failing = (MIGRATIONS[0], MIGRATIONS[1] + "\nSELECT no_such_function();")
    with closing(sqlite3.connect(copy_of_v1, isolation_level=None)) as conn, pytest.raises(sqlite3.OperationalError):
        migrate(conn, failing)
    with raw(copy_of_v1) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert read_v1(conn) == v1.conversations


def test_a_version_1_hearth_refuses_the_upgraded_file(copy_of_v1):
    with ConversationStore(copy_of_v1):
        pass
    with closing(sqlite3.connect(copy_of_v1, isolation_level=None)) as conn, pytest.raises(StoreError, match="newer"):
        migrate(conn, MIGRATIONS[:1])
