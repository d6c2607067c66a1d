"""LocalServer, the GUI's "Serve the loaded model", read by the official `openai` client.

What the server decides (which model, the key, the port, the line's limit, stopping) is tested
over scripted backends; what the reply is made of (a stream, byte for byte the window's reply,
a line shared with the window's own replies, a client that leaves) on the real Gemma, with the
window's own owner objects (EngineBridge, ModelSession, ChatSession). The client runs on a
thread, as another program would; the test's thread runs Qt's loop meanwhile.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import httpx
import openai
import pytest
from support.settings_file import ini_file
from support.window_stack import ModelStack

from app.engine.opening import open_backend
from app.engine.sampling import SamplingParams
from app.engine.types import ModelSettings, ReplyStats, StopReason
from app.owners.bridge_completions import NO_MODEL, STOPPED, BridgeCompletions
from app.owners.chat_session import ChatSession
from app.owners.local_server import KEY_NEEDED, LocalServer
from app.owners.model_session import ModelSession
from app.owners.settings import ServeAddress, Settings
from app.serve.completions import Job, QueueFull
from app.store import ConversationStore

WAIT_MS = 10_000
REPLY_MS = 60_000
COUNTING = "1, 2, 3, 4, 5, 6, 7, 8,"  # greedy, Gemma counts on for thousands of tokens
QUESTION = "Write two sentences about the sea."


def in_thread(call: Callable[[], object]) -> Future:
    """`call()` on a thread of its own, as another program's request; its outcome in a Future."""
    future: Future = Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which re-raises it
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


def outcome(qtbot, future: Future, timeout_ms: int = WAIT_MS):
    """The future's result (or its exception, raised), Qt's loop running while it is awaited."""
    qtbot.waitUntil(future.done, timeout=timeout_ms)
    return future.result()


def client(url: str, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=60)


def start(qtbot, server: LocalServer, host: str = "127.0.0.1", port: int = 0, key: str | None = None) -> str:
    with qtbot.waitSignal(server.started, timeout=WAIT_MS) as started:
        assert server.start(host, port, key)
    assert server.serving and server.url == started.args[0]
    return started.args[0]


@pytest.fixture
def served(qtbot, scripted_models):
    """A LocalServer over scripted backends (nothing loaded yet), stopped afterwards."""
    server = LocalServer(scripted_models._bridge, scripted_models)
    yield server
    server.shutdown()


def load(qtbot, models: ModelSession, path: str) -> None:
    with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS):
        models.load(Path(path))


# --- over scripted backends ----------------------------------------------------------------


def test_the_served_model_follows_the_window_and_none_loaded_is_a_clear_503(qtbot, served, scripted_models, script):
    url = start(qtbot, served)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    with client(url) as api:
        with pytest.raises(openai.APIStatusError) as refused:
            outcome(qtbot, in_thread(api.models.list))
        assert refused.value.status_code == 503 and refused.value.body["message"] == NO_MODEL

        load(qtbot, scripted_models, "/models/gemma.gguf")
        assert [m.id for m in outcome(qtbot, in_thread(api.models.list)).data] == ["gemma.gguf"]
        ask = lambda model: lambda: api.chat.completions.create(  # noqa: E731
            model=model, messages=[{"role": "user", "content": "Hi"}])
        assert outcome(qtbot, in_thread(ask("gemma.gguf"))).choices[0].message.content == "Hello there."

        load(qtbot, scripted_models, "/models/other.gguf")  # another model loads: it is the one served
        with pytest.raises(openai.NotFoundError):
            outcome(qtbot, in_thread(ask("gemma.gguf")))
        script.replies = ["From the other one."]
        assert outcome(qtbot, in_thread(ask("other.gguf"))).choices[0].message.content == "From the other one."


def test_a_host_beyond_this_machine_needs_an_api_key_and_then_asks_for_it(qtbot, served, scripted_models):
    with qtbot.waitSignal(served.failed, timeout=WAIT_MS) as failed:
        served.start("0.0.0.0", 0, None)
    assert failed.args[0] == KEY_NEEDED.format(host="0.0.0.0") and not served.active
    url = start(qtbot, served, "0.0.0.0", 0, "s3cret")
    assert served.on_network
    load(qtbot, scripted_models, "/models/gemma.gguf")
    local = url.replace("0.0.0.0", "127.0.0.1")
    with client(local, "wrong") as api:
        with pytest.raises(openai.AuthenticationError):
            outcome(qtbot, in_thread(api.models.list))
    with client(local, "s3cret") as api:
        assert [m.id for m in outcome(qtbot, in_thread(api.models.list)).data] == ["gemma.gguf"]


def test_web_pages_may_call_it_only_from_the_origins_it_is_given(qtbot, served):
    """No origins by default, as `hearth serve` without --cors-origin (tests/serve/test_serve_cors.py)."""
    preflight = lambda url, origin: lambda: httpx.options(url + "/chat/completions", headers={  # noqa: E731
        "Origin": origin, "Access-Control-Request-Method": "POST"})
    url = start(qtbot, served)
    refused = outcome(qtbot, in_thread(preflight(url, "http://localhost:3000")))
    assert refused.status_code == 405 and "access-control-allow-origin" not in refused.headers
    with qtbot.waitSignal(served.stopped, timeout=WAIT_MS):
        served.stop()

    with qtbot.waitSignal(served.failed, timeout=WAIT_MS) as failed:
        served.start("127.0.0.1", 0, cors_origins=["http://localhost:3000/"])
    assert failed.args[0].startswith("CORS: ") and "trailing /" in failed.args[0] and not served.active
    with qtbot.waitSignal(served.started, timeout=WAIT_MS) as started:
        served.start("127.0.0.1", 0, cors_origins=["http://localhost:3000"])
    url = started.args[0]
    allowed = outcome(qtbot, in_thread(preflight(url, "http://localhost:3000")))
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "http://localhost:3000"
    elsewhere = outcome(qtbot, in_thread(preflight(url, "http://evil.example")))
    assert elsewhere.status_code == 403 and "access-control-allow-origin" not in elsewhere.headers


def test_a_port_in_use_is_said_and_stopping_closes_the_port(qtbot, served):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with qtbot.waitSignal(served.failed, timeout=WAIT_MS) as failed:
            served.start("127.0.0.1", port)
        assert failed.args[0].startswith(f"Could not serve at 127.0.0.1:{port}: ") and not served.active
    url = start(qtbot, served)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with qtbot.waitSignal(served.stopped, timeout=WAIT_MS) as stopped:
        served.stop()
    assert stopped.args[0] == "" and served.url is None and not served.active
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_starting_and_stopping_never_wait_on_the_gui_thread(qtbot, served):
    began = time.perf_counter()
    served.start("127.0.0.1", 0)
    served.stop()  # before it came up: it stops as soon as it does
    assert time.perf_counter() - began < 0.05
    with qtbot.waitSignal(served.stopped, timeout=WAIT_MS) as stopped:
        pass
    assert stopped.args[0] == "" and not served.active


def test_the_line_is_bounded_and_stopping_refuses_what_waits(qtbot, scripted_models, script):
    load(qtbot, scripted_models, "/models/gemma.gguf")
    script.hold = True
    completions = BridgeCompletions(scripted_models._bridge, max_waiting=1)
    running, waiting = [], []
    completions.submit(Job(SamplingParams(), messages=[{"role": "user", "content": "a"}]), running.append)
    qtbot.waitUntil(lambda: bool(running), timeout=WAIT_MS)
    completions.submit(Job(SamplingParams(), messages=[{"role": "user", "content": "b"}]), waiting.append)
    with pytest.raises(QueueFull):
        completions.submit(Job(SamplingParams(), messages=[{"role": "user", "content": "c"}]), print)
    completions.stop()
    assert [event.reason.value for event in waiting] == ["unavailable"] and waiting[0].message == STOPPED
    qtbot.waitUntil(lambda: isinstance(running[-1], ReplyStats), timeout=WAIT_MS)
    assert running[-1].stop_reason is StopReason.CANCELLED
    late = []
    completions.submit(Job(SamplingParams(), messages=[{"role": "user", "content": "d"}]), late.append)
    assert late[0].message == STOPPED


# --- on the real model -----------------------------------------------------------------------


class Window:
    """The window's owner objects over the real Gemma (no widgets): bridge, model, and a
    LocalServer serving it; a ChatSession per test."""

    def __init__(self, root: Path, qapp, gemma_path: Path):
        self.stack = ModelStack.start(  # the engine's process is the GUI opener's business, not tested here
            root, opener=open_backend,
            model_settings={gemma_path.name: ModelSettings(n_ctx=1024, cpu_threads=1)})  # one thread: fast enough, and fair to others
        self.bridge, self.models = self.stack.bridge, self.stack.models
        loaded = []
        self.models.modelLoaded.connect(loaded.append)
        self.models.load(gemma_path)
        deadline = time.monotonic() + 60
        while not loaded and time.monotonic() < deadline:
            qapp.processEvents()
            time.sleep(0.01)
        assert loaded, "the model did not load"
        self.model_id = gemma_path.name

    def sampling(self, **values) -> SamplingParams:
        """Give the window's replies these sampling settings; what they are now."""
        settings = self.models.settings
        self.models.update_settings(settings.with_changes(sampling=SamplingParams(**values)))
        return self.models.settings.sampling

    def close(self) -> None:
        self.stack.shutdown()


@pytest.fixture(scope="module")
def window(qapp, gemma_path, tmp_path_factory):
    window = Window(tmp_path_factory.mktemp("served-window"), qapp, gemma_path)
    yield window
    window.close()


@pytest.fixture
def real(qtbot, window, tmp_path):
    """The window's objects, a ChatSession over a fresh database, and a LocalServer serving."""
    store = ConversationStore(tmp_path / "conversations.sqlite3")
    session = ChatSession(store, window.bridge, window.models)
    server = LocalServer(window.bridge, window.models)
    url = start(qtbot, server)
    yield window, session, server, url
    server.shutdown()
    store.close()


def window_reply(qtbot, session: ChatSession, text: str):
    with qtbot.waitSignal(session.replyFinished, timeout=REPLY_MS) as finished:
        assert session.send(text)
        session.new_conversation()  # the next send starts afresh (this reply goes on in its own)
    return finished.args[0]


def stream_chat(url: str, model: str, params: SamplingParams, into: list[str]) -> str:
    """A streamed chat, its pieces appended to `into` as they arrive; the whole text."""
    with client(url) as api:
        stream = api.chat.completions.create(
            model=model, messages=[{"role": "user", "content": QUESTION}], stream=True,
            temperature=params.temperature, top_p=params.top_p, max_tokens=params.max_tokens, seed=params.seed,
            presence_penalty=params.presence_penalty, frequency_penalty=params.frequency_penalty,
            extra_body={"top_k": params.top_k, "min_p": params.min_p, "repeat_penalty": params.repeat_penalty})
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                into.append(chunk.choices[0].delta.content)
    return "".join(into)


def test_a_streamed_reply_is_byte_for_byte_the_windows_reply(qtbot, real):
    window, session, _server, url = real
    params = window.sampling(temperature=0.9, seed=1234, max_tokens=24)

    def after_another_reply(reply: Callable[[], str]) -> str:
        """`reply()` with the engine's cache as the other one found it: the prompt's logits
        come from one batch or another depending on what is cached, which moves a sampled
        token now and then (GUI after GUI as much as served after GUI)."""
        with client(url) as api:
            api.chat.completions.create(model=window.model_id, messages=[{"role": "user", "content": "Hi"}],
                                        max_tokens=1)
        return reply()

    pieces: list[str] = []
    served = outcome(qtbot, in_thread(lambda: after_another_reply(
        lambda: stream_chat(url, window.model_id, params, pieces))), REPLY_MS)
    assert len(pieces) > 3, "streamed in pieces"
    outcome(qtbot, in_thread(lambda: after_another_reply(lambda: "")), REPLY_MS)
    assert window_reply(qtbot, session, QUESTION).text == served


def test_a_send_while_a_served_reply_runs_waits_for_it_and_the_two_never_interleave(qtbot, real):
    window, session, _server, url = real
    params = window.sampling(temperature=0.0, max_tokens=12)
    alone = window_reply(qtbot, session, QUESTION).text
    served_alone = outcome(qtbot, in_thread(lambda: stream_chat(url, window.model_id, params.with_changes(
        max_tokens=30), [])), REPLY_MS)

    pieces: list[str] = []
    ended: list[float] = []
    began: list[float] = []
    session.waitingChanged.connect(lambda reason: began.append(time.monotonic()) if not reason else None)
    served = in_thread(lambda: (stream_chat(url, window.model_id, params.with_changes(max_tokens=30), pieces),
                                ended.append(time.monotonic()))[0])
    qtbot.waitUntil(lambda: bool(pieces), timeout=REPLY_MS)  # the served reply is being written
    with qtbot.waitSignal(session.replyFinished, timeout=REPLY_MS) as finished:
        assert session.send(QUESTION)
        assert session.waiting
    assert outcome(qtbot, served) == served_alone and finished.args[0].text == alone
    assert began and began[0] >= ended[0] - 0.05, "the window's reply began only once the served one had ended"


def test_a_client_that_leaves_mid_stream_stops_its_reply_and_the_window_goes_next(qtbot, real):
    window, session, _server, url = real
    window.sampling(temperature=0.0, max_tokens=8)
    pieces: list[str] = []

    def walk_away() -> None:
        with client(url) as api:
            stream = api.completions.create(model=window.model_id, prompt=COUNTING, temperature=0, max_tokens=900,
                                            stream=True)
            for chunk in stream:
                pieces.append(chunk.choices[0].text)
                if len(pieces) == 5:
                    stream.close()
                    return

    outcome(qtbot, in_thread(walk_away), REPLY_MS)
    left = time.monotonic()
    qtbot.waitUntil(lambda: window.bridge.served_pending == 0, timeout=WAIT_MS)
    assert time.monotonic() - left < 1.0, "the reply stopped within a token or so"
    asked = time.monotonic()
    with qtbot.waitSignal(session.replyFinished, timeout=REPLY_MS) as finished:
        assert session.send("Hello") and not session.waiting
    assert finished.args[0].status.value == "complete" and time.monotonic() - asked < 5


def test_stopping_answers_a_waiting_request_503_and_ends_the_running_reply(qtbot, real):
    window, _session, server, url = real
    pieces: list[str] = []

    def count() -> str:
        with client(url) as api:
            for chunk in api.completions.create(model=window.model_id, prompt=COUNTING, temperature=0,
                                                max_tokens=900, stream=True):
                pieces.append(chunk.choices[0].text)
        return "".join(pieces)

    def ask() -> object:
        with client(url) as api:
            return api.chat.completions.create(model=window.model_id, messages=[{"role": "user", "content": "Hi"}])

    running = in_thread(count)
    qtbot.waitUntil(lambda: bool(pieces), timeout=REPLY_MS)
    waiting = in_thread(ask)
    qtbot.waitUntil(lambda: window.bridge.served_pending == 2, timeout=WAIT_MS)
    with qtbot.waitSignal(server.stopped, timeout=WAIT_MS) as stopped:
        server.stop()
    assert stopped.args[0] == ""
    with pytest.raises(openai.APIStatusError) as refused:
        outcome(qtbot, waiting)
    assert refused.value.status_code == 503 and refused.value.body["message"] == STOPPED
    try:
        outcome(qtbot, running)
    except openai.APIError:
        pass  # the stream may end with an error event: either way it ended
    assert 0 < len(pieces) < 900 and window.bridge.served_pending == 0


def test_the_address_served_at_is_kept_and_a_hand_edited_one_falls_back(tmp_path):
    store = ini_file(tmp_path / "hearth.ini")
    settings = Settings(store)
    assert settings.serve_address == ServeAddress("127.0.0.1", 8080)
    settings.serve_address = ServeAddress("0.0.0.0", 0)
    assert Settings(store).serve_address == ServeAddress("0.0.0.0", 0)
    store.setValue("serve/port", 70_000)
    store.setValue("serve/host", "  ")
    assert Settings(store).serve_address == ServeAddress()


def test_the_web_pages_origins_are_kept_and_a_hand_edited_non_origin_is_skipped(tmp_path):
    store = ini_file(tmp_path / "hearth.ini")
    assert Settings(store).serve_origins == ()  # no page of any site by default
    Settings(store).serve_origins = ("http://localhost:3000", "*")
    assert Settings(store).serve_origins == ("http://localhost:3000", "*")
    store.setValue("serve/cors_origins", ["HTTP://Example.com", "example.com/", "http://example.com"])
    assert Settings(store).serve_origins == ("http://example.com",)
