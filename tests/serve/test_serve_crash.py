"""`hearth serve` when llama.cpp dies under it (#29): the model runs in a process of its own, so
killing that process (as an abort or the OOM killer would) costs the request in flight, never the
server: its stream ends with an error event, or it gets a 503 when nothing was sent yet, and the
server loads the model again by itself and answers the next request. The real server, the real
Gemma, the official client."""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import httpx
import openai
import pytest
from support.engine_children import our_engine_children
from support.served import openai_client, serving

SAID = {signal.SIGKILL: "llama.cpp was killed (SIGKILL", signal.SIGABRT: "llama.cpp crashed (SIGABRT)"}


def engine_of(served, not_this: int | None = None, timeout: float = 60) -> int:
    """The server's engine process (a new one, after `not_this` died)."""
    deadline = time.monotonic() + timeout
    while True:
        children = [pid for pid in our_engine_children(served.pid) if pid != not_this]
        if len(children) == 1:
            return children[0]
        assert time.monotonic() < deadline, f"no engine process of its own: {children}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def served(gemma_path):
    with serving(gemma_path, "--ctx", "1024") as server:
        yield server


def test_a_crash_mid_reply_ends_that_stream_with_an_error_and_the_next_request_is_answered(served):
    """SIGABRT, llama.cpp's own abort (a GGML_ASSERT): its last words reach the client."""
    sig = signal.SIGABRT
    child = engine_of(served)
    with openai_client(served, timeout=60) as client:
        stream = client.completions.create(model=served.model_id, prompt="1, 2, 3, 4, 5, 6, 7, 8,",
                                           temperature=0, max_tokens=400, stream=True)
        next(iter(stream))
        os.kill(child, sig)
        with pytest.raises(openai.APIError, match=re.escape(SAID[sig])):
            for _ in stream:
                pass
        again = client.completions.create(model=served.model_id, prompt="1, 2, 3,", temperature=0, max_tokens=8)
    assert again.choices[0].text and engine_of(served) != child
    assert f"hearth: {SAID[sig]}" in served.stderr and "hearth: The model is loaded again." in served.stderr


def test_a_crash_before_the_first_token_is_a_503_and_the_server_goes_on(served):
    """The engine is frozen (SIGSTOP) while it has the request, then killed: nothing was sent, so
    the client is told to try again (503), which then works. Nothing outside the server shows
    when the request has reached the frozen engine, so a second passes first; on a machine so
    busy that it had not, the request is answered by the engine started next (a 200), and the
    whole is tried again."""
    for _attempt in range(3):
        child = engine_of(served)
        os.kill(child, signal.SIGSTOP)
        answers: list[httpx.Response] = []
        request = threading.Thread(target=lambda: answers.append(httpx.post(
            f"{served.base_url}/chat/completions", timeout=60,
            json={"model": served.model_id, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8})))
        request.start()
        time.sleep(1.0)  # the request is the frozen engine's
        os.kill(child, signal.SIGKILL)
        request.join(60)
        [answer] = answers
        if answer.status_code != 200:
            break
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["message"].startswith("The model's process stopped (llama.cpp was killed (SIGKILL")
    with openai_client(served, timeout=60) as client:
        reply = client.chat.completions.create(model=served.model_id, messages=[{"role": "user", "content": "Hi"}],
                                               max_tokens=8, temperature=0)
    assert reply.choices[0].message.content is not None


def loaded_again(served, times: int, timeout: float = 60) -> None:
    """Wait until the server has said `times` times that the model is loaded again."""
    deadline = time.monotonic() + timeout
    while served.stderr.count("hearth: The model is loaded again.") < times:
        assert time.monotonic() < deadline, served.stderr
        time.sleep(0.05)


def test_an_engine_that_dies_again_at_once_is_retried_after_a_pause_that_stderr_names(served):
    """A child that answered requests and then died is simply replaced; one that dies again
    before answering anything is given a pause first, which stderr names."""
    with openai_client(served, timeout=60) as client:
        assert client.completions.create(model=served.model_id, prompt="1, 2,", max_tokens=2).choices[0].text
    reloads = served.stderr.count("hearth: The model is loaded again.")
    first = engine_of(served)
    os.kill(first, signal.SIGKILL)
    loaded_again(served, reloads + 1)
    second = engine_of(served, not_this=first)
    os.kill(second, signal.SIGKILL)  # again, seconds after loading, before any request
    loaded_again(served, reloads + 2)
    assert engine_of(served) not in (first, second)
    said = served.stderr.splitlines()[-4:]
    assert said[0].startswith("hearth: llama.cpp was killed (SIGKILL") and said[0].endswith(". Loading the model again.")
    assert re.fullmatch(r"hearth: llama\.cpp was killed \(SIGKILL.*\. It stopped \d+ s after loading; "
                        r"loading it again in 1 s\.", said[2]), said
    with openai_client(served, timeout=60) as client:
        assert client.completions.create(model=served.model_id, prompt="1, 2,", max_tokens=4).choices[0].text


def test_an_engine_killed_while_it_loads_again_is_tried_again_and_the_server_answers(served):
    """Mid-load: the engine started after a crash is killed before it has loaded; the server says
    so, tries again after a pause, and answers."""
    reloads = served.stderr.count("hearth: The model is loaded again.")
    first = engine_of(served)
    os.kill(first, signal.SIGKILL)
    second = engine_of(served, not_this=first)  # started at once: still loading
    os.kill(second, signal.SIGABRT)
    loaded_again(served, reloads + 1)
    assert re.search(r"hearth: Loading the model again failed: Loading \S+ failed: llama\.cpp crashed \(SIGABRT\)[^\n]*"
                     r"\. Trying again in 1 s\.", served.stderr), served.stderr
    with openai_client(served, timeout=60) as client:
        assert client.completions.create(model=served.model_id, prompt="1, 2,", max_tokens=4).choices[0].text
