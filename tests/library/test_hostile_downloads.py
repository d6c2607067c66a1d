"""Downloads from a hostile or broken server: each case ends in a clear HubError, in seconds.

The thresholds (read timeout, the pace a download must keep) are parameters of the
HubClient, so the tests set them short instead of waiting as long as a real user would.
A download that might hang on the old code runs on a thread the test waits for with a
bound, so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
from support.fake_hub import QWEN_REPO, wait_until

from app.library import scan
from app.library.download_queue import DownloadQueue
from app.library.downloads import PARTIAL_SUFFIX, DownloadControl, download_model
from app.library.errors import DownloadCancelled, HubError, HubTimeout, HubUnavailable, WrongContent
from app.library.hub import HubClient, Timeouts
from app.library.quants import MAX_LOCAL_FOLDERS, MAX_NAME_BYTES, local_path, safe_file_name

Q4 = "Qwen3-0.6B-Q4_K_M.gguf"
SLOW = Timeouts(connect=2.0, read=5.0, slow_window=0.6, slow_bytes=2_000)
WEB_PAGE = b"<!DOCTYPE html>\n<html><head><title>Sign in to the network</title></head><body>...</body></html>"


def start(call) -> tuple[threading.Thread, dict]:
    """Run `call` on a thread; the dict gets its "result" or its "error"."""
    outcome = {}

    def target():
        try:
            outcome["result"] = call()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    return worker, outcome


def run_bounded(call, seconds: float = 6.0):
    """Run `call` on a thread; return (result, error), or fail if it is still running after `seconds`."""
    worker, outcome = start(call)
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    return outcome.get("result"), outcome.get("error")


def q4(client):
    return client.find_model(QWEN_REPO, quant="Q4_K_M")


# --- a server that trickles ------------------------------------------------------------------

def test_a_trickling_server_is_given_up_on_and_says_how_little_it_sent(qwen, hub, tmp_path):
    qwen.files[Q4].piece_size, qwen.files[Q4].bytes_per_second = 1, 200  # a byte every 5 ms
    client = HubClient(endpoint=hub.url, timeouts=SLOW)

    started = time.monotonic()
    _, error = run_bounded(lambda: download_model(client, q4(client), tmp_path))

    assert isinstance(error, HubTimeout)
    assert str(error).startswith(f"Could not download {Q4}: the server sent only ")
    # The seconds are the window as measured (0.6 s here), which a loaded machine stretches.
    assert re.search(r" B in the last \d+(\.\d)? seconds, too slow to finish\.", str(error))
    assert time.monotonic() - started < 10  # a trickle used to hold the download for ever
    assert (tmp_path / (Q4 + PARTIAL_SUFFIX)).stat().st_size > 0  # kept for a retry


def test_a_server_that_sends_a_byte_and_drops_again_and_again_is_given_up_on(qwen, hub, tmp_path):
    qwen.files[Q4].interrupt_after, qwen.files[Q4].interruptions = 1, 100_000
    client = HubClient(endpoint=hub.url, timeouts=SLOW)

    _, error = run_bounded(lambda: download_model(client, q4(client), tmp_path))

    assert isinstance(error, HubTimeout) and "too slow to finish" in str(error)


def test_progress_pause_and_cancel_do_not_wait_for_a_silent_server(qwen, hub, tmp_path):
    qwen.files[Q4].stall_after = 10_000  # then silence, well within the 5 s read timeout
    client = HubClient(endpoint=hub.url, timeouts=Timeouts(connect=2.0, read=5.0))
    control = DownloadControl()
    progress = []
    partial = tmp_path / (Q4 + PARTIAL_SUFFIX)
    worker, outcome = start(lambda: download_model(client, q4(client), tmp_path, on_progress=progress.append,
                                                   control=control))
    assert wait_until(lambda: partial.exists() and partial.stat().st_size == 10_000)

    silent_since = time.monotonic()
    time.sleep(1.2)
    during_silence = [p for p in progress if p.bytes_done == 10_000]
    assert len(during_silence) >= 2  # reported through the silence...
    assert during_silence[-1].speed < max(p.speed for p in during_silence)  # ...with the speed falling

    control.pause()
    assert wait_until(lambda: progress[-1].paused, timeout=1.0)
    control.cancel()
    worker.join(timeout=1.0)
    assert not worker.is_alive() and time.monotonic() - silent_since < 8
    assert isinstance(outcome["error"], DownloadCancelled) and not partial.exists()


def test_a_trickling_download_does_not_hold_the_queue_behind_it(qwen, hub, tmp_path, tiny_gguf):
    qwen.files[Q4].piece_size, qwen.files[Q4].bytes_per_second = 1, 200
    client = HubClient(endpoint=hub.url, timeouts=SLOW)
    queue = DownloadQueue(lambda: client, tmp_path)
    slow = queue.add(q4(client))
    behind = queue.add(client.find_model(QWEN_REPO, quant="IQ2_XS"))

    assert queue.wait_idle(timeout=5)
    assert isinstance(slow.error, HubTimeout)
    assert behind.path.read_bytes() == tiny_gguf[:40_000]


# --- redirect loops and other client errors --------------------------------------------------

def test_a_redirect_loop_for_a_file_is_one_clear_error(qwen, hub, client, tmp_path):
    qwen.files[Q4].redirect_loop = True
    with pytest.raises(HubUnavailable, match=f"Could not download {Q4}: the server kept redirecting"):
        download_model(client, q4(client), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_redirect_loop_of_the_api_is_one_clear_error(qwen, hub, client):
    hub.redirect_api = True
    for call in (lambda: client.search("qwen"), lambda: client.list_models(QWEN_REPO)):
        with pytest.raises(HubUnavailable, match="kept redirecting the request in a loop"):
            call()


def test_a_body_that_does_not_decode_is_one_clear_error(qwen, hub, client, tmp_path):
    qwen.files[Q4].content_encoding = "gzip"  # claimed; the bytes are not gzip
    with pytest.raises(HubUnavailable, match=f"Could not download {Q4}: the answer could not be read"):
        download_model(client, q4(client), tmp_path)


@pytest.mark.parametrize("answer", [
    b"<html>Sign in to the network</html>", b"\xff\xfe\x00binary", b'{"not": "a list"}', b"[1, 2, 3]",
    b'[{"id": {"a": 1}}, {"id": "x/y", "downloads": "many", "lastModified": "yesterday"}]', b"null",
])
def test_an_api_answer_that_is_not_what_hugging_face_sends_is_one_clear_error(hub, client, answer):
    hub.api_answer = answer
    for call in (lambda: client.search("qwen"), lambda: client.list_models(QWEN_REPO)):
        try:
            call()  # an answer that can be read sensibly (bad entries left out) may be
        except HubUnavailable as exc:
            assert "did not come from Hugging Face" in str(exc)


def test_malformed_entries_of_a_listing_are_left_out(hub, client, tiny_gguf):
    hub.api_answer = (b'{"id": "o/r", "sha": "' + b"a" * 40 + b'", "siblings": ['
                      b'{"rfilename": 7, "size": 1}, {"rfilename": "a-Q8_0.gguf", "size": "big"},'
                      b'{"rfilename": "b-Q4_0.gguf", "size": -5},'
                      b'{"rfilename": "ok-Q4_K_M.gguf", "size": 10, "blobId": "not a sha",'
                      b' "lfs": {"size": 10, "sha256": "NOT HEX", "pointerSize": 1}}]}')
    listing = client.list_models("o/r")
    (model,) = listing.models
    assert model.name == "ok-Q4_K_M.gguf" and model.parts[0].sha256 is None and model.parts[0].git_sha1 is None


# --- same names, present files ---------------------------------------------------------------

def test_files_of_one_name_in_different_folders_are_kept_apart(hub, client, tmp_path, tiny_gguf):
    other = bytearray(tiny_gguf)
    other[40_000] ^= 0xFF  # the same size, other bytes
    hub.add_repo("o/twins", {"a/model-Q4_K_M.gguf": tiny_gguf, "b/model-Q4_K_M.gguf": bytes(other)})

    first = download_model(client, client.find_model("o/twins", file="a/model-Q4_K_M.gguf"), tmp_path)
    second = download_model(client, client.find_model("o/twins", file="b/model-Q4_K_M.gguf"), tmp_path)

    assert (first, second) == (tmp_path / "a" / "model-Q4_K_M.gguf", tmp_path / "b" / "model-Q4_K_M.gguf")
    assert first.read_bytes() == tiny_gguf and second.read_bytes() == bytes(other)


def test_a_present_file_of_the_right_size_is_trusted_only_if_its_hash_matches(qwen, hub, client, tmp_path,
                                                                            tiny_gguf):
    impostor = bytearray(tiny_gguf)
    impostor[-1] ^= 0xFF
    (tmp_path / Q4).write_bytes(bytes(impostor))

    with pytest.raises(HubError, match=f"A different file named {Q4} is already in"):
        download_model(client, q4(client), tmp_path)
    assert (tmp_path / Q4).read_bytes() == bytes(impostor)  # someone else's file is left alone
    assert hub.body_requests(Q4) == []


# --- what is served instead of the file ------------------------------------------------------

@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "application/octet-stream"])
def test_a_web_page_served_with_status_200_is_recognised_not_retried(qwen, hub, client, tmp_path, content_type):
    qwen.files[Q4].served_instead, qwen.files[Q4].content_type = WEB_PAGE, content_type

    with pytest.raises(WrongContent, match=f"Could not download {Q4}: the server sent a web page instead"):
        download_model(client, q4(client), tmp_path)
    assert len(hub.body_requests(Q4)) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_body_that_is_not_a_gguf_is_refused_at_its_first_bytes(qwen, hub, client, tmp_path):
    qwen.files[Q4].served_instead = b"\x00\x01garbage" * 1000
    with pytest.raises(WrongContent, match="what the server sent is not a GGUF model file"):
        download_model(client, q4(client), tmp_path)


def test_a_partial_file_that_is_a_saved_web_page_starts_over(qwen, hub, client, tmp_path, tiny_gguf):
    (tmp_path / (Q4 + PARTIAL_SUFFIX)).write_bytes(WEB_PAGE)  # what an older Hearth kept
    assert download_model(client, q4(client), tmp_path).read_bytes() == tiny_gguf
    assert hub.body_requests(Q4) == [None]


def test_every_drop_keeps_the_bytes_that_arrived(qwen, hub, client, tmp_path, tiny_gguf):
    qwen.files[Q4].interrupt_after, qwen.files[Q4].interruptions = 20_000, 3

    assert download_model(client, q4(client), tmp_path).read_bytes() == tiny_gguf
    assert hub.body_requests(Q4) == [None, "bytes=20000-", "bytes=40000-", "bytes=60000-"]


# --- names from a listing --------------------------------------------------------------------

HOSTILE_NAMES = [
    "line\nbreak-Q4_K_M.gguf",
    "back\\slash\\..\\..\\up-Q8_0.gguf",
    "tab\tand\x00nul\x1b[31m-Q5_K_M.gguf",
    "\u202eflipped-Q6_K.gguf",
    ".hidden-Q3_K_M.gguf",
    "<img src=x>-Q2_K.gguf",
    "quarantine/kept-Q4_0.gguf",
    "deep/er/than/the/picker/looks-Q5_0.gguf",
    "long" * 100 + "-IQ4_XS.gguf",
    "long" * 100 + "-BF16-00001-of-00002.gguf",
    "long" * 100 + "-BF16-00002-of-00002.gguf",
]


def test_hostile_names_from_a_listing_become_safe_paths_the_picker_finds(hub, client, tmp_path, split_parts):
    hub.add_repo("o/hostile", {name: split_parts[index % 2] for index, name in enumerate(HOSTILE_NAMES)})
    models = client.list_models("o/hostile").models
    assert len(models) == len(HOSTILE_NAMES) - 1  # the split model is one

    paths = [download_model(client, model, tmp_path) for model in models]

    for path in paths:
        relative = path.relative_to(tmp_path)  # never outside
        assert len(relative.parts) <= MAX_LOCAL_FOLDERS + 1
        for component in relative.parts:
            assert component.isprintable() and not {"\\", "<", ">"} & set(component)
            assert not component.startswith(".") and len(component.encode()) <= MAX_NAME_BYTES
    listed = scan.scan([tmp_path])
    assert {entry.path for entry in listed} == set(paths)  # the picker finds each one
    assert not [entry.error for entry in listed if "missing" in (entry.error or "")]  # and the split's part 2


@pytest.mark.parametrize(("repo_path", "local"), [
    ("model-Q4_K_M.gguf", "model-Q4_K_M.gguf"),
    ("BF16/model-BF16-00001-of-00002.gguf", "BF16/model-BF16-00001-of-00002.gguf"),
    ("../../etc/passwd.gguf", "_/_/etc/passwd.gguf"),
    ("/absolute/x.gguf", "absolute/x.gguf"),
    ("a//b/./c.gguf", "a/b/_/c.gguf"),
    ("..", "_"),
    ("CON.gguf", "_CON.gguf"),
    ("nul", "_nul"),
    ("a/b/c/d/e/x.gguf", "a/b/c_d_e/x.gguf"),
    ("Quarantine/x.gguf", "Quarantine_/x.gguf"),
    ("name. ", "name"),
])
def test_local_paths_stay_inside_and_keep_what_is_safe(repo_path, local):
    assert str(local_path(repo_path)) == local


def test_a_shortened_split_name_keeps_its_parts_together():
    first, second = (safe_file_name("é" * 300 + f"-Q4_K_M-0000{i}-of-00002.gguf") for i in (1, 2))
    assert MAX_NAME_BYTES - 1 <= len(first.encode()) == len(second.encode()) <= MAX_NAME_BYTES
    assert first.removesuffix("-00001-of-00002.gguf") == second.removesuffix("-00002-of-00002.gguf")


def test_the_folders_kept_are_as_deep_as_the_picker_looks():
    assert MAX_LOCAL_FOLDERS == scan.MAX_DEPTH
