"""A search hit says where the words were found: a snippet of the newest message holding them,
on one line, with FTS5 and with the LIKE fallback alike."""

import pytest

from app.store import ConversationStore
from app.store.conversations import SNIPPET_SHOWN_CHARS


@pytest.fixture(params=[True, False], ids=["fts5", "like"])
def store(request, db_path):
    with ConversationStore(db_path, full_text_search=request.param) as store:
        yield store


def test_a_hit_in_a_message_comes_with_the_words_around_it(store):
    bread = store.create_conversation(title="Sourdough bread")
    store.add_message(bread, "user", "How long should the dough rise?\nIt is cold in my kitchen.")
    store.add_message(bread, "assistant", "In a cold kitchen the dough may need twelve hours to rise.")
    hits = store.search("rise")
    snippets = store.search_snippets("rise", [c.id for c in hits])
    assert "twelve hours to rise" in snippets[bread]  # the newest message that has the word
    assert "\n" not in snippets[bread] and len(snippets[bread]) <= SNIPPET_SHOWN_CHARS


def test_a_hit_by_title_alone_has_no_snippet_and_a_long_message_is_cut_around_the_word(store):
    titled = store.create_conversation(title="Pineapple")
    store.add_message(titled, "user", "Something else entirely")
    long = store.create_conversation(title="Long")
    store.add_message(long, "user", "filler " * 50_000 + "the pineapple is here " + "more " * 50_000)
    snippets = store.search_snippets("pineapple", [c.id for c in store.search("pineapple")])
    assert titled not in snippets
    assert "pineapple" in snippets[long].lower() and len(snippets[long]) <= SNIPPET_SHOWN_CHARS
    assert snippets[long].startswith("…")


def test_blank_search_and_no_conversations_have_no_snippets(store):
    conversation = store.create_conversation(title="x")
    store.add_message(conversation, "user", "words")
    assert store.search_snippets("   ", [conversation]) == {} and store.search_snippets("words", []) == {}
