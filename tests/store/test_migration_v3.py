"""Schema 2 -> 3 (tool calls and results): a version-2 database opens after the upgrade with
nothing lost, its tree, deleted versions and search as they were; an upgrade cut off or killed
midway leaves version 2 whole, and the next start upgrades it. The version-2 files are built
by tests/support/v2_database.py from the released migrations."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from support.v2_database import V2_MIGRATIONS, build_v2_database, read_v2

from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.store import ConversationStore, StoreError, ToolResult
from app.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate

REPO = Path(__file__).resolve().parents[2]
# Every column version 2 had; version 3 keeps them all and adds the tools'.
V2_MESSAGE_COLUMNS = ("id", "conversation_id", "parent_id", "position", "role", "content", "model", "params_json",
                      "stats_json", "status", "created_at", "updated_at", "viewed_at", "deleted_at")


@pytest.fixture(scope="module")
def v2(tmp_path_factory):
    """A version-2 database of about 3,000 messages, kept pristine: each test upgrades a copy."""
    return build_v2_database(tmp_path_factory.mktemp("v2") / "conversations.sqlite3")


@pytest.fixture
def copy_of_v2(v2, tmp_path):
    path = tmp_path / "conversations.sqlite3"
    shutil.copy(v2.path, path)
    return path


def raw(path):
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    return closing(conn)


def assert_still_version_2(path, v2):
    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        assert read_v2(conn) == v2.conversations
        assert [tuple(row) for row in conn.execute("PRAGMA integrity_check")] == [("ok",)]
        assert "messages_v3" not in {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}


def test_every_row_survives_with_no_tools(v2, copy_of_v2):
    with ConversationStore(copy_of_v2, recover=False):
        pass  # opening upgrades
    with raw(copy_of_v2) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 3
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        after = read_v2(conn)
    later_columns = {"tool_servers_json", "collections_json"}  # added by later versions, empty for every row
    assert [{k: v for k, v in c.row.items() if k not in later_columns} for c in after] == [c.row for c in v2.conversations]
    assert all(c.row.get(column) is None for c in after for column in later_columns)
    for before, now in zip(v2.conversations, after):
        assert [{name: row[name] for name in V2_MESSAGE_COLUMNS} for row in now.messages] == list(before.messages)
        assert all((row["tool_calls_json"], row["tool_calls_text"], row["tool_call_id"], row["tool_name"],
                    row["tool_error"], row["sources_json"]) == ("[]", "", None, None, 0, "[]") for row in now.messages)


def test_the_tree_reads_as_version_2_showed_it(v2, copy_of_v2):
    with ConversationStore(copy_of_v2) as store:
        cid = v2.tree_conversation_id
        shown = store.messages(cid)
        assert shown[-1].id == v2.regenerated_id and (shown[-1].version, shown[-1].versions) == (2, 2)
        assert store.message(v2.deleted_id).content == "A reply deleted later."  # kept for an Undo...
        assert v2.deleted_id not in {m.id for m in shown}  # ...and not shown
        assert store.show_version(v2.edited_id) != v2.regenerated_id
        assert [m.content for m in store.messages(cid)][-2:] == [
            "An edited question: what changes below it?", "The reply to the edited question."]
        assert all(m.tool_calls == () and m.tool_result is None for m in store.messages(cid))
        interrupted = store.message(v2.streaming_message_id)  # recovered at this first open
        assert (interrupted.status, interrupted.stats.stop_reason) == (ReplyStatus.CANCELLED, StopReason.INTERRUPTED)
        long = store.recent_messages(v2.long_conversation_id, 1)
        assert long.earlier > 1000  # a branch deeper than SQLite's recursion limit survives the table's rebuild
        # The full-text index was built again, with the tools' columns, and finds what version 2 found.
        assert cid in {c.id for c in store.search("regenerated shorter")}
        assert not store.search("deleted later")
    with raw(copy_of_v2) as conn:
        for index in ("conversation_fts", "message_fts"):
            conn.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('integrity-check', 1)")


def test_the_upgraded_file_takes_tool_calls_and_results(v2, copy_of_v2):
    with ConversationStore(copy_of_v2) as store:
        cid = v2.tree_conversation_id
        reply = store.add_message(cid, "assistant", "", status=ReplyStatus.STREAMING)
        call = ToolCall(0, "call_1", "lookup", '{"term": "lighthouse"}')
        store.finish_message(reply, "", ReplyStats(stop_reason=StopReason.TOOL_CALLS), tool_calls=(call,))
        store.add_tool_result(cid, ToolResult("call_1", "lookup", "A tower with a light."))
        for words in ("lookup lighthouse", "lookup tower"):  # the call's name and arguments; the result's
            assert [c.id for c in store.search(words)] == [cid]
        assert store.export_json(cid)["messages"][-1]["tool_call_id"] == "call_1"


@pytest.mark.parametrize("cut_after_steps", [50, 150_000, 450_000, 650_000])  # of some 657,000
def test_an_upgrade_cut_off_midway_leaves_version_2_intact(v2, copy_of_v2, cut_after_steps):
    """SQLite's progress handler aborts the upgrade after so many virtual-machine steps: while
    copying rows, unlinking them, and at the very end; each time the file is still version 2, whole."""
    with closing(sqlite3.connect(copy_of_v2, isolation_level=None)) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        steps = 0

        def interrupt() -> int:
            nonlocal steps
            steps += 1
            return 1 if steps * 1000 >= cut_after_steps else 0

        conn.set_progress_handler(interrupt, 1000)
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            migrate(conn, MIGRATIONS)
    assert_still_version_2(copy_of_v2, v2)
    with ConversationStore(copy_of_v2) as store:  # and the next start upgrades it in full
        assert store.message(v2.regenerated_id).content.startswith("Another reply")


KILLED_MIDWAY = """
import os, signal, sqlite3, sys
from app.store.schema import MIGRATIONS, migrate

conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA foreign_keys = ON")
steps = 0
def kill():
    global steps
    steps += 1
    if steps >= int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return 0
conn.set_progress_handler(kill, 1000)
migrate(conn, MIGRATIONS)
print("finished before the kill")
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
@pytest.mark.parametrize("kill_after", [5, 300, 640])  # thousands of steps
def test_a_process_killed_mid_upgrade_leaves_version_2_whole(v2, copy_of_v2, kill_after):
    """The process is killed (no rollback, no close): the WAL holds frames of a transaction
    that never committed, which the next open ignores."""
    child = subprocess.run([sys.executable, "-c", KILLED_MIDWAY, str(copy_of_v2), str(kill_after)], cwd=REPO, check=False,
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    assert_still_version_2(copy_of_v2, v2)
    with ConversationStore(copy_of_v2) as store:
        assert len(store.list_conversations()) == len(v2.conversations) - 2  # two in the trash
    with raw(copy_of_v2) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_an_upgrade_that_fails_at_its_last_statement_changes_nothing(v2, copy_of_v2):
    failing = (*V2_MIGRATIONS, MIGRATIONS[2] + "\nSELECT no_such_function();")
    with closing(sqlite3.connect(copy_of_v2, isolation_level=None)) as conn, pytest.raises(sqlite3.OperationalError):
        migrate(conn, failing)
    assert_still_version_2(copy_of_v2, v2)


def test_a_version_2_hearth_refuses_the_upgraded_file(copy_of_v2):
    with ConversationStore(copy_of_v2):
        pass
    with closing(sqlite3.connect(copy_of_v2, isolation_level=None)) as conn, pytest.raises(StoreError, match="newer"):
        migrate(conn, V2_MIGRATIONS)


def test_the_schema_refuses_tool_fields_where_they_do_not_belong(store):
    """The database itself holds the rules: a tool message names its call, only a reply has calls."""
    cid = store.create_conversation()
    store.add_message(cid, "user", "hi")
    conn = store._conn
    columns = "conversation_id, position, role, content, created_at, updated_at, viewed_at"
    for extra, values in [("", "'tool'"), (", tool_calls_json", "'user', '[{}]'"),
                          (", tool_error", "'assistant', 1"), (", tool_call_id, tool_name", "'user', 'c', 'n'")]:
        role, *rest = values.split(", ")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(f"INSERT INTO messages ({columns}{extra}) VALUES (?, 1, {role}, '', 't', 't', 't'"
                         f"{''.join(', ' + value for value in rest)})", (cid,))
    assert json.loads(conn.execute("SELECT tool_calls_json FROM messages").fetchone()[0]) == []
