"""Prefix reuse along a branch, on the real Gemma 3 270M: a reply after switching to another
version evaluates only the prompt from the point where the branches differ.

tests/support/branch_walk.py builds a stored conversation of eight exchanges answered by the real
Engine as ChatSession answers (history from the branch shown in a real SQLite store; replies of
eight tokens, as what is measured is the prompt, and bench/branch_prefix.py's are longer), then
(a) regenerates the last reply, (b) edits the user message before the last and replies, (c)
shows the original branch again and sends on it. Each reply's ReplyStats.evaluated_prompt_tokens
(the prompt tokens not found in the KV cache) is compared with the tokens after the point where
the new prompt and the branch in the cache differ, found by rendering and tokenizing both afresh.
"""

from __future__ import annotations

import pytest
from support.branch_walk import PARAMS, walk_branches

from app.engine.llama.generator import Engine
from app.engine.types import LoadOptions
from app.store import ConversationStore

N_CTX = 1024  # the whole walk fits (about 250 tokens): no turn is dropped, so only the branches differ
REPLIES = PARAMS.with_changes(max_tokens=8)
TOLERANCE = 2  # tokens: where the engine's and a fresh tokenization meet at the divergence


@pytest.fixture(scope="module")
def measured(gemma_path, tmp_path_factory):
    engine = Engine(gemma_path, LoadOptions(n_ctx=N_CTX))
    store = ConversationStore(tmp_path_factory.mktemp("branches") / "conversations.sqlite3")
    try:
        yield walk_branches(engine, store, REPLIES)
    finally:
        store.close()
        engine.close()


def test_regenerating_the_last_reply_evaluates_nothing_new(measured):
    regenerated = measured.regenerated
    assert regenerated.after_divergence == 0
    # The same prompt as the reply before it: all in the cache but the one token the engine
    # decodes again for fresh logits.
    assert regenerated.evaluated_prompt_tokens == 1 and regenerated.prompt_tokens > 150


def test_a_reply_to_an_edited_message_evaluates_only_from_the_edit(measured):
    edited = measured.edited
    assert edited.evaluated_prompt_tokens < edited.prompt_tokens / 2
    assert abs(edited.evaluated_prompt_tokens - edited.after_divergence) <= TOLERANCE
    assert edited.after_divergence < 40  # the edited question and the turn markers, no more


def test_showing_the_original_branch_again_evaluates_from_where_the_branches_differ(measured):
    # The KV cache holds the edited branch now, so the original branch is read again from the
    # edited message on (that message, the reply and exchange after it, the new question):
    # expected, and still far from the whole prompt.
    switched = measured.switched_back
    assert abs(switched.evaluated_prompt_tokens - switched.after_divergence) <= TOLERANCE
    assert measured.edited.after_divergence < switched.evaluated_prompt_tokens < switched.prompt_tokens / 2


def test_each_new_exchange_evaluates_only_its_own_turn(measured):
    for exchange in measured.exchanges[1:]:
        assert abs(exchange.evaluated_prompt_tokens - exchange.after_divergence) <= TOLERANCE, exchange
