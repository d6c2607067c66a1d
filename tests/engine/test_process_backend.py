"""ProcessBackend (#29, under way): the real Gemma loaded and run by llama.cpp in a process of its
own, through the same Backend interface the in-process Engine has: the same greedy text, Stop
within a token, refusals raised as in process, and a child killed mid-reply (SIGKILL, SIGABRT)
ending that reply as a failed one that says so, never an exception mid-reply, nor the caller's end."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from support.engine_children import our_engine_children

from app.engine.backend import closing_reply
from app.engine.context import ContextFullError
from app.engine.options import LoadOptions
from app.engine.process.backend import ProcessBackend
from app.engine.process.engine_process import EngineCrashed
from app.engine.sampling import SamplingParams
from app.engine.templates.limits import TemplateError
from app.engine.types import ReplyStats, StopReason

MESSAGES = [{"role": "user", "content": "Write a long story about a lighthouse keeper and the sea."}]
GREEDY = SamplingParams(temperature=0.0, max_tokens=24, seed=1)


@pytest.fixture
def backend(gemma_path):
    opened = ProcessBackend.open(gemma_path, LoadOptions(n_ctx=1024))
    yield opened
    opened.close()


def reply(backend, params=GREEDY, cancel=None, on_piece=None):
    pieces, stats = [], None
    with closing_reply(backend.stream(MESSAGES, params, cancel or threading.Event())) as events:
        for event in events:
            if isinstance(event, ReplyStats):
                stats = event
            elif isinstance(event, str):
                pieces.append(event)
                if on_piece is not None:
                    on_piece(len(pieces))
    return "".join(pieces), stats


def test_a_reply_is_the_in_process_engines_own(backend, gemma_path):
    from app.engine.llama.generator import Engine

    text, stats = reply(backend)
    in_process = Engine(gemma_path, LoadOptions(n_ctx=1024))
    try:
        expected, _ = reply(in_process)
    finally:
        in_process.close()
    assert text == expected and stats.completion_tokens == 24 and stats.stop_reason is StopReason.LENGTH
    description = backend.describe()
    assert description.path == gemma_path and description.n_ctx == 1024 and description.info.name
    assert backend.pid != os.getpid()


def test_stop_ends_the_reply_at_its_next_token(backend):
    cancel = threading.Event()
    text, stats = reply(backend, SamplingParams(temperature=0.0, max_tokens=400),
                        cancel, lambda count: count == 3 and cancel.set())
    assert stats.stop_reason is StopReason.CANCELLED and 3 <= stats.completion_tokens <= 5 and text


def test_refusals_are_raised_as_in_process(backend):
    with pytest.raises(TemplateError):
        backend.set_template_override("{% if %}")
    with pytest.raises(ContextFullError):
        backend.stream([{"role": "user", "content": "lighthouse " * 3000}], GREEDY, threading.Event())
    text, stats = reply(backend)  # the child goes on after each
    assert text and stats.stop_reason is StopReason.LENGTH


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGABRT], ids=["SIGKILL", "SIGABRT"])
def test_a_child_killed_mid_reply_ends_it_as_interrupted_and_says_how(backend, sig):
    """The text so far is kept, the reply is marked interrupted with the cause, and whoever
    asked (the window's engine thread) is told once, from the child's own end."""
    told = []
    backend.when_gone(told.append)

    def kill(count):
        if count == 2:
            os.kill(backend.pid, sig)
            time.sleep(0.2)

    text, stats = reply(backend, SamplingParams(temperature=0.0, max_tokens=400), on_piece=kill)
    assert text and stats.stop_reason is StopReason.INTERRUPTED
    said = "llama.cpp was killed (SIGKILL" if sig is signal.SIGKILL else "llama.cpp crashed (SIGABRT)"
    assert stats.error.startswith(said) and backend.crashed == stats.error
    deadline = time.monotonic() + 5
    while not told and time.monotonic() < deadline:
        time.sleep(0.01)
    assert told == [stats.error]
    with pytest.raises(EngineCrashed, match=sig.name):
        backend.stream(MESSAGES, GREEDY, threading.Event())
    backend.close()  # after a crash too: nothing raised, nothing left running
    assert backend.pid not in our_engine_children()


def test_a_file_that_is_no_model_is_refused_as_in_process(tmp_path):
    from app.engine.gguf.modelfile import ModelFileError

    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(ModelFileError):
        ProcessBackend.open(fake, LoadOptions(n_ctx=512))
