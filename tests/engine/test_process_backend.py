"""ProcessBackend (#29, under way): the real Gemma loaded and run by llama.cpp in a process of its
own, through the same Backend interface the in-process Engine has: the same greedy text, Stop
within a token, refusals raised as in process, and a child killed mid-reply (SIGKILL, SIGABRT)
ending that reply as a failed one that says so, never an exception mid-reply, nor the caller's end."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from app.engine.backend import closing_reply
from app.engine.context import ContextFullError
from app.engine.options import LoadOptions
from app.engine.process.backend import EngineCrashed, ProcessBackend
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
def test_a_child_killed_mid_reply_ends_it_as_failed_and_says_how(backend, sig):
    def kill(count):
        if count == 2:
            os.kill(backend.pid, sig)
            time.sleep(0.2)

    text, stats = reply(backend, SamplingParams(temperature=0.0, max_tokens=400), on_piece=kill)
    assert text and stats.stop_reason is StopReason.ERROR
    assert stats.error.startswith(f"llama.cpp crashed ({sig.name})") and backend.crashed == stats.error
    with pytest.raises(EngineCrashed, match=sig.name):
        backend.stream(MESSAGES, GREEDY, threading.Event())
    backend.close()  # after a crash too: nothing raised, nothing left running
    assert our_engine_children() == []


def test_a_file_that_is_no_model_is_refused_as_in_process(tmp_path):
    from app.engine.gguf.modelfile import ModelFileError

    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(ModelFileError):
        ProcessBackend.open(fake, LoadOptions(n_ctx=512))


def our_engine_children() -> list[int]:
    """This process's own engine children (never another test worker's), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid() \
                    and b"--engine-child" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_child_that_dies_while_loading_is_said_and_leaves_nothing_running(gemma_path):
    def progress(_share):
        for pid in our_engine_children():
            os.kill(pid, signal.SIGKILL)

    with pytest.raises(EngineCrashed, match=r"Loading gemma.*crashed \(SIGKILL\)"):
        ProcessBackend.open(gemma_path, LoadOptions(n_ctx=512), progress=progress)
    assert our_engine_children() == []


def test_cancel_while_loading_is_a_cancelled_load(gemma_path):
    from app.engine.backend import LoadCancelled

    cancel = threading.Event()
    with pytest.raises(LoadCancelled):
        ProcessBackend.open(gemma_path, LoadOptions(n_ctx=512), progress=lambda share: cancel.set(), cancel=cancel)
    assert our_engine_children() == []


def test_a_conversations_saved_state_outlives_its_child(gemma_path, tmp_path):
    """The window's reload after a crash starts a new child over the same folder of saved KV
    states: the conversation is not read again from its start."""
    states = tmp_path / "states"
    first = ProcessBackend.open(gemma_path, LoadOptions(n_ctx=1024), states=states)
    try:
        with closing_reply(first.stream(MESSAGES, GREEDY, threading.Event(), conversation_id=7)) as events:
            text = "".join(event for event in events if isinstance(event, str))
    finally:
        first.close()  # the child keeps the conversation's state as it exits, as an unload does
    follow_up = [*MESSAGES, {"role": "assistant", "content": text}, {"role": "user", "content": "And then?"}]
    second = ProcessBackend.open(gemma_path, LoadOptions(n_ctx=1024), states=states)
    try:
        second.prepare(7)
        with closing_reply(second.stream(follow_up, GREEDY, threading.Event(), conversation_id=7)) as events:
            [stats] = [event for event in events if isinstance(event, ReplyStats)]
    finally:
        second.close()
    assert stats.evaluated_prompt_tokens < stats.prompt_tokens / 2, stats


def test_a_tool_call_and_log_probabilities_come_through_the_child(tmp_path):
    """The scripted Qwen3 model (its greedy reply is always the call get_weather {"city": "Paris"})
    run in the child: the call's deltas, the whole call and the stop reason arrive typed, as in
    process; and a reply asked with log-probabilities gets one per token, bytes and all."""
    from support.model_files.scripted_models import scripted_models

    from app.engine.logprobs import TokenLogprob
    from app.engine.tools.types import ToolCall, ToolCallDelta
    from app.engine.tools.wire import tool_use_from_openai

    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    backend = ProcessBackend.open(scripted_models()["qwen3"].path, LoadOptions(n_ctx=1024))
    try:
        with closing_reply(backend.stream([{"role": "user", "content": "Weather?"}], GREEDY, threading.Event(),
                                          tools=tool_use_from_openai([weather]))) as events:
            events = list(events)
        [call] = [event for event in events if isinstance(event, ToolCall)]
        assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
        assert any(isinstance(event, ToolCallDelta) for event in events)
        assert events[-1].stop_reason is StopReason.TOOL_CALLS
        with closing_reply(backend.stream([{"role": "user", "content": "Hi"}], GREEDY, threading.Event(),
                                          logprobs=2)) as events:
            events = list(events)
        logprobs = [event for event in events if isinstance(event, TokenLogprob)]
        assert logprobs and all(isinstance(item.piece, bytes) and len(item.top) <= 2 for item in logprobs)
    finally:
        backend.close()
