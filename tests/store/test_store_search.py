import sqlite3
from contextlib import closing

import pytest

from app.store import ConversationStore
from app.store.search import fts5_available

with closing(sqlite3.connect(":memory:")) as _probe:
    HAS_FTS5 = fts5_available(_probe)
needs_fts5 = pytest.mark.skipif(not HAS_FTS5, reason="this SQLite has no FTS5")


@pytest.fixture(params=[True, False], ids=["fts5", "like"])
def searchable(request, db_path):
    """A store searching with FTS5 (when available) or with the LIKE fallback, with content."""
    with ConversationStore(db_path, full_text_search=request.param) as store:
        assert store.full_text_search is (request.param and HAS_FTS5)
        bread = store.create_conversation(title="Sourdough bread")
        store.add_message(bread, "user", "How long should the dough rise?")
        rust = store.create_conversation(title="Borrow checker")
        store.add_message(rust, "user", "Why does the borrow checker reject this loop?")
        store.add_message(rust, "assistant", "Because the iterator holds a mutable reference.")
        yield store, bread, rust


def ids(conversations):
    return [c.id for c in conversations]


def test_search_by_title(searchable):
    store, bread, rust = searchable
    assert ids(store.search("sourdough")) == [bread]
    assert ids(store.search("BORROW")) == [rust]


def test_search_by_content_needs_every_word_in_one_place(searchable):
    store, bread, rust = searchable
    assert ids(store.search("dough rise")) == [bread]
    assert ids(store.search("mutable reference")) == [rust]
    assert ids(store.search("rise mutable")) == []
    assert ids(store.search("nowhere")) == []


def test_search_results_newest_first_and_blank_matches_all(searchable):
    store, bread, rust = searchable
    assert ids(store.search("the")) == [rust, bread]
    store.add_message(bread, "assistant", "About four hours.")
    assert ids(store.search("the")) == [bread, rust]
    assert ids(store.search("   ")) == [bread, rust]


def test_search_excludes_deleted_and_follows_edits(searchable):
    store, bread, rust = searchable
    store.delete(rust)
    assert ids(store.search("borrow")) == []
    store.restore(rust)
    assert ids(store.search("borrow")) == [rust]

    store.rename(bread, "Pizza")
    assert ids(store.search("sourdough")) == []
    assert ids(store.search("pizza")) == [bread]
    (question,) = store.messages(bread)
    edited = store.add_version(question.id, "Is a hot oven needed?")
    assert ids(store.search("rise")) == ids(store.search("oven")) == [bread]  # every version is searched
    assert store.search_hit("rise", bread) == question.id and store.search_hit("oven", bread) == edited
    deleted = store.delete_version(question.id)
    assert ids(store.search("rise")) == []
    store.restore_version(deleted)
    assert ids(store.search("rise")) == [bread]


def test_search_treats_operators_and_wildcards_as_text(searchable):
    store, bread, rust = searchable
    for text in ["NOT", "a OR", "*", "rise)", "(", "-", "'"]:
        store.search(text)  # must not be an FTS5 syntax error
    assert ids(store.search("%")) == ids(store.search('"')) == ids(store.search("_")) == []


@needs_fts5
def test_index_stays_consistent_through_every_kind_of_write(db_path):
    with ConversationStore(db_path) as store:
        cid = store.create_conversation()
        store.add_message(cid, "user", "first words")
        mid = store.add_message(cid, "assistant", "", status="streaming")
        for text in ("par", "partial", "partial reply"):
            store.update_partial(mid, text)
        store.finish_message(mid, "final reply", {})
        store.rename(cid, "A title")
        store.add_version(store.messages(cid)[0].id, "other words")
        store.delete_version(store.messages(cid)[0].id)
        gone = store.create_conversation(title="gone")
        store.add_message(gone, "user", "purged text")
        store.delete(gone)
        store.purge_deleted()
    with closing(sqlite3.connect(db_path)) as raw:
        for index in ("conversation_fts", "message_fts"):
            # Compares the index with the content tables; raises on any drift.
            raw.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('integrity-check', 1)")


@needs_fts5
def test_index_built_for_what_was_written_while_it_was_off(db_path):
    with ConversationStore(db_path, full_text_search=False) as store:
        cid = store.create_conversation(title="Written without the index")
        store.add_message(cid, "user", "zebra crossing")
    with ConversationStore(db_path) as store:
        assert store.full_text_search
        assert ids(store.search("zebr")) == [cid]
        assert ids(store.search("without")) == [cid]
