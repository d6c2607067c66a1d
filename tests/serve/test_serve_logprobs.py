"""`hearth serve` on the real Gemma: tokens' log-probabilities and n choices, read by the
official `openai` client (and by httpx where the check is the raw wire shape).

Greedy requests here turn the repeat penalty off (`repeat_penalty: 1`, llama.cpp's field):
the reported log-probabilities are the model's own (engine/logprobs.py), and only without a
penalty is the greedy pick the model's likeliest token, which the tests check.
"""

from __future__ import annotations

import math
import time

import httpx
import pytest
from support.served import openai_client, serving

MESSAGES = [{"role": "user", "content": "Write two sentences about the sea."}]
GREEDY = {"temperature": 0, "extra_body": {"repeat_penalty": 1.0}}
COUNTING = "1, 2, 3, 4, 5, 6, 7, 8,"  # greedy, Gemma counts on for thousands of tokens


@pytest.fixture(scope="module")
def served(gemma_path):
    with serving(gemma_path, "--max-waiting", "2") as server:
        yield server


@pytest.fixture(scope="module")
def client(served):
    with openai_client(served) as client:
        yield client


def chat(client, served, **kwargs):
    return client.chat.completions.create(model=served.model_id, messages=MESSAGES, **kwargs)


def joined_bytes(entries) -> str:
    return bytes(byte for entry in entries for byte in entry.bytes).decode("utf-8")


# --- logprobs ------------------------------------------------------------------------------------


def test_each_token_comes_with_its_logprob_and_its_likeliest_alternatives_sorted(client, served):
    reply = chat(client, served, max_tokens=12, logprobs=True, top_logprobs=5, **GREEDY)
    choice = reply.choices[0]
    entries = choice.logprobs.content
    assert len(entries) == reply.usage.completion_tokens == 12 and choice.finish_reason == "length"
    assert joined_bytes(entries) in (choice.message.content, " " + choice.message.content)
    for entry in entries:
        assert entry.logprob <= 0 and entry.bytes == list(entry.token.encode("utf-8"))
        top = [alternative.logprob for alternative in entry.top_logprobs]
        assert len(top) == 5 and top == sorted(top, reverse=True) and all(lp <= 0 for lp in top)
        # Greedy without penalties picks the model's likeliest token: it heads the list.
        assert entry.token == entry.top_logprobs[0].token and entry.logprob == top[0]
        assert sum(math.exp(lp) for lp in top) <= 1 + 1e-5


def test_logprobs_without_top_logprobs_gives_no_alternatives_and_a_plain_request_none(client, served):
    reply = chat(client, served, max_tokens=4, logprobs=True, **GREEDY)
    assert [entry.top_logprobs for entry in reply.choices[0].logprobs.content] == [[]] * 4
    plain = chat(client, served, max_tokens=4, **GREEDY)
    assert plain.choices[0].logprobs is None
    assert plain.choices[0].message.content == reply.choices[0].message.content


def test_streamed_logprobs_joined_are_the_whole_replys(client, served):
    whole = chat(client, served, max_tokens=16, logprobs=True, top_logprobs=3, **GREEDY)
    chunks = list(chat(client, served, max_tokens=16, logprobs=True, top_logprobs=3, stream=True, **GREEDY))
    streamed = [entry for c in chunks if c.choices and c.choices[0].logprobs for entry in c.choices[0].logprobs.content]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    expected = whole.choices[0].logprobs.content
    assert [e.token for e in streamed] == [e.token for e in expected]
    assert [e.logprob for e in streamed] == pytest.approx([e.logprob for e in expected], abs=1e-3)
    assert [[a.token for a in e.top_logprobs] for e in streamed] == [[a.token for a in e.top_logprobs] for e in expected]
    for chunk in chunks:  # a chunk's tokens are those of its text: none ride on a chunk without text
        if chunk.choices and chunk.choices[0].logprobs is not None and chunk.choices[0].finish_reason is None:
            assert chunk.choices[0].delta.content


def test_a_stop_string_cuts_its_tokens_from_the_logprobs_too(client, served):
    whole = chat(client, served, max_tokens=24, logprobs=True, **GREEDY)
    text = whole.choices[0].message.content
    stop = text.split()[3]  # a word a few tokens in
    cut = chat(client, served, max_tokens=24, logprobs=True, stop=[stop], **GREEDY)
    content = cut.choices[0].message.content
    assert cut.choices[0].finish_reason == "stop" and stop not in content
    # The tokens with text in the reply: their text begins with it, and ends within the stop.
    tokens = joined_bytes(cut.choices[0].logprobs.content)
    assert (tokens if content.startswith(" ") else tokens.removeprefix(" ")).startswith(content)
    assert len(cut.choices[0].logprobs.content) < len(whole.choices[0].logprobs.content)


def test_a_raw_completion_has_the_legacy_logprobs_whole_and_streamed(client, served):
    kwargs = {"model": served.model_id, "prompt": COUNTING, "max_tokens": 8, "logprobs": 3, "temperature": 0,
              "extra_body": {"repeat_penalty": 1.0}}
    whole = client.completions.create(**kwargs)
    choice = whole.choices[0]
    logprobs = choice.logprobs
    assert len(logprobs.tokens) == len(logprobs.token_logprobs) == len(logprobs.top_logprobs) == 8
    assert "".join(logprobs.tokens) in (choice.text, " " + choice.text)
    assert all(lp <= 0 for lp in logprobs.token_logprobs)
    assert all(0 < len(top) <= 3 and max(top.values()) == lp
               for top, lp in zip(logprobs.top_logprobs, logprobs.token_logprobs))
    assert logprobs.text_offset == [sum(len(t) for t in logprobs.tokens[:i]) for i in range(8)]
    chunks = list(client.completions.create(stream=True, **kwargs))
    streamed = [c.choices[0].logprobs for c in chunks if c.choices and c.choices[0].logprobs]
    assert [t for part in streamed for t in part.tokens] == logprobs.tokens
    assert [o for part in streamed for o in part.text_offset] == logprobs.text_offset


def test_logprobs_are_asked_within_bounds(served):
    def post(path, **fields):
        return httpx.post(f"{served.base_url}/{path}", timeout=30,
                          json={"model": served.model_id, "max_tokens": 2, **fields})

    for fields in ({"top_logprobs": 3}, {"logprobs": True, "top_logprobs": 21}, {"logprobs": True, "top_logprobs": 2.5}):
        answer = post("chat/completions", messages=MESSAGES, **fields)
        assert answer.status_code == 400 and answer.json()["error"]["param"] in ("top_logprobs", "logprobs")
    for logprobs in (21, -1, True, "3"):
        answer = post("completions", prompt="Hi", logprobs=logprobs)
        assert answer.status_code == 400 and answer.json()["error"]["param"] == "logprobs"
    assert post("completions", prompt="Hi", logprobs=20).status_code == 200


# --- n choices ------------------------------------------------------------------------------------


def test_n_choices_each_sample_with_their_own_seed_and_count_the_prompt_once(client, served):
    one = chat(client, served, max_tokens=12, temperature=1.0, seed=7)
    three = chat(client, served, max_tokens=12, temperature=1.0, seed=7, n=3)
    assert [c.index for c in three.choices] == [0, 1, 2]
    assert len({c.message.content for c in three.choices}) == 3  # seeds 7, 8 and 9
    assert three.usage.prompt_tokens == one.usage.prompt_tokens
    assert three.usage.completion_tokens == 36


def test_greedy_choices_are_the_same_reply_and_streamed_one_after_another(client, served):
    whole = chat(client, served, max_tokens=10, n=2, **GREEDY)
    texts = [c.message.content for c in whole.choices]
    assert texts[0] == texts[1] and texts[0]
    chunks = list(chat(client, served, max_tokens=10, n=2, stream=True, logprobs=True,
                       stream_options={"include_usage": True}, **GREEDY))
    indices = [c.choices[0].index for c in chunks if c.choices]
    assert indices == sorted(indices) and set(indices) == {0, 1}
    streamed = ["".join(c.choices[0].delta.content or "" for c in chunks if c.choices and c.choices[0].index == i)
                for i in (0, 1)]
    assert streamed == texts
    roles = [c.choices[0].index for c in chunks if c.choices and c.choices[0].delta.role == "assistant"]
    finishes = [c.choices[0].index for c in chunks if c.choices and c.choices[0].finish_reason]
    assert roles == finishes == [0, 1]
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens == 20


def test_a_raw_completion_takes_n_too(client, served):
    reply = client.completions.create(model=served.model_id, prompt=COUNTING, max_tokens=6, n=2, temperature=0)
    assert [c.index for c in reply.choices] == [0, 1] and reply.choices[0].text == reply.choices[1].text


def test_a_client_that_leaves_during_the_first_choice_stops_them_all(client, served):
    start = time.monotonic()
    chat(client, served, max_tokens=4, seed=1)
    baseline = time.monotonic() - start
    stream = client.completions.create(model=served.model_id, prompt=COUNTING, temperature=0, max_tokens=3000,
                                       n=4, stream=True)
    for _, _ in zip(range(3), stream):
        pass
    stream.close()
    start = time.monotonic()
    assert chat(client, served, max_tokens=4, seed=1, timeout=20).usage.completion_tokens == 4
    # Four choices left running would take minutes; a stop at the next token takes none of them.
    assert time.monotonic() - start < baseline + 15.0
