"""ProcessBackend (#29, under way): the real Gemma loaded and run by llama.cpp in a process of its
own, through the same Backend interface the in-process Engine has: the same greedy text, Stop
within a token, refusals raised as in process, and a child killed mid-reply (SIGKILL, SIGABRT)
ending that reply as a failed one that says so, never an exception mid-reply, nor the caller's end."""

from __future__ import annotations

import json
import os
import select
import signal
import threading
import time

import pytest
from support.engine_children import our_engine_children

from app.engine.backend import PolledReply, closing_reply
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


def test_a_reply_read_as_it_comes_is_the_one_read_blocking(backend):
    """A ChildReply is a PolledReply (what `hearth serve`'s loop reads): `ready` gives what has
    come at once, blocking reads and it mix, and the events end in the same ReplyStats."""
    events = []
    with closing_reply(backend.stream(MESSAGES, GREEDY, threading.Event())) as stream:
        assert isinstance(stream, PolledReply)
        events.append(next(stream))
        while not isinstance(events[-1], ReplyStats):
            select.select([stream.fileno()], [], [], 10)
            events.extend(stream.ready())
            if not isinstance(events[-1], ReplyStats):
                events.append(next(stream))
        assert stream.ready() == [] and next(stream, None) is None
    text, stats = reply(backend)
    assert "".join(e for e in events if isinstance(e, str)) == text
    assert (events[-1].stop_reason, events[-1].completion_tokens) == (stats.stop_reason, stats.completion_tokens)


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


def test_text_asked_at_a_pace_is_joined_in_the_child_and_is_the_same_text(backend):
    """The window asks for text at most every 40 ms (text_interval_s), and the child joins what
    comes sooner, so only that crosses the socket. With an interval longer than any reply, the
    first token's text comes at once and the rest as one piece before the ReplyStats: the text
    read token by token, the same tokens counted."""
    by_token, stats = reply(backend)
    with closing_reply(backend.stream(MESSAGES, GREEDY, threading.Event(), text_interval_s=3600.0)) as events:
        paced = list(events)
    pieces = [event for event in paced if isinstance(event, str)]
    assert len(pieces) == 2 and "".join(pieces) == by_token
    assert by_token.startswith(pieces[0]) and len(pieces[0]) < len(by_token) / 4
    assert isinstance(paced[-1], ReplyStats) and paced[-1].completion_tokens == stats.completion_tokens == 24


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
    killed_at = []

    def kill(count):
        if count == 2:
            killed_at.append(time.monotonic())
            os.kill(backend.pid, sig)

    text, stats = reply(backend, SamplingParams(temperature=0.0, max_tokens=400), on_piece=kill)
    # Heard when the socket closes, not after a wait of EXIT_WAIT_S (5 s) on a lock the reader of
    # the child's last words needed too, as a first version did.
    assert time.monotonic() - killed_at[0] < 2.0
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


def test_a_reply_its_reader_leaves_is_stopped_in_the_child_and_the_next_is_its_own(backend):
    """A consumer that stops reading early (closing the stream) must not leave the old reply's
    frames in the socket for the next request to read as its own."""
    expected, _ = reply(backend)
    stream = backend.stream(MESSAGES, SamplingParams(temperature=0.0, max_tokens=400), threading.Event())
    assert isinstance(next(stream), str)
    stream.close()  # left after its first piece
    again, stats = reply(backend)
    assert again == expected and stats.stop_reason is StopReason.LENGTH


def test_a_file_that_is_no_model_is_refused_as_in_process(tmp_path):
    from app.engine.gguf.modelfile import ModelFileError

    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(ModelFileError):
        ProcessBackend.open(fake, LoadOptions(n_ctx=512))


def test_a_child_that_dies_while_loading_is_said_and_leaves_nothing_running(gemma_path):
    others = set(our_engine_children())  # another test's, in this process: never killed here

    def progress(_share):
        for pid in set(our_engine_children()) - others:
            os.kill(pid, signal.SIGKILL)

    with pytest.raises(EngineCrashed, match=r"Loading gemma.* failed: llama.cpp was killed \(SIGKILL"):
        ProcessBackend.open(gemma_path, LoadOptions(n_ctx=512), progress=progress)
    assert set(our_engine_children()) <= others


def test_cancel_while_loading_is_a_cancelled_load(gemma_path):
    from app.engine.backend import LoadCancelled

    others = set(our_engine_children())
    cancel = threading.Event()
    with pytest.raises(LoadCancelled):
        ProcessBackend.open(gemma_path, LoadOptions(n_ctx=512), progress=lambda share: cancel.set(), cancel=cancel)
    assert set(our_engine_children()) <= others


def follow_up_stats(backend, text: str) -> ReplyStats:
    """Conversation 7 asked again, after its reply `text`: the second reply's statistics."""
    follow_up = [*MESSAGES, {"role": "assistant", "content": text}, {"role": "user", "content": "And then?"}]
    backend.prepare(7)
    with closing_reply(backend.stream(follow_up, GREEDY, threading.Event(), conversation_id=7)) as events:
        [stats] = [event for event in events if isinstance(event, ReplyStats)]
    return stats


def first_reply(backend) -> str:
    with closing_reply(backend.stream(MESSAGES, GREEDY, threading.Event(), conversation_id=7)) as events:
        return "".join(event for event in events if isinstance(event, str))


def test_a_conversations_saved_state_outlives_its_child(gemma_path, tmp_path):
    """The window's reload after a crash starts a new child over the same folder of saved KV
    states: the conversation is not read again from its start."""
    from app.engine.kv.cache import StateCache

    states = StateCache(tmp_path / "states").place()
    first = ProcessBackend.open(gemma_path, LoadOptions(n_ctx=1024), states=states)
    try:
        text = first_reply(first)
    finally:
        first.close()  # the child keeps the conversation's state as it exits, as an unload does
    second = ProcessBackend.open(gemma_path, LoadOptions(n_ctx=1024), states=states)
    try:
        stats = follow_up_stats(second, text)
    finally:
        second.close()
    assert stats.evaluated_prompt_tokens < stats.prompt_tokens / 2, stats


def test_saved_states_cleared_in_the_window_are_gone_from_the_child_too(gemma_path, tmp_path):
    """Settings → Clear deletes the files in the window's process; the child, which keeps the
    states it saved in memory as well, is told, so the conversation is read again in full."""
    from app.engine.kv.cache import StateCache

    window_cache = StateCache(tmp_path / "states")
    backend = ProcessBackend.open(gemma_path, LoadOptions(n_ctx=1024), states=window_cache.place())
    try:
        text = first_reply(backend)
        backend.prepare(8)  # another conversation opened: 7's state is saved (in memory and on disk)
        other = [{"role": "user", "content": "Something else entirely: name three rivers."}]
        with closing_reply(backend.stream(other, GREEDY, threading.Event(), conversation_id=8)) as events:
            list(events)  # the KV cache holds conversation 8 now
        assert window_cache.usage()[1] == 1
        window_cache.clear()
        backend.saved_states_changed(window_cache.place(), cleared=True)
        stats = follow_up_stats(backend, text)
    finally:
        backend.close()
    assert stats.evaluated_prompt_tokens > stats.prompt_tokens / 2, stats  # restored, it would be 11 of 58


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


def test_the_child_says_what_gpus_llama_cpp_sees_before_any_model():
    """What the window's panel and memory plan ask, answered without llama.cpp in the asker."""
    from app.engine.llama.devices import device_report

    backend = ProcessBackend.start()
    try:
        theirs, ours = backend.devices(), device_report()  # this machine's own answer, asked here too
        assert (theirs.offload, theirs.gpu_total) == (ours.offload, ours.gpu_total)  # free memory moves
    finally:
        backend.close()


def test_the_windows_opener_keeps_the_child_it_asked_only_when_told_to(gemma_path):
    """Asked at start, the child stays for the first load (which then finds Python and llama.cpp
    started); asked after an unload, it exits once it has said, so the memory comes back."""
    from app.engine.process.opening import ChildOpener
    from app.engine.types import LocalModel

    others = set(our_engine_children())
    opener = ChildOpener()
    try:
        opener.devices(keep=False)
        assert set(our_engine_children()) <= others
        opener.devices()
        [kept] = set(our_engine_children()) - others
        backend = opener(LocalModel(gemma_path), LoadOptions(n_ctx=512))
        assert backend.pid == kept  # the first load is that child's
        backend.close()
    finally:
        opener.close()
    assert set(our_engine_children()) <= others
