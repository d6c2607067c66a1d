"""The Qt bridge with the real engine: nothing blocks the GUI thread, stop works, failures are kept apart.
Remote models go through the same bridge (the misbehaving stand-in server, tests/support/remote_servers.py)."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from PySide6.QtCore import QElapsedTimer, QTimer
from support.engine_children import maps, our_engine_children
from support.remote_servers import free_port, stand_in  # noqa: F401 - a fixture

from app.engine.sampling import SamplingParams
from app.engine.types import LoadOptions, LocalModel, RemoteModel, ServerConfig
from app.owners.bridge import EngineBridge
from app.owners.engine_worker import CHUNK_INTERVAL_S

PARAMS = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=12)


@pytest.fixture(scope="module")
def bridge(gemma_path, qapp):
    bridge = EngineBridge()
    yield bridge
    bridge.shutdown()


@pytest.fixture(scope="module")
def loaded(bridge, gemma_path, qapp):

    results = []
    bridge.modelLoaded.connect(results.append)
    bridge.load(LocalModel(gemma_path), LoadOptions(n_ctx=1024))
    deadline = time.monotonic() + 60
    while not results and time.monotonic() < deadline:
        qapp.processEvents()
        time.sleep(0.01)
    assert results, "the model did not load"
    return results[0]


def ask(text):
    return [{"role": "user", "content": text}]


def test_model_loaded_reports_info_and_device(loaded, gemma_path):
    assert loaded.path == gemma_path
    assert loaded.info.architecture == "gemma3"
    assert loaded.device.describe().startswith("CPU (") or loaded.device.backend == "CUDA"
    assert loaded.n_ctx == 1024 and loaded.template_name == "fallback:gemma"


def test_reply_streams_in_chunks_and_finishes(bridge, loaded, qtbot):
    chunks = []
    bridge.chunk.connect(chunks.append)
    try:
        with qtbot.waitSignal(bridge.replyFinished, timeout=30_000) as finished:
            assert bridge.generate(ask("The capital of France is"), PARAMS)
        text, stats = finished.args
        assert "".join(chunks) == text and text
        assert stats.completion_tokens == 12 and stats.stop_reason == "length"
        assert not bridge.generating
    finally:
        bridge.chunk.disconnect(chunks.append)


def test_a_replys_text_reaches_the_window_at_the_pace_it_is_shown_not_per_token(bridge, loaded, qtbot):
    """The worker asks the engine's process for text every CHUNK_INTERVAL_S, so the GUI thread
    is woken at most that often however fast the model writes (#31): never more chunks than
    intervals in the reply's time, plus the first and the last. A machine too slow to write two
    tokens in an interval gets a chunk per token, and then the bound holds all the more."""
    chunks = []
    bridge.chunk.connect(chunks.append)
    try:
        started = time.perf_counter()
        with qtbot.waitSignal(bridge.replyFinished, timeout=60_000) as finished:
            assert bridge.generate(ask("Count from one to two hundred."),
                                   SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=160))
        elapsed = time.perf_counter() - started
        text, stats = finished.args
        assert "".join(chunks) == text and stats.completion_tokens >= 40
        assert len(chunks) <= elapsed / CHUNK_INTERVAL_S + 2
    finally:
        bridge.chunk.disconnect(chunks.append)


def test_second_send_while_generating_is_refused(bridge, loaded, qtbot):
    with qtbot.waitSignal(bridge.replyFinished, timeout=30_000):
        assert bridge.generate(ask("One"), PARAMS)
        assert not bridge.generate(ask("Two"), PARAMS)


def test_gui_thread_stays_responsive_while_generating(bridge, loaded, qtbot):
    gaps = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.elapsed()]

    def tick():
        now = clock.elapsed()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    timer.start()
    with qtbot.waitSignal(bridge.replyFinished, timeout=60_000):
        bridge.generate(ask("Write a poem about rivers " * 20), PARAMS.with_changes(max_tokens=40))
    timer.stop()
    assert len(gaps) > 20
    assert max(gaps) < 250, f"the GUI thread stalled for {max(gaps)} ms"


def test_stop_keeps_partial_reply(bridge, loaded, qtbot):
    chunks = []

    def on_chunk(text):
        chunks.append(text)
        bridge.stop()

    bridge.chunk.connect(on_chunk)
    try:
        with qtbot.waitSignal(bridge.replyFinished, timeout=30_000) as finished:
            bridge.generate(ask("Tell me a long story"), PARAMS.with_changes(max_tokens=400))
    finally:
        bridge.chunk.disconnect(on_chunk)
    text, stats = finished.args
    assert stats.stop_reason == "cancelled"
    assert text.startswith("".join(chunks)) and 0 < stats.completion_tokens < 400


def test_template_failure_is_reported_not_raised(bridge, loaded, qtbot):
    with qtbot.waitSignal(bridge.failed, timeout=30_000) as failed:
        bridge.generate(ask("word " * 3000), PARAMS)
    assert "too long for the context window" in failed.args[0]
    assert not bridge.generating


def test_bad_model_fails_and_previous_model_stays_usable(bridge, loaded, qtbot, tmp_path):
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + b"\xff" * 100)
    replaced = []
    bridge.modelLoaded.connect(replaced.append)
    with qtbot.waitSignal(bridge.loadFailed, timeout=30_000) as failed:
        bridge.load(LocalModel(corrupt))
    bridge.modelLoaded.disconnect(replaced.append)
    assert "corrupt.gguf" in failed.args[0]
    assert replaced == []  # the loaded model is still the one loaded
    with qtbot.waitSignal(bridge.replyFinished, timeout=30_000) as finished:
        bridge.generate(ask("Hello"), PARAMS.with_changes(max_tokens=3))
    assert finished.args[1].completion_tokens == 3


def test_a_prompt_longer_than_a_batch_reports_its_progress_before_the_reply(bridge, loaded, qtbot):
    events = []

    def on_progress(done, total):
        events.append(("progress", done, total))

    def on_chunk(_text):
        events.append(("chunk",))

    bridge.promptProgress.connect(on_progress)
    bridge.chunk.connect(on_chunk)
    try:
        long_prompt = "Rivers carry sediment to the sea, where it settles into a delta. " * 45  # ~600 tokens
        with qtbot.waitSignal(bridge.replyFinished, timeout=60_000) as finished:
            assert bridge.generate(ask(long_prompt), PARAMS.with_changes(max_tokens=2))
        stats = finished.args[1]
        progress = [event for event in events if event[0] == "progress"]
        assert stats.evaluated_prompt_tokens > 512  # more than one llama.cpp batch
        assert [done for _, done, _ in progress] == sorted({done for _, done, _ in progress})  # rising
        assert progress[0][1] == 512 and progress[-1][1:] == (stats.evaluated_prompt_tokens,) * 2
        assert events.index(progress[-1]) < events.index(("chunk",))  # all of it before the reply
    finally:
        bridge.promptProgress.disconnect(on_progress)
        bridge.chunk.disconnect(on_chunk)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads Linux's list of mapped files")
def test_the_model_is_mapped_by_its_own_process_alone_and_unload_ends_it(gemma_path, qapp, qtbot, tmp_path):
    """The window's process never maps the weights (nor loads llama.cpp); the engine's process
    does, once, and Unload ends it, so its memory is the system's again."""
    # Its own bridge and its own name for the file: the module's bridge keeps the model mapped.
    model = tmp_path / "unload-me.gguf"
    try:
        os.link(gemma_path, model)
    except OSError:  # another file system
        shutil.copyfile(gemma_path, model)
    others = set(our_engine_children())  # the module's bridge has its own
    bridge = EngineBridge()
    try:
        with qtbot.waitSignal(bridge.modelLoaded, timeout=60_000):
            bridge.load(LocalModel(model), LoadOptions(n_ctx=256))
        [child] = set(our_engine_children()) - others
        assert maps(child, model) and not maps("self", model)
        with qtbot.waitSignal(bridge.modelUnloaded, timeout=30_000):
            bridge.unload()
        assert child not in our_engine_children()  # the child, its mapping and its file handle are gone
        with qtbot.waitSignal(bridge.failed, timeout=30_000) as failed:
            assert bridge.generate(ask("Hello"), PARAMS)
        assert failed.args[0] == "No model is loaded."
    finally:
        bridge.shutdown()


@pytest.fixture
def remote_bridge(qapp):
    """A bridge as the GUI makes it (local models in processes of their own), for a remote model."""
    bridge = EngineBridge()
    yield bridge
    bridge.shutdown()


def test_a_remote_model_loads_without_a_child_and_its_failures_are_the_servers_words(
        remote_bridge, qtbot, stand_in):  # noqa: F811 - the fixture imported above
    bridge = remote_bridge
    with qtbot.waitSignal(bridge.modelLoaded, timeout=10_000) as loaded:
        bridge.load(RemoteModel(ServerConfig(stand_in.url("busy"), "Lab box"), "stand-in"))
    description = loaded.args[0]
    assert description.is_remote and description.info is None and description.path is None
    with qtbot.waitSignal(bridge.failed, timeout=10_000) as failed:
        assert bridge.generate(ask("Hello"), PARAMS)
    # The server's message as it is: not "The reply could not start: …"
    assert failed.args[0].startswith("Lab box (") and "(429): try again in 7 s" in failed.args[0]
    assert not bridge.generating

    nobody = RemoteModel(ServerConfig(f"http://127.0.0.1:{free_port()}/v1", "Gone"), "stand-in")
    with qtbot.waitSignal(bridge.loadFailed, timeout=10_000) as failed:
        bridge.load(nobody)
    assert failed.args[0].startswith("Gone (") and "refused the connection" in failed.args[0]
    with qtbot.waitSignal(bridge.loadFailed, timeout=10_000) as failed:
        bridge.load(RemoteModel(ServerConfig(stand_in.url("ok"), "Lab box"), "no-such-model"))
    assert "has no model “no-such-model”" in failed.args[0] and "“stand-in”" in failed.args[0]


def test_a_server_that_refuses_the_extensions_is_described_again_after_the_reply(
        remote_bridge, qtbot, stand_in):  # noqa: F811
    bridge = remote_bridge
    with qtbot.waitSignal(bridge.modelLoaded, timeout=10_000) as loaded:
        bridge.load(RemoteModel(ServerConfig(stand_in.url("strict")), "stand-in"))
    assert loaded.args[0].unsent_fields == ("repeat_last_n",)
    described = []
    bridge.modelDescribed.connect(described.append)
    with qtbot.waitSignal(bridge.replyFinished, timeout=10_000) as finished:
        bridge.generate(ask("Hello"), PARAMS)
    assert finished.args[0] == "Hello there."
    qtbot.waitUntil(lambda: bool(described), timeout=2_000)
    assert described[0].unsent_fields == ("repeat_last_n", "top_k", "min_p", "repeat_penalty")
    with qtbot.waitSignal(bridge.replyFinished, timeout=10_000):  # the same from now on: said once
        bridge.generate(ask("Again"), PARAMS)
    qtbot.wait(50)
    assert len(described) == 1


def _gpu_answers(kind: str, asked: list[bool]):
    """What llama.cpp says of the GPUs, scripted: no GPU is lent to this project (the child's real
    answer on this machine is tested in tests/engine/test_process_backend.py). The worker is real."""
    from app.engine.types import DeviceReport, OffloadSupport

    def devices(keep: bool) -> DeviceReport:
        asked.append(keep)
        if kind == "cpu":
            return DeviceReport(OffloadSupport("CPU", False))
        return DeviceReport(OffloadSupport("CUDA", True), 8 * 2**30, (5 + len(asked)) * 2**30)

    return devices


def test_an_unload_asks_again_what_the_gpus_have_free_of_a_child_that_does_not_stay(script, gemma_path, qapp):
    """So the next memory plan counts the memory the model gave back; and on a machine without
    GPUs nothing is asked (a child would only cost a start)."""
    from app.common.newest import NewestWins
    from app.owners.engine_worker import EngineWorker

    for kind, expected_asks in (("gpu", [True, False]), ("cpu", [True])):
        asked: list[bool] = []
        worker = EngineWorker(script.open, _gpu_answers(kind, asked))
        reports = []
        worker.devicesKnown.connect(reports.append)
        worker.ask_devices()  # as the window does once shown: a child kept for the first load
        worker.load(LocalModel(gemma_path), LoadOptions(), NewestWins().begin())
        worker.unload()
        assert asked == expected_asks, kind
        assert [report.gpu_free for report in reports] == ([6 * 2**30, 7 * 2**30] if kind == "gpu" else [None])
