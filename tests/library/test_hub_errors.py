"""What the user is told when Hugging Face says no, goes quiet or cannot be reached."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from support.fake_hub import GOOD_TOKEN, QWEN_REPO

from app.library.downloads import PARTIAL_SUFFIX, download_model
from app.library.errors import GatedRepo, HubTimeout, HubUnavailable
from app.library.hub import HubClient, Timeouts

GATED_REPO = "meta-llama/Llama-3.2-1B-Instruct-GGUF"
GATED_FILE = "Llama-3.2-1B-Instruct-Q4_K_M.gguf"
SHORT = Timeouts(connect=1.0, read=0.5)


@pytest.fixture
def gated(hub, tiny_gguf):
    return hub.add_repo(GATED_REPO, {GATED_FILE: tiny_gguf}, gated=True)


def test_a_gated_repo_without_a_token_asks_for_one(gated, client, tmp_path):
    model = client.find_model(GATED_REPO)  # the Hub lists gated repos to anyone

    with pytest.raises(GatedRepo, match="is gated.*enter an access token") as caught:
        download_model(client, model, tmp_path)
    assert caught.value.repo_id == GATED_REPO
    assert list(tmp_path.iterdir()) == []


def test_a_gated_repo_with_an_unapproved_token_says_to_request_access(gated, hub, tmp_path):
    client = HubClient(endpoint=hub.url, token="hf_not_approved")
    with pytest.raises(GatedRepo, match="not on its list of approved users.*Request access"):
        download_model(client, client.find_model(GATED_REPO), tmp_path)


def test_a_gated_repo_downloads_with_an_approved_token(gated, hub, tmp_path, tiny_gguf):
    client = HubClient(endpoint=hub.url, token=GOOD_TOKEN)
    assert download_model(client, client.find_model(GATED_REPO), tmp_path).read_bytes() == tiny_gguf
    content = [r for r in hub.requests if r.path.endswith(GATED_FILE)]
    resolve, cdn = content
    # The token goes to the Hub and is not forwarded to the CDN host it redirects to.
    assert resolve.authorization == f"Bearer {GOOD_TOKEN}" and cdn.authorization is None
    assert cdn.host.startswith("localhost:")


def test_a_private_or_missing_repo_says_it_may_need_a_token(hub, client, tiny_gguf):
    hub.add_repo("someone/private-GGUF", {"p-Q4_K_M.gguf": tiny_gguf}, private=True)
    for repo in ("someone/private-GGUF", "someone/no-such-repo"):
        with pytest.raises(GatedRepo, match=f"{repo} does not exist, or it is private or gated.*access token"):
            client.list_models(repo)


def test_a_stalled_download_times_out_with_a_clear_message(qwen, hub, tmp_path):
    qwen.files["Qwen3-0.6B-Q4_K_M.gguf"].stall_after = 10_000
    client = HubClient(endpoint=hub.url, timeouts=SHORT)
    model = client.find_model(QWEN_REPO, quant="Q4_K_M")

    started = time.monotonic()
    with pytest.raises(HubTimeout, match="stopped sending data"):
        download_model(client, model, tmp_path)
    assert time.monotonic() - started < 5
    assert (tmp_path / ("Qwen3-0.6B-Q4_K_M.gguf" + PARTIAL_SUFFIX)).exists()  # kept for a retry


def test_a_stalled_search_times_out(hub):
    hub.stall_api = True
    client = HubClient(endpoint=hub.url, timeouts=SHORT)
    started = time.monotonic()
    with pytest.raises(HubTimeout, match="Could not search Hugging Face: .*timed out"):
        client.search("qwen")
    assert time.monotonic() - started < 5


def test_offline_mode_fails_at_once_without_a_request(qwen, hub, client, tmp_path, monkeypatch):
    model = client.find_model(QWEN_REPO, quant="Q4_K_M")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    asked = len(hub.requests)

    for call in (lambda: client.search("qwen"), lambda: client.list_models(QWEN_REPO),
                 lambda: download_model(client, model, tmp_path)):
        with pytest.raises(HubUnavailable, match="offline mode"):
            call()
    assert len(hub.requests) == asked


def test_an_unreachable_hub_is_reported_quickly():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = HubClient(endpoint=f"http://127.0.0.1:{port}", timeouts=SHORT)
    started = time.monotonic()
    with pytest.raises(HubUnavailable, match="cannot be reached"):
        client.search("qwen")
    assert time.monotonic() - started < 5


def test_importing_the_library_opens_no_connection():
    guard = (
        "import socket\n"
        "def refuse(*args): raise AssertionError('network touched at import')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "import app.library.hub, app.library.downloads, app.cli.pull, app.library.credentials\n"
    )
    subprocess.run([sys.executable, "-c", guard], check=True, timeout=60)


def test_a_connection_that_keeps_dropping_gives_up_with_a_clear_message(qwen, client, tmp_path):
    qwen.files["Qwen3-0.6B-Q4_K_M.gguf"].interrupt_after = 0
    qwen.files["Qwen3-0.6B-Q4_K_M.gguf"].interruptions = 100
    with pytest.raises(HubUnavailable, match="kept dropping"):
        download_model(client, client.find_model(QWEN_REPO, quant="Q4_K_M"), tmp_path)
