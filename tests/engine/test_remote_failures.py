"""What a remote model says when the server, or the way to it, fails: one cause each, against
a real local server that misbehaves on purpose (tests/support/remote_servers.py's StandIn) or against
no server at all. A request that cannot start raises RemoteError; a reply that breaks keeps
its text and ends with StopReason.ERROR and the message."""

from __future__ import annotations

import threading
import time

import pytest
from support.remote_servers import free_port, stand_in  # noqa: F401 - a fixture

from app.engine.backend import LoadCancelled
from app.engine.remote.backend import RemoteBackend
from app.engine.remote.errors import RemoteError, RemoteFailure
from app.engine.remote.http import RemoteTimeouts
from app.engine.remote.models import list_models
from app.engine.remote.request import REMOTE_EXTENSION_FIELDS
from app.engine.sampling import SamplingParams
from app.engine.types import RemoteModel, ServerConfig, StopReason

QUICK = RemoteTimeouts(connect=2.0, read=0.3)
HELLO = [{"role": "user", "content": "Hi"}]


def backend_for(url: str, api_key: str | None = None, timeouts: RemoteTimeouts = QUICK) -> RemoteBackend:
    """A backend for the stand-in's model, without `open`'s check (so a chat meets the mode)."""
    return RemoteBackend(RemoteModel(ServerConfig(url, api_key=api_key), "stand-in"), timeouts)


def failure_of(call) -> RemoteError:
    with pytest.raises(RemoteError) as raised:
        call()
    return raised.value


def reply(backend: RemoteBackend, cancel: threading.Event | None = None):
    events = list(backend.stream(HELLO, SamplingParams(max_tokens=16), cancel or threading.Event()))
    return events[:-1], events[-1]


def one_line(message: str) -> bool:
    return message.isprintable() and "\x1b" not in message and len(message) < 600


# --- a request that cannot start -----------------------------------------------------------------

def test_nothing_listening_is_a_refused_connection():
    url = f"http://127.0.0.1:{free_port()}/v1"
    error = failure_of(lambda: list_models(ServerConfig(url, "Lab box"), QUICK))
    assert error.failure is RemoteFailure.REFUSED
    assert str(error).startswith(f"Lab box ({url}) refused the connection") and "running" in str(error)


def test_a_host_that_does_not_exist_is_a_name_failure():
    error = failure_of(lambda: list_models(ServerConfig("http://hearth-test.invalid:8080/v1"), QUICK))
    assert error.failure is RemoteFailure.DNS and "does not resolve" in str(error)


def test_https_to_a_plain_server_is_a_tls_failure(stand_in):  # noqa: F811
    error = failure_of(lambda: list_models(ServerConfig(stand_in.url("ok").replace("http:", "https:")), QUICK))
    assert error.failure is RemoteFailure.TLS and "http://, not https://" in str(error)


def test_a_missing_or_wrong_key_is_refused_and_the_right_one_is_sent_as_bearer(stand_in):  # noqa: F811
    for key in (None, "wrong-key"):
        error = failure_of(lambda: RemoteBackend.open(RemoteModel(ServerConfig(stand_in.url("auth"), api_key=key), "stand-in"), QUICK))
        assert error.failure is RemoteFailure.AUTH and error.status == 401
        assert "API key" in str(error) and error.server_message == "Incorrect API key provided."
    backend = RemoteBackend.open(RemoteModel(ServerConfig(stand_in.url("auth"), api_key="good-key"), "stand-in"), QUICK)
    pieces, stats = reply(backend)
    assert "".join(pieces) == "Hello there." and stats.stop_reason is StopReason.END_OF_TURN
    assert stand_in.requests[-1].headers["Authorization"] == "Bearer good-key"
    backend.close()


def test_an_unknown_model_is_said_with_its_name(stand_in):  # noqa: F811
    error = failure_of(lambda: reply(backend_for(stand_in.url("missing"))))
    assert error.failure is RemoteFailure.UNKNOWN_MODEL and error.status == 404
    assert "“stand-in”" in str(error) and "does not exist" in str(error)


def test_an_address_that_is_not_a_server_says_check_the_address(stand_in):  # noqa: F811
    error = failure_of(lambda: list_models(ServerConfig(stand_in.url("nothing")), QUICK))
    assert error.failure is RemoteFailure.NOT_FOUND and "/v1" in str(error)


def test_a_redirect_says_where_to(stand_in):  # noqa: F811
    error = failure_of(lambda: reply(backend_for(stand_in.url("moved"))))
    assert error.failure is RemoteFailure.NOT_FOUND and error.status == 301
    assert "redirects to https://elsewhere.example/v1/chat/completions (301)" in str(error)


def test_a_rate_limit_says_when_to_try_again(stand_in):  # noqa: F811
    error = failure_of(lambda: reply(backend_for(stand_in.url("busy"))))
    assert error.failure is RemoteFailure.RATE_LIMITED and error.retry_after_s == 7
    assert "try again in 7 s" in str(error)


def test_a_server_error_quotes_the_server(stand_in):  # noqa: F811
    error = failure_of(lambda: reply(backend_for(stand_in.url("broken"))))
    assert error.failure is RemoteFailure.SERVER_ERROR and error.status == 500
    assert str(error).endswith("The server said: CUDA error: out of memory")


def test_a_server_that_never_answers_times_out(stand_in):  # noqa: F811
    started = time.monotonic()
    error = failure_of(lambda: reply(backend_for(stand_in.url("stall-start"))))
    assert error.failure is RemoteFailure.STALLED and "stopped responding" in str(error)
    assert time.monotonic() - started < 2


def test_choosing_a_model_on_a_silent_server_times_out_or_is_cancelled(stand_in):  # noqa: F811
    source = RemoteModel(ServerConfig(stand_in.url("stall-start")), "stand-in")
    assert failure_of(lambda: RemoteBackend.open(source, QUICK)).failure is RemoteFailure.STALLED
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(LoadCancelled, match="cancelled"):
        RemoteBackend.open(source, RemoteTimeouts(connect=2, read=20), cancel)
    assert time.monotonic() - started < 1.5


def test_an_html_page_is_not_taken_for_an_answer(stand_in):  # noqa: F811
    error = failure_of(lambda: reply(backend_for(stand_in.url("html"))))
    assert error.failure is RemoteFailure.BAD_RESPONSE and "text/html" in str(error)
    error = failure_of(lambda: list_models(ServerConfig(stand_in.url("html")), QUICK))
    assert error.failure is RemoteFailure.BAD_RESPONSE


def test_hostile_text_is_shown_on_one_short_printable_line(stand_in):  # noqa: F811
    error = failure_of(lambda: reply(backend_for(stand_in.url("hostile"))))
    assert one_line(str(error)) and "line one" in str(error)
    started = time.monotonic()
    error = failure_of(lambda: reply(backend_for(stand_in.url("huge-error"))))
    assert one_line(str(error)) and time.monotonic() - started < 2  # 10 MB never read to show a line


def test_a_model_list_keeps_ids_exact_and_shows_them_safely(stand_in):  # noqa: F811
    models = list_models(ServerConfig(stand_in.url("hostile")), QUICK)
    assert [model.model_id for model in models] == ["evil\x1b[31m\nname", "fine"]  # junk entries skipped
    assert models[0].name == "evil�[31m�name" and models[1].context_length == 8192


# --- a reply that breaks: its text is kept ------------------------------------------------------

@pytest.mark.parametrize("mode, words", [
    ("stall-mid", "stopped responding: nothing arrived within the time Hearth waits, so the reply is cut short"), ("cut", "cut short"), ("cut-clean", "cut short"),
    ("garbage", "not JSON"), ("error-event", "reported an error mid-reply: The model crashed."),
])
def test_a_reply_that_breaks_keeps_its_text_and_says_why(stand_in, mode, words):  # noqa: F811
    pieces, stats = reply(backend_for(stand_in.url(mode)))
    assert pieces == (["Hello", " there"] if mode in ("stall-mid", "cut", "cut-clean") else ["Hello"])
    assert stats.stop_reason is StopReason.ERROR and words in stats.error and one_line(stats.error)


# --- the request ---------------------------------------------------------------------------------

def test_the_request_carries_the_conversation_and_every_sampling_field(stand_in):  # noqa: F811
    backend = backend_for(stand_in.url("ok"))
    params = SamplingParams(temperature=0.3, top_k=12, top_p=0.8, min_p=0.1, repeat_penalty=1.2,
                            presence_penalty=0.5, frequency_penalty=0.25, max_tokens=64, stop=("END",))
    messages = [{"role": "system", "content": "Be brief."}, *HELLO]
    events = list(backend.stream(messages, params, threading.Event()))
    body = stand_in.requests[-1].body
    assert body["messages"] == messages and body["model"] == "stand-in" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert {name: body[name] for name in ("temperature", "top_p", "max_tokens", "presence_penalty",
                                          "frequency_penalty", "stop", "top_k", "min_p", "repeat_penalty")} == {
        "temperature": 0.3, "top_p": 0.8, "max_tokens": 64, "presence_penalty": 0.5, "frequency_penalty": 0.25,
        "stop": ["END"], "top_k": 12, "min_p": 0.1, "repeat_penalty": 1.2}
    assert "repeat_last_n" not in body
    stats = events[-1]
    assert body["seed"] == stats.seed  # a fresh seed, sent and recorded
    assert "".join(events[:-1]) == "Hello there." and stats.stop_reason is StopReason.END_OF_TURN
    assert (stats.prompt_tokens, stats.completion_tokens) == (11, 3)  # from the server's usage


def test_a_server_that_refuses_the_extensions_gets_the_request_without_them(stand_in):  # noqa: F811
    backend = backend_for(stand_in.url("strict"))
    for _ in range(2):
        pieces, stats = reply(backend)
        assert "".join(pieces) == "Hello there." and stats.stop_reason is StopReason.END_OF_TURN
    assert backend.ignored_fields == REMOTE_EXTENSION_FIELDS
    assert backend.describe().unsent_fields == ("repeat_last_n", "top_k", "min_p", "repeat_penalty")
    sent = [request.body for request in stand_in.requests]
    assert ["top_k" in body for body in sent] == [True, False, False]  # refused once, then never sent


# --- Stop while the server is silent ------------------------------------------------------------

@pytest.mark.parametrize("mode, kept", [("stall-start", []), ("stall-mid", ["Hello", " there"])])
def test_stop_works_while_the_server_says_nothing(stand_in, mode, kept):  # noqa: F811
    backend = backend_for(stand_in.url(mode), timeouts=RemoteTimeouts(connect=2, read=20))
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    started = time.monotonic()
    pieces, stats = reply(backend, cancel)
    assert time.monotonic() - started < 1.5  # not the 20 s read timeout
    assert pieces == kept and stats.stop_reason is StopReason.CANCELLED and stats.error is None
    backend.close()


# --- the values ----------------------------------------------------------------------------------

def test_a_server_address_is_checked_and_its_key_kept_out_of_logs():
    server = ServerConfig("  https://gpu.lab:8443/v1/ ", api_key=" sk-secret ")
    assert (server.base_url, server.name, server.api_key) == ("https://gpu.lab:8443/v1", "gpu.lab:8443", "sk-secret")
    assert "sk-secret" not in repr(server) and "sk-secret" not in repr(RemoteModel(server, "m"))
    for bad in ("gpu.lab:8443/v1", "ftp://gpu.lab/v1", "http:///v1", "http://gpu.lab/v1?x=1",
                "http://me:sk-secret@gpu.lab/v1", "http://gpu.lab:80800/v1"):
        with pytest.raises(ValueError, match="server address|port") as refused:
            ServerConfig(bad)
        assert "sk-secret" not in str(refused.value)  # a password in an address is not repeated


def test_a_key_that_cannot_travel_in_a_header_is_refused_without_repeating_it():
    """A pasted line break made the HTTP library refuse the header and quote it, key and all,
    in the error shown under the server's row; a non-ASCII key could never match."""
    for bad in ("sk-secret\nabc", "sk-secret abc", "sk-sécret", "sk-secret\x00"):
        with pytest.raises(ValueError, match="API key") as refused:
            ServerConfig("http://gpu.lab:8000/v1", api_key=bad)
        assert "secret" not in str(refused.value)
    assert ServerConfig("http://gpu.lab:8000/v1", api_key=" sk-A1_b.c~d/e+f= ").api_key == "sk-A1_b.c~d/e+f="


def test_retry_after_reads_seconds_and_http_dates():
    from datetime import datetime, timezone

    from app.engine.remote.errors import retry_after

    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=timezone.utc).timestamp()
    assert retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=now) == 30
    assert retry_after(" 12 ") == 12 and retry_after("-5") == 0
    assert retry_after("soon") is None and retry_after(None) is None and retry_after("nan") is None
