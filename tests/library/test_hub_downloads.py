"""Downloading through huggingface_hub from the fake Hub: verified, resumable, controllable."""

from __future__ import annotations

import threading
import time

import pytest
from huggingface_hub import hf_hub_download
from support.fake_hub import QWEN_REPO, FakeFile, wait_until

from app.engine.gguf.reading import inspect_model
from app.library.download_queue import DownloadQueue
from app.library.downloads import PARTIAL_SUFFIX, DownloadControl, download_model
from app.library.errors import DownloadCancelled, HubError, IntegrityError, NotEnoughSpace
from app.library.quants import RemoteFile, RemoteModel

Q4 = "Qwen3-0.6B-Q4_K_M.gguf"


def q4_model(client):
    return client.find_model(QWEN_REPO, quant="Q4_K_M")


def test_fake_hub_speaks_what_huggingface_hub_expects(qwen, hub, tmp_path, tiny_gguf):
    # hf_hub_download reads the commit, etag and size from the HEAD the fake answers.
    path = hf_hub_download(QWEN_REPO, Q4, local_dir=tmp_path, endpoint=hub.url)
    assert open(path, "rb").read() == tiny_gguf


def test_download_is_verified_and_gives_a_loadable_gguf(qwen, hub, client, tmp_path, tiny_gguf):
    progress = []
    path = download_model(client, q4_model(client), tmp_path, on_progress=progress.append)

    assert path == tmp_path / Q4
    assert path.read_bytes() == tiny_gguf
    assert sorted(p.name for p in tmp_path.iterdir()) == [Q4]  # no .part left behind
    assert inspect_model(path).architecture == "llama"
    last = progress[-1]
    assert (last.bytes_done, last.bytes_total, last.fraction) == (len(tiny_gguf), len(tiny_gguf), 1.0)
    assert hub.body_requests(Q4) == [None]


def test_a_second_download_of_a_present_model_fetches_nothing(qwen, hub, client, tmp_path):
    model = q4_model(client)
    download_model(client, model, tmp_path)
    download_model(client, model, tmp_path)
    assert len(hub.body_requests(Q4)) == 1


def test_a_dropped_connection_is_resumed_with_a_range_request(qwen, hub, client, tmp_path, tiny_gguf):
    qwen.files[Q4].interrupt_after = 20_000

    path = download_model(client, q4_model(client), tmp_path)

    assert path.read_bytes() == tiny_gguf
    first, second = hub.body_requests(Q4)
    # It continues from the last byte that arrived before the connection closed.
    assert first is None and second == "bytes=20000-"


def test_a_partial_file_left_by_an_earlier_run_is_continued(qwen, hub, client, tmp_path, tiny_gguf):
    (tmp_path / (Q4 + PARTIAL_SUFFIX)).write_bytes(tiny_gguf[:12_345])

    path = download_model(client, q4_model(client), tmp_path)

    assert path.read_bytes() == tiny_gguf
    assert hub.body_requests(Q4) == ["bytes=12345-"]


def test_a_server_that_ignores_the_range_gets_the_file_from_the_start(qwen, hub, client, tmp_path, tiny_gguf):
    (tmp_path / (Q4 + PARTIAL_SUFFIX)).write_bytes(tiny_gguf[:12_345])
    qwen.files[Q4].ignore_range = True
    progress = []

    path = download_model(client, q4_model(client), tmp_path, on_progress=progress.append)

    assert path.read_bytes() == tiny_gguf
    assert hub.body_requests(Q4) == ["bytes=12345-"]
    assert progress[-1].bytes_done == len(tiny_gguf)


def test_a_corrupted_download_is_quarantined(qwen, hub, client, tmp_path):
    qwen.files[Q4].corrupt = True

    with pytest.raises(IntegrityError, match="arrived damaged.*checksum") as caught:
        download_model(client, q4_model(client), tmp_path)

    assert caught.value.quarantined == tmp_path / "quarantine" / (Q4 + ".corrupt")
    assert caught.value.quarantined.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["quarantine"]


def test_a_file_kept_in_git_is_verified_by_its_blob_id(hub, client, tmp_path, tiny_gguf):
    hub.add_repo("o/small", {"small-Q8_0.gguf": FakeFile(tiny_gguf, lfs=False)})
    path = download_model(client, client.find_model("o/small"), tmp_path)
    assert path.read_bytes() == tiny_gguf

    hub.repos["o/small"].files["small-Q8_0.gguf"].corrupt = True
    path.unlink()
    with pytest.raises(IntegrityError):
        download_model(client, client.find_model("o/small"), tmp_path)


def test_a_split_model_arrives_whole_and_is_named_only_when_all_parts_are_verified(
        qwen, hub, client, tmp_path, split_parts):
    model = client.find_model(QWEN_REPO, quant="BF16")
    qwen.files["BF16/Qwen3-0.6B-BF16-00003-of-00003.gguf"].corrupt = True

    with pytest.raises(IntegrityError, match="00003-of-00003"):
        download_model(client, model, tmp_path)
    assert not list(tmp_path.rglob("*.gguf"))  # parts 1 and 2 stay .part, so unlisted

    qwen.files["BF16/Qwen3-0.6B-BF16-00003-of-00003.gguf"].corrupt = False
    progress = []
    path = download_model(client, model, tmp_path, on_progress=progress.append)

    assert path == tmp_path / "BF16" / "Qwen3-0.6B-BF16-00001-of-00003.gguf"  # its folder in the repository
    assert [(path.parent / part.name).read_bytes() for part in model.parts] == split_parts
    assert progress[-1].bytes_done == progress[-1].bytes_total == sum(map(len, split_parts))


def test_pause_holds_the_download_and_resume_continues_it(qwen, hub, client, tmp_path, tiny_gguf):
    qwen.files[Q4].bytes_per_second = 200_000  # about a third of a second for the file
    control = DownloadControl()
    progress = []
    result = {}
    worker = threading.Thread(target=lambda: result.update(path=download_model(
        client, q4_model(client), tmp_path, on_progress=progress.append, control=control)))
    partial = tmp_path / (Q4 + PARTIAL_SUFFIX)

    worker.start()
    assert wait_until(lambda: partial.exists() and partial.stat().st_size > 8_000)
    control.pause()
    assert wait_until(lambda: progress and progress[-1].paused)
    held = partial.stat().st_size
    time.sleep(0.3)
    assert partial.stat().st_size == held < len(tiny_gguf)
    assert progress[-1].speed == 0 and progress[-1].eta_seconds is None

    control.resume()
    worker.join(timeout=10)

    assert result["path"].read_bytes() == tiny_gguf
    ranges = hub.body_requests(Q4)
    assert ranges == [None, f"bytes={held}-"]


def test_cancel_stops_the_download_and_removes_the_partial_file(qwen, hub, client, tmp_path):
    qwen.files[Q4].bytes_per_second = 100_000
    control = DownloadControl()

    def cancel_soon(progress):
        if progress.bytes_done > 8_000:
            control.cancel()

    with pytest.raises(DownloadCancelled, match="cancelled") as caught:
        download_model(client, q4_model(client), tmp_path, on_progress=cancel_soon, control=control)
    assert not caught.value.kept_partial
    assert list(tmp_path.iterdir()) == []


def test_cancel_keeping_the_partial_file_lets_the_next_run_continue(qwen, hub, client, tmp_path, tiny_gguf):
    qwen.files[Q4].bytes_per_second = 100_000
    control = DownloadControl()

    def quit_soon(progress):
        if progress.bytes_done > 8_000:
            control.cancel(keep_partial=True)

    with pytest.raises(DownloadCancelled, match="kept"):
        download_model(client, q4_model(client), tmp_path, on_progress=quit_soon, control=control)
    kept = (tmp_path / (Q4 + PARTIAL_SUFFIX)).stat().st_size
    qwen.files[Q4].bytes_per_second = None

    assert download_model(client, q4_model(client), tmp_path).read_bytes() == tiny_gguf
    assert hub.body_requests(Q4)[-1] == f"bytes={kept}-"


def test_a_queue_downloads_one_after_another(qwen, hub, client, tmp_path, tiny_gguf):
    events = []
    queue = DownloadQueue(
        lambda: client, tmp_path,
        on_progress=lambda job, p: events.append(("progress", job.model.quant)),
        on_finished=lambda job: events.append(("finished", job.model.quant)),
        on_failed=lambda job: events.append(("failed", job.model.quant)),
    )
    first = queue.add(q4_model(client))
    second = queue.add(client.find_model(QWEN_REPO, quant="IQ2_XS"))

    assert queue.wait_idle(timeout=10)

    assert first.path.read_bytes() == tiny_gguf
    assert second.path.read_bytes() == tiny_gguf[:40_000]
    finished = [e for e in events if e[0] != "progress"]
    assert finished == [("finished", "Q4_K_M"), ("finished", "IQ2_XS")]
    last_q4_event = max(i for i, e in enumerate(events) if e[1] == "Q4_K_M")
    assert all(e[1] == "IQ2_XS" for e in events[last_q4_event + 1:])


def test_a_queued_job_cancelled_before_its_turn_is_reported_and_skipped(qwen, hub, client, tmp_path):
    qwen.files[Q4].bytes_per_second = 200_000
    failed = []
    queue = DownloadQueue(lambda: client, tmp_path, on_failed=failed.append)
    queue.add(q4_model(client))
    second = queue.add(client.find_model(QWEN_REPO, quant="IQ2_XS"))
    second.control.cancel()

    assert queue.wait_idle(timeout=10)
    assert failed == [second] and isinstance(second.error, DownloadCancelled)
    assert hub.body_requests("Qwen3-0.6B-IQ2_XS.gguf") == []


def test_a_file_of_another_model_under_the_same_name_is_not_overwritten(qwen, client, tmp_path):
    (tmp_path / Q4).write_bytes(b"someone else's model")
    with pytest.raises(HubError, match="different file named"):
        download_model(client, q4_model(client), tmp_path)


def test_a_model_larger_than_the_free_disk_space_is_refused_before_downloading(hub, client, tmp_path):
    huge = RemoteFile("huge-Q8_0.gguf", size=10**18, sha256="0" * 64, git_sha1=None)
    model = RemoteModel("o/huge", "main", "Q8_0", (huge,))
    with pytest.raises(NotEnoughSpace, match="needs .* more disk space in .* but only .* is free"):
        download_model(client, model, tmp_path)
    assert hub.requests == []
