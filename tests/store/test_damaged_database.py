"""A real SQLite file with pages overwritten: every store call that meets the damage raises
DatabaseDamaged (never sqlite3's own errors), quick_check finds it, and move_aside keeps it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.damaged_database import build_conversations, damaged_database

from app.common.sqlite_files import move_aside
from app.store import ConversationStore, DatabaseDamaged, StoreError
from app.store.schema import quick_check


@pytest.fixture
def damaged(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    return path, damaged_database(path)


def test_a_sound_database_passes_the_quick_check(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    build_conversations(path, count=2, messages=3)
    assert quick_check(path) == []


def test_damaged_pages_are_found_by_the_quick_check(damaged):
    path, _ = damaged
    problems = quick_check(path)
    assert problems and all(len(problem) <= 80 for problem in problems)


def test_every_call_that_meets_the_damage_is_a_store_error(damaged):
    path, ids = damaged
    with ConversationStore(path) as store:
        failures = []
        for conversation in ids:
            try:
                store.messages(conversation)
                store.export_json(conversation)
            except StoreError as exc:
                failures.append(exc)
        with pytest.raises(DatabaseDamaged, match="conversations.sqlite3 is damaged") as search:
            store.search("lorem")
    assert failures and all(isinstance(exc, DatabaseDamaged) for exc in failures)
    assert len(failures) < len(ids)  # the rest is still readable
    assert isinstance(search.value.__cause__, sqlite3.DatabaseError)


def test_a_row_whose_json_is_damaged_is_a_store_error(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    (conversation,) = build_conversations(path, count=1, messages=1)
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE messages SET stats_json = '{\"ttft_s\": 1e999'")  # cut short
    with ConversationStore(path) as store, pytest.raises(DatabaseDamaged, match="cannot be read"):
        store.messages(conversation)


def test_move_aside_keeps_the_file_and_its_wal_under_a_timestamped_name(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    store = ConversationStore(path)
    store.create_conversation(title="Kept")
    assert Path(f"{path}-wal").stat().st_size > 0  # the commit is still in the WAL, not the file
    moved = move_aside(path)  # while open, as when Hearth cannot close a damaged file cleanly
    assert not path.exists() and moved.parent == path.parent and moved.name.startswith("conversations.sqlite3.damaged-")
    assert Path(f"{moved}-wal").exists()
    store.close()
    with ConversationStore(moved) as reopened:
        assert [c.title for c in reopened.list_conversations()] == ["Kept"]
    with ConversationStore(path) as fresh:
        assert fresh.list_conversations() == []


def test_a_second_move_in_the_same_second_never_overwrites(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    path.write_bytes(b"first")
    first = move_aside(path)
    path.write_bytes(b"second")
    second = move_aside(path)
    assert first != second and (first.read_bytes(), second.read_bytes()) == (b"first", b"second")


def test_move_aside_takes_a_rollback_journal_with_it(tmp_path):
    """A journal left beside the old name would be replayed into the new, empty database."""
    path = tmp_path / "conversations.sqlite3"
    build_conversations(path, count=1, messages=1)
    Path(f"{path}-journal").write_bytes(b"a hot journal")
    moved = move_aside(path)
    assert not Path(f"{path}-journal").exists()
    assert Path(f"{moved}-journal").read_bytes() == b"a hot journal"
