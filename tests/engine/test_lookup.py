"""Prompt-lookup drafting on its own (engine/lookup.py): what it copies, and how long a draft
it asks the engine to check as drafts come true or not. No model: tokens are plain ints."""

from __future__ import annotations

import pytest

from app.engine.lookup import BATCH_COST, MIN_NGRAM, Drafter, DraftLength, PromptLookup

LONGEST = max(BATCH_COST) - 1  # the most drafted tokens one batch checks


def test_drafts_what_followed_the_last_ngram_earlier_in_the_context():
    lookup = PromptLookup([1, 2, 3, 4, 5, 6, 9, 9, 2, 3])
    draft = lookup.draft(3)
    assert draft.tokens == [4, 5, 6]
    assert draft.match == 2  # "2 3"; the token before them differs (1 vs 9)


def test_nothing_to_draft_when_the_end_was_not_seen_before():
    assert PromptLookup([1, 2, 3, 4, 5]).draft(8).tokens == []
    assert PromptLookup([7]).draft(8).tokens == []
    assert PromptLookup().draft(8).tokens == []


def test_a_single_token_in_common_is_not_a_match():
    assert MIN_NGRAM == 2
    assert PromptLookup([5, 6, 7, 1, 5]).draft(4).tokens == []


def test_the_draft_stops_at_the_limit_and_at_the_contexts_end():
    lookup = PromptLookup([1, 2, 3, 4, 1, 2])
    assert lookup.draft(1).tokens == [3]
    assert lookup.draft(10).tokens == [3, 4, 1, 2]  # it reads on into the stretch it repeats
    assert lookup.draft(0).tokens == []


def test_appended_tokens_extend_the_context_and_the_index():
    lookup = PromptLookup([10, 11, 12, 13])
    lookup.extend([20, 10])
    assert lookup.draft(4).tokens == []
    lookup.append(11)
    assert lookup.draft(4).tokens == [12, 13, 20, 10]
    assert len(lookup) == 7


def test_the_longest_ngram_wins_over_a_later_shorter_one():
    # "2 3" last occurred before 8, but "1 2 3" occurred only before 4.
    lookup = PromptLookup([1, 2, 3, 4, 9, 2, 3, 8, 0, 1, 2, 3])
    assert lookup.draft(1).tokens == [4]
    assert lookup.draft(1).match == 3


def test_a_copy_keeps_to_the_passage_it_copies_past_a_line_that_recurs():
    # The n-gram "7 8 9 5" occurs twice; its latest occurrence is followed by 66, but the
    # passage being copied (1 2 3 4 … 7 8 9 5) is the first one, followed by 44.
    passage = [1, 2, 3, 4, 7, 8, 9, 5, 44, 45]
    elsewhere = [30, 31, 7, 8, 9, 5, 66, 67]
    lookup = PromptLookup(passage + elsewhere + [1, 2, 3, 4, 7, 8, 9, 5])
    draft = lookup.draft(2)
    assert draft.tokens == [44, 45]
    assert draft.match == 8


def test_the_match_length_is_measured_back_up_to_a_cap():
    tokens = list(range(100, 160))
    lookup = PromptLookup(tokens + [0] + tokens)
    assert lookup.draft(4).tokens == [0, 100, 101, 102]
    assert 32 <= lookup.draft(4).match < 60  # capped: long enough to tell a copy


# --- how long a draft --------------------------------------------------------------------------

def test_no_draft_for_a_chance_match_and_a_full_one_for_a_long_copy():
    lengths = DraftLength()
    assert lengths.choose(LONGEST, match=2) == 0
    assert lengths.choose(LONGEST, match=3) == 0
    assert lengths.choose(LONGEST, match=32) > 0


def test_drafts_are_whole_batches_of_four_and_never_longer_than_what_is_available():
    lengths = DraftLength()
    for _ in range(10):
        lengths.checked(drafted=15, accepted=15)
    assert lengths.choose(LONGEST, match=32) == LONGEST
    assert lengths.choose(10, match=32) == 7  # a batch of 8: 11 would cost a batch of 12 for less
    assert lengths.choose(3, match=32) == 3
    assert lengths.choose(2, match=32) == 0  # a batch of 3 costs nearly what 4 does


def test_drafts_that_come_true_lengthen_the_next_and_wrong_ones_stop_drafting():
    lengths = DraftLength()
    first = lengths.choose(LONGEST, match=16)
    assert 0 < first < LONGEST
    for _ in range(6):
        lengths.checked(drafted=first, accepted=first)
    assert lengths.choose(LONGEST, match=16) > first
    assert lengths.choose(LONGEST, match=4) > 0  # a copy under way: even a short match is worth a try
    for _ in range(4):
        lengths.checked(drafted=7, accepted=0)
    assert lengths.choose(LONGEST, match=32) == 0


def test_a_rejected_draft_counts_its_confirmed_tokens_and_one_miss():
    lengths = DraftLength()
    before = lengths.acceptance(16)
    lengths.checked(drafted=15, accepted=3)  # 3 right, the 4th wrong: 4 checked, not 15
    after_partial = lengths.acceptance(16)
    fresh = DraftLength()
    fresh.checked(drafted=4, accepted=3)
    assert after_partial == pytest.approx(fresh.acceptance(16))
    assert after_partial < before


# --- one reply's drafter ---------------------------------------------------------------------------

def test_the_drafter_proposes_within_the_room_left_and_counts_what_it_did():
    passage = list(range(200, 240))
    drafter = Drafter(passage + [1] + passage[:20])
    assert drafter.propose(room=2) == []  # too little room for a batch that pays
    draft = drafter.propose(room=100)
    assert draft == passage[20:20 + len(draft)] and len(draft) in (3, 7, 11, 15)
    drafter.checked(len(draft))
    for token in draft:
        drafter.append(token)
    assert drafter.stats.batches == 1 and drafter.stats.drafted == drafter.stats.accepted == len(draft)
    next_draft = drafter.propose(room=100)
    assert next_draft[0] == passage[20 + len(draft)]
    assert drafter.stats.batches == 2


def test_the_drafter_proposes_nothing_where_the_reply_matches_nothing():
    drafter = Drafter([1, 2, 3, 4, 5, 6])
    for token in (7, 8, 9):
        drafter.append(token)
        assert drafter.propose(room=100) == []
    assert drafter.stats.batches == 0
