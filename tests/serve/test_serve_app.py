"""The server's answers to what the engine side says before any text, through the real
Starlette app and its real HTTP handling (Starlette's TestClient).

The engine side here is a stand-in Completions that answers at once with a chosen first event:
the real engine reaches these states (a reply stopped by "Stop serving" or Unload while it
reads its prompt, a remote model's server failing before its first token) only in timing
windows a test cannot hold open reliably.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from app.engine.remote.errors import RemoteError, RemoteFailure
from app.engine.types import ReplyStats, StopReason
from app.serve.app import create_app
from app.serve.completions import Refusal, ServedModel
from app.serve.run_job import upstream_refusal

MODEL = "stand-in.gguf"


class FirstEvent:
    """A Completions whose every job ends with `event` before any text."""

    def __init__(self, event):
        self._event = event

    def model(self) -> ServedModel:
        return ServedModel(MODEL, 2048)

    def submit(self, job, deliver, follow=None):  # its replies are scripted events, none to follow
        deliver(self._event)
        return self

    def cancel(self) -> None:
        pass


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("event, status", [
    (ReplyStats(stop_reason=StopReason.CANCELLED), 503),  # serving stopped before any text
    (ReplyStats(stop_reason=StopReason.ERROR, error="The model's own server failed (stalled)."), 500),
])
def test_a_reply_that_ends_before_any_text_is_an_error_status_not_a_stream(event, status, stream):
    with TestClient(create_app(FirstEvent(event))) as client:
        answer = client.post("/v1/chat/completions", json={
            "model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "Hi"}]})
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json()["error"]["message"]


def test_a_remote_models_failure_is_served_on_without_its_servers_address():
    where = "Lab box (http://10.0.0.7:8000/v1)"
    limited = upstream_refusal(RemoteError(RemoteFailure.RATE_LIMITED, f"{where} is rate limited", 429, 30))
    assert limited.reason is Refusal.UNAVAILABLE and "10.0.0.7" not in limited.message
    failed = upstream_refusal(RemoteError(RemoteFailure.AUTH, f"{where} refused the key sk-…", 401))
    assert failed.reason is Refusal.FAILED and "10.0.0.7" not in failed.message and "sk-" not in failed.message
    rejected = upstream_refusal(RemoteError(RemoteFailure.REJECTED, f"{where} refused: bad temperature", 400,
                                             server_message="bad temperature"))
    assert rejected.message.endswith(": bad temperature.") and "10.0.0.7" not in rejected.message
