"""`hearth serve` on the real Gemma, read by the official `openai` client as any program would.

One server for the module (`--max-waiting 2`). Replies are short (a few to a few dozen tokens)
so the module takes seconds beyond the model's load; the reply that must run long (the one a
client walks away from) asks for thousands of tokens and is cut short by the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest
from support.served import ROOT, openai_client, serving

MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Write two sentences about the sea."}]
COUNTING = "1, 2, 3, 4, 5, 6, 7, 8,"  # greedy, Gemma counts on for thousands of tokens
# A 1 × 1 red PNG.
RED_PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAE"
             "lFTkSuQmCC")


@pytest.fixture(scope="module")
def served(gemma_path):
    with serving(gemma_path, "--max-waiting", "2") as server:
        yield server


@pytest.fixture(scope="module")
def client(served):
    with openai_client(served, timeout=60) as client:
        yield client


def chat(client, served, **kwargs):
    return client.chat.completions.create(model=served.model_id, **{"messages": MESSAGES, **kwargs})


def streamed(client, served, **kwargs) -> tuple[str, list]:
    chunks = list(chat(client, served, stream=True, **kwargs))
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices), chunks


def count(client, served):
    """A streamed reply that goes on counting for thousands of tokens, unless stopped."""
    return client.completions.create(model=served.model_id, prompt=COUNTING, temperature=0, max_tokens=3000,
                                     stream=True)


def hearth(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    return result


def test_the_model_list_names_the_served_file(client, served, gemma_path):
    models = client.models.list().data
    # The chat model first, then the default embedding model /v1/embeddings serves
    # (tests/serve/test_serve_embeddings.py).
    assert [m.id for m in models] == [gemma_path.name, "all-MiniLM-L6-v2"]
    assert client.models.retrieve(gemma_path.name).id == gemma_path.name
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_a_reply_says_why_it_ended_and_what_it_cost(client, served):
    reply = chat(client, served, max_tokens=8, seed=1)
    choice = reply.choices[0]
    assert choice.finish_reason == "length" and choice.message.role == "assistant" and choice.message.content
    assert reply.usage.completion_tokens == 8
    assert reply.usage.prompt_tokens > 10
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + 8
    assert reply.model == served.model_id and reply.id.startswith("chatcmpl-")


def test_a_streamed_reply_is_the_same_reply_with_usage_last_when_asked(client, served):
    whole = chat(client, served, max_tokens=12, seed=2)
    text, chunks = streamed(client, served, max_tokens=12, seed=2, stream_options={"include_usage": True})
    assert text == whole.choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-2].choices[0].finish_reason == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 12
    assert chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens
    assert len({c.id for c in chunks}) == 1
    _, unasked = streamed(client, served, max_tokens=3, seed=2)
    assert all(c.usage is None for c in unasked) and unasked[-1].choices[0].finish_reason == "length"


def test_a_stop_string_ends_the_reply_before_it(client, served):
    full = chat(client, served, max_tokens=24, seed=3).choices[0].message.content
    words = full.split()
    stop = next(w for w in words[2:] if full.index(w) > 0)  # a word well inside the reply
    before = full[:full.index(stop)]
    reply = chat(client, served, max_tokens=24, seed=3, stop=[stop, "never appears"])
    assert reply.choices[0].message.content == before
    assert reply.choices[0].finish_reason == "stop"
    text, chunks = streamed(client, served, max_tokens=24, seed=3, stop=stop)
    assert text == before and chunks[-1].choices[0].finish_reason == "stop"


def test_a_raw_completion_continues_the_text_without_the_chat_template(client, served):
    prompt = "The capital of France is"
    reply = client.completions.create(model=served.model_id, prompt=prompt, max_tokens=6, temperature=0)
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 6
    assert reply.usage.prompt_tokens <= 8  # BOS and the text's own tokens: no turn markers
    parts = client.completions.create(model=served.model_id, prompt=prompt, max_tokens=6, temperature=0, stream=True)
    assert "".join(c.choices[0].text for c in parts if c.choices) == reply.choices[0].text
    # The chat template is back for the next chat.
    as_chat = chat(client, served, messages=[{"role": "user", "content": prompt}], max_tokens=1, seed=1)
    assert as_chat.usage.prompt_tokens > reply.usage.prompt_tokens + 4


def test_a_served_reply_is_byte_identical_to_hearth_chat(client, served, gemma_path):
    args = ["--seed", "42", "--max-tokens", "20"]
    local = hearth("chat", str(gemma_path), MESSAGES[1]["content"], "--system", MESSAGES[0]["content"], *args)
    reply = chat(client, served, seed=42, max_tokens=20)
    assert (reply.choices[0].message.content + "\n").encode() == local.stdout
    # And Hearth as the client of Hearth as the server (RemoteBackend, as the GUI's remote models).
    remote = hearth("chat", "--server", served.base_url, served.model_id, MESSAGES[1]["content"],
                    "--system", MESSAGES[0]["content"], *args, "--stats", "json")
    assert remote.stdout == local.stdout
    stats = json.loads(remote.stderr.decode().strip().splitlines()[-1])
    assert stats["completion_tokens"] == reply.usage.completion_tokens


def test_an_image_sent_to_a_model_that_cannot_read_images_is_a_400_that_says_why(client, served):
    """Gemma 3 270M has no projector: the image is refused, by the chat and the Responses API,
    naming the model and why, whether the image is good, damaged or an address; text is
    answered as ever after it."""
    cannot = ("Gemma 3 270m cannot read images: no projector (mmproj) was loaded with it. Send the message without "
              "images, or serve a model that reads images with its projector (hearth serve MODEL --mmproj FILE, or "
              "its mmproj-*.gguf beside it).")
    for url in (RED_PIXEL, "data:image/png;base64,AAAA", "https://example.com/cat.png"):
        with pytest.raises(openai.BadRequestError) as chat_refused:
            chat(client, served, messages=[{"role": "user", "content": [
                {"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": url}}]}])
        assert chat_refused.value.status_code == 400 and chat_refused.value.body == {
            "message": cannot, "type": "invalid_request_error", "param": "messages[0].content[1].image_url.url",
            "code": "model_cannot_read_images"}
    with pytest.raises(openai.BadRequestError) as responses_refused:
        client.responses.create(model=served.model_id, store=False, input=[{"role": "user", "content": [
            {"type": "input_image", "image_url": RED_PIXEL}, {"type": "input_text", "text": "What is this?"}]}])
    assert responses_refused.value.body["message"] == cannot
    assert responses_refused.value.body["param"] == "input[0].content[0].image_url"
    assert chat(client, served, max_tokens=3).choices[0].message.content


def test_concurrent_requests_wait_their_turn_and_never_interleave(client, served):
    prompts = ["Name three rivers.", "Describe a cat.", "What is rain?"]
    # Greedy: a seeded draw can fall the other way within the rounding between a cold prompt
    # and one read after another's (DraftVerifier's docstring), which is no interleaving.
    alone = [chat(client, served, messages=[{"role": "user", "content": p}], max_tokens=8, temperature=0)
             .choices[0].message.content for p in prompts]
    together: dict[int, str] = {}
    errors: list[BaseException] = []

    def ask(index: int) -> None:
        try:
            text, _ = streamed(client, served, messages=[{"role": "user", "content": prompts[index]}],
                               max_tokens=8, temperature=0)
            together[index] = text
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert [together[i] for i in range(len(prompts))] == alone


def test_a_client_that_walks_away_stops_its_reply_and_the_next_is_served_at_once(client, served):
    start = time.monotonic()
    chat(client, served, max_tokens=4, seed=1)
    baseline = time.monotonic() - start
    # Streaming: leave after a few pieces of a reply that would run for a minute.
    stream = count(client, served)
    for _, _ in zip(range(3), stream):
        pass
    stream.close()
    start = time.monotonic()
    assert chat(client, served, max_tokens=4, seed=1, timeout=10).usage.completion_tokens == 4
    # A reply left running would take a minute; on 2 busy cores a stop at the next token and the
    # next request's own work have taken 6 s.
    assert time.monotonic() - start < baseline + 15.0
    # Waiting in the queue: a client that gives up before its turn is not served later.
    running = count(client, served)
    next(iter(running))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{served.base_url}/completions", timeout=0.5,
                   json={"model": served.model_id, "prompt": COUNTING, "temperature": 0, "max_tokens": 3000})
    running.close()
    start = time.monotonic()
    assert chat(client, served, max_tokens=4, seed=1, timeout=10).usage.completion_tokens == 4
    # A reply left running would take a minute; on 2 busy cores a stop at the next token and the
    # next request's own work have taken 6 s.
    assert time.monotonic() - start < baseline + 15.0
