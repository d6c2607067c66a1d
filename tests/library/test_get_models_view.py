"""The "Get models" view against the fake Hub: real searches, listings and downloads."""

from __future__ import annotations

import socket
import time
from collections import namedtuple

import keyring
import keyring.backends.fail
import psutil
import shiboken6
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QInputDialog
from support.fake_hub import GOOD_TOKEN, QWEN_REPO
from support.get_models_view import (  # noqa: F401  (fixtures, found by pytest by name)
    Q4,
    WAIT_MS,
    client_factory,
    make_manager,
    make_view,
    memory_keyring,
    model_items,
    start_download,
)

from app.engine.gguf.reading import inspect_model
from app.library import credentials, secrets
from app.library.downloads import PARTIAL_SUFFIX
from app.ui.models import get_models
from app.ui.models.download_row import DownloadRow
from app.ui.models.get_models import OFFLINE_HEADLINE, GetModelsView
from app.ui.models.hub_lists import ModelColumn, ResultColumn

GATED_REPO = "meta-llama/Llama-3.2-1B-Instruct-GGUF"
GATED_FILE = "Llama-3.2-1B-Instruct-Q4_K_M.gguf"


def search(qtbot, view, text):
    with qtbot.waitSignal(view.searchFinished, timeout=WAIT_MS):
        view.search(text)


def open_repo(qtbot, view, repo_id):
    row = next(r for r in range(view.results.rowCount())
               if view.results.item(r, ResultColumn.REPO).text() == repo_id)
    with qtbot.waitSignal(view.listingFinished, timeout=WAIT_MS):
        view.results.selectRow(row)


def test_search_shows_repositories_and_creating_the_view_touches_no_network(qtbot, make_view, hub, qwen, tiny_gguf):
    hub.add_repo(GATED_REPO, {GATED_FILE: tiny_gguf}, gated=True, downloads=900, likes=7)
    hub.add_repo("someone/unrelated", {"x-Q8_0.gguf": tiny_gguf})
    view = make_view()
    assert hub.requests == []

    with qtbot.waitSignal(view.searchFinished, timeout=WAIT_MS):
        view.search("qwen3")
        assert view.message_label.text() == "Searching…"
    search(qtbot, view, "")  # nothing typed: the most downloaded GGUF repositories

    table = [[view.results.item(r, c).text() for c in ResultColumn] for r in range(view.results.rowCount())]
    assert table == [
        [QWEN_REPO, "5,000", "42", "2025-05-01", ""],
        [GATED_REPO, "900", "7", "2025-05-01", "gated"],
        ["someone/unrelated", "0", "0", "2025-05-01", ""],
    ]
    search(qtbot, view, "nothing-like-this")
    assert view.results.rowCount() == 0 and "No GGUF models match" in view.message_label.text()


def test_a_repository_lists_its_quantizations_with_sizes_and_fit(qtbot, make_view, qwen, monkeypatch):
    view = make_view()
    search(qtbot, view, "qwen")
    open_repo(qtbot, view, QWEN_REPO)

    rows = {name: [item.text(c) for c in ModelColumn] for name, item in model_items(view).items()}
    assert rows == {  # smallest first, the split model as one; a text model: no images
        "Qwen3-0.6B-IQ2_XS.gguf": ["IQ2_XS", "Qwen3-0.6B-IQ2_XS.gguf", "40.0 KB", "✓ fits in RAM", ""],
        "Qwen3-0.6B-Q4_K_M.gguf": ["Q4_K_M", "Qwen3-0.6B-Q4_K_M.gguf", "65.8 KB", "✓ fits in RAM", ""],
        "Qwen3-0.6B-BF16-00001-of-00003.gguf":
            ["BF16", "Qwen3-0.6B-BF16-00001-of-00003.gguf", "65.8 KB", "✓ fits in RAM", ""],
    }
    assert "Qwen3-0.6B-GGUF" in view.repo_label.text() and not view.download_button.isEnabled()

    view.set_vram(8 * 1024**3)
    assert {item.text(ModelColumn.FITS) for item in model_items(view).values()} == {"✓ fits in VRAM"}

    Memory = namedtuple("Memory", "available")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: Memory(available=100 * 1024**2))
    view.set_vram(None)
    item = model_items(view)[Q4]
    assert item.text(ModelColumn.FITS) == "too large for this machine"
    assert item.foreground(ModelColumn.FILE).color() != view.palette().text().color()  # greyed
    assert "Needs about" in item.toolTip(ModelColumn.FITS)


def test_downloads_queue_one_after_another_and_announce_a_loadable_model(qtbot, make_manager, make_view, qwen,
                                                                         tmp_path):
    qwen.files[Q4].bytes_per_second = 150_000
    manager = make_manager()
    view = make_view(manager)
    search(qtbot, view, QWEN_REPO)  # owner/name: its listing opens at once
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    downloaded = []
    manager.modelDownloaded.connect(downloaded.append)

    assert view.downloads.no_downloads_label.isVisible()
    first = start_download(qtbot, view, Q4)
    second = start_download(qtbot, view, "Qwen3-0.6B-IQ2_XS.gguf")
    assert start_download(qtbot, view, Q4) is first  # asked twice, queued once
    assert "already in the downloads list" in view.message_label.text()
    assert not view.downloads.no_downloads_label.isVisible()
    qtbot.waitUntil(lambda: first.pause_button.isEnabled(), timeout=WAIT_MS)
    assert " of 65.8 KB" in first.status_label.text()
    assert second.status_label.text() == "Waiting for the downloads before it"
    qtbot.waitUntil(lambda: len(downloaded) == 2, timeout=WAIT_MS)

    models = tmp_path / "models"
    assert downloaded == [models / Q4, models / "Qwen3-0.6B-IQ2_XS.gguf"]
    assert inspect_model(downloaded[0]).architecture == "llama"
    assert first.status_label.text() == f"Downloaded to {models / Q4}" and first.progress.value() == 1000
    assert first.pause_button.isHidden() and first.cancel_button.isHidden()
    view.downloads.clear_button.click()
    qtbot.waitUntil(lambda: not view.findChildren(DownloadRow))
    assert view.downloads.no_downloads_label.isVisible()


def start_slow_download(qtbot, view, qwen) -> DownloadRow:
    """Q4 downloading at 100 kB/s: slow enough to pause midway."""
    qwen.files[Q4].bytes_per_second = 100_000
    search(qtbot, view, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    return start_download(qtbot, view, Q4)


def test_pause_holds_a_download_and_resume_continues_it(qtbot, make_manager, make_view, hub, qwen, tmp_path,
                                                         tiny_gguf):
    manager = make_manager()
    view = make_view(manager)
    row = start_slow_download(qtbot, view, qwen)
    partial_file = tmp_path / "models" / (Q4 + PARTIAL_SUFFIX)
    qtbot.waitUntil(lambda: partial_file.exists() and partial_file.stat().st_size > 8_000, timeout=WAIT_MS)

    row.pause_button.click()
    assert row.pause_button.text() == "Resume"
    qtbot.waitUntil(lambda: row.status_label.text().startswith("Paused · "), timeout=WAIT_MS)
    held = partial_file.stat().st_size
    qtbot.wait(300)
    assert partial_file.stat().st_size == held < len(tiny_gguf)

    with qtbot.waitSignal(manager.modelDownloaded, timeout=WAIT_MS) as done:
        row.pause_button.click()
    assert done.args[0].read_bytes() == tiny_gguf
    assert hub.body_requests(Q4) == [None, f"bytes={held}-"]


def test_cancel_stops_a_download_and_deletes_its_partial_file(qtbot, make_manager, make_view, qwen, tmp_path):
    qwen.files[Q4].bytes_per_second = 60_000
    manager = make_manager()
    view = make_view(manager)
    search(qtbot, view, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    downloaded = []
    manager.modelDownloaded.connect(downloaded.append)
    row = start_download(qtbot, view, Q4)
    qtbot.waitUntil(lambda: row.pause_button.isEnabled(), timeout=WAIT_MS)

    row.cancel_button.click()

    assert row.status_label.text() == "Cancelled" and row.cancel_button.isHidden()
    assert manager._queue.wait_idle(timeout=5)
    qtbot.wait(50)  # the queue's last report reaches the GUI thread
    assert row.status_label.text() == "Cancelled" and downloaded == []
    assert list((tmp_path / "models").iterdir()) == []


def test_a_damaged_download_says_it_was_quarantined(qtbot, make_view, qwen, tmp_path):
    qwen.files[Q4].corrupt = True
    view = make_view()
    search(qtbot, view, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    row = start_download(qtbot, view, Q4)

    qtbot.waitUntil(lambda: row.done, timeout=WAIT_MS)
    assert "arrived damaged" in row.status_label.text()
    assert str(tmp_path / "models" / "quarantine" / (Q4 + ".corrupt")) in row.status_label.text()


def test_shutdown_keeps_the_partial_file_and_the_next_download_continues_it(
        qtbot, make_manager, make_view, hub, qwen, tmp_path, tiny_gguf):
    qwen.files[Q4].bytes_per_second = 60_000
    manager = make_manager()
    view = make_view(manager)
    search(qtbot, view, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    start_download(qtbot, view, Q4)
    partial_file = tmp_path / "models" / (Q4 + PARTIAL_SUFFIX)
    qtbot.waitUntil(lambda: partial_file.exists() and partial_file.stat().st_size > 8_000, timeout=WAIT_MS)

    manager.shutdown()  # as when Hearth quits
    kept = partial_file.stat().st_size
    assert 0 < kept < len(tiny_gguf)

    qwen.files[Q4].bytes_per_second = None
    restarted_manager = make_manager()
    restarted = make_view(restarted_manager)
    search(qtbot, restarted, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(restarted)), timeout=WAIT_MS)
    with qtbot.waitSignal(restarted_manager.modelDownloaded, timeout=WAIT_MS) as done:
        start_download(qtbot, restarted, Q4)
    assert done.args[0].read_bytes() == tiny_gguf
    assert hub.body_requests(Q4)[-1] == f"bytes={kept}-"


def test_a_download_keeps_running_when_its_view_is_deleted_and_a_new_view_shows_it(
        qtbot, make_manager, make_view, hub, qwen, tmp_path, tiny_gguf):
    qwen.files[Q4].bytes_per_second = 30_000
    manager = make_manager()
    view = GetModelsView(manager)  # not kept by qtbot: closing it deletes it
    view.setAttribute(Qt.WA_DeleteOnClose)
    view.show()
    search(qtbot, view, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    running = start_download(qtbot, view, Q4).job
    waiting = start_download(qtbot, view, "Qwen3-0.6B-IQ2_XS.gguf").job
    qtbot.waitUntil(lambda: manager.latest_progress(running) is not None, timeout=WAIT_MS)

    view.close()
    qtbot.waitUntil(lambda: not shiboken6.isValid(view), timeout=WAIT_MS)
    done_then = manager.latest_progress(running).bytes_done
    qtbot.waitUntil(lambda: manager.latest_progress(running).bytes_done > done_then, timeout=WAIT_MS)

    reopened = make_view(manager)
    first, second = reopened.findChildren(DownloadRow)
    assert (first.job, second.job) == (running, waiting)
    assert first.pause_button.isEnabled() and " of 65.8 KB" in first.status_label.text()
    assert second.status_label.text() == "Waiting for the downloads before it"
    qtbot.waitUntil(lambda: first.done and second.done, timeout=WAIT_MS)

    models = tmp_path / "models"
    assert first.status_label.text() == f"Downloaded to {models / Q4}"
    assert (models / Q4).read_bytes() == tiny_gguf
    assert hub.body_requests(Q4) == [None]  # one request from start to end: never stopped or resumed


def test_a_new_view_shows_a_paused_download_and_resumes_it(qtbot, make_manager, make_view, qwen, tmp_path,
                                                            tiny_gguf):
    manager = make_manager()
    view = make_view(manager)
    row = start_slow_download(qtbot, view, qwen)
    qtbot.waitUntil(lambda: row.pause_button.isEnabled(), timeout=WAIT_MS)
    row.pause_button.click()
    qtbot.waitUntil(lambda: row.status_label.text().startswith("Paused · "), timeout=WAIT_MS)

    [again] = make_view(manager).findChildren(DownloadRow)
    assert again.pause_button.text() == "Resume" and again.status_label.text().startswith("Paused · ")
    with qtbot.waitSignal(manager.modelDownloaded, timeout=WAIT_MS) as done:
        again.pause_button.click()

    assert done.args[0].read_bytes() == tiny_gguf
    assert row.status_label.text() == again.status_label.text() == f"Downloaded to {tmp_path / 'models' / Q4}"


def test_a_gated_download_asks_for_a_token_then_retries_with_it(
        qtbot, make_manager, make_view, hub, tiny_gguf, memory_keyring, monkeypatch):
    hub.add_repo(GATED_REPO, {GATED_FILE: tiny_gguf}, gated=True)
    manager = make_manager()
    view = make_view(manager)
    search(qtbot, view, GATED_REPO)  # the Hub lists a gated repository to anyone
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    assert "gated" in view.repo_label.text()
    row = start_download(qtbot, view, GATED_FILE)

    qtbot.waitUntil(lambda: view.token_button.isVisible(), timeout=WAIT_MS)
    assert "is gated" in view.message_label.text() and "enter an access token" in view.message_label.text()
    asked = []
    monkeypatch.setattr(QInputDialog, "getText", lambda *args: asked.append(args) or (f" {GOOD_TOKEN} ", True))
    with qtbot.waitSignal(manager.modelDownloaded, timeout=WAIT_MS) as done:
        view.token_button.click()

    assert asked[0][3] == get_models.QLineEdit.Password
    assert done.args[0].read_bytes() == tiny_gguf
    assert view.token_label.text() == "The access token is saved in the system keyring."
    assert memory_keyring.secrets == {(secrets.SERVICE, credentials.ACCOUNT): GOOD_TOKEN}
    assert not view.token_button.isVisible()
    assert row not in view.findChildren(DownloadRow)  # the failed attempt gave way to the retry


def test_a_private_repository_found_by_name_opens_with_a_session_token(qtbot, make_view, hub, tiny_gguf,
                                                                       monkeypatch):
    keyring.set_keyring(keyring.backends.fail.Keyring())
    hub.add_repo("someone/private-GGUF", {"p-Q4_K_M.gguf": tiny_gguf}, private=True)
    view = make_view()
    with qtbot.waitSignal(view.listingFinished, timeout=WAIT_MS):
        view.search("someone/private-GGUF")  # not in the results: it is looked up by name

    assert "does not exist, or it is private or gated" in view.message_label.text()
    assert view.token_button.isVisible() and not model_items(view)
    monkeypatch.setattr(QInputDialog, "getText", lambda *args: (GOOD_TOKEN, True))
    with qtbot.waitSignal(view.listingFinished, timeout=WAIT_MS):
        view.token_button.click()

    assert list(model_items(view)) == ["p-Q4_K_M.gguf"]
    assert "No system keyring" in view.token_label.text() and "until Hearth quits" in view.token_label.text()


def test_offline_mode_says_so_at_once_and_sends_nothing(qtbot, make_view, hub, qwen, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    view = make_view()
    assert view.message_label.text().startswith(OFFLINE_HEADLINE)
    assert "HF_HUB_OFFLINE" in view.message_label.text()

    search(qtbot, view, "qwen")

    assert view.message_label.text().startswith(OFFLINE_HEADLINE) and view.results.rowCount() == 0
    assert hub.requests == []


def test_an_unreachable_hub_is_reported_as_offline(qtbot, make_manager, make_view):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    view = make_view(make_manager(client_factory(f"http://127.0.0.1:{port}")))
    search(qtbot, view, "qwen")
    assert view.message_label.text().startswith(OFFLINE_HEADLINE)
    assert "cannot be reached" in view.message_label.text()


def test_a_stalled_hub_times_out_while_the_window_stays_responsive(qtbot, make_manager, make_view, hub, qwen):
    view = make_view(make_manager(client_factory(hub.url, read=1.0)))
    search(qtbot, view, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    hub.stall_api = True
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(50)

    started = time.monotonic()
    with qtbot.waitSignal(view.searchFinished, timeout=WAIT_MS):
        view.search("qwen")
        assert time.monotonic() - started < 0.5 and view.message_label.text() == "Searching…"
    timer.stop()

    assert "timed out" in view.message_label.text() and view.message_label.text().startswith(OFFLINE_HEADLINE)
    assert len(ticks) >= 5  # the event loop kept running through the second of silence
    assert max(b - a for a, b in zip(ticks, ticks[1:])) < 0.9  # never blocked for the read timeout


def test_a_stalled_download_reports_the_timeout(qtbot, make_manager, make_view, hub, qwen):
    qwen.files[Q4].stall_after = 10_000
    view = make_view(make_manager(client_factory(hub.url, read=0.5)))
    search(qtbot, view, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    row = start_download(qtbot, view, Q4)
    qtbot.waitUntil(lambda: row.done, timeout=WAIT_MS)
    assert "stopped sending data" in row.status_label.text()


def rendered(rich_text: str) -> str:
    """What Qt shows for a rich-text label or tooltip."""
    document = QTextDocument()
    document.setHtml(rich_text)
    return document.toPlainText()


def test_server_names_are_shown_as_written_never_rendered_as_html(qtbot, make_view, hub, tiny_gguf, tmp_path):
    hostile_file = "<img src=x><b>bold&amp;-Q4_K_M.gguf"
    hub.add_repo("evil/names-GGUF", {hostile_file: tiny_gguf})
    hub.add_repo("<img src=y>/names-GGUF", {"x-Q8_0.gguf": tiny_gguf})  # only ever in search results
    view = make_view()
    search(qtbot, view, "names")

    tooltips = {rendered(view.results.item(r, ResultColumn.REPO).toolTip()) for r in range(view.results.rowCount())}
    assert tooltips == {"evil/names-GGUF", "<img src=y>/names-GGUF"}
    open_repo(qtbot, view, "evil/names-GGUF")
    (item,) = model_items(view).values()
    assert rendered(item.toolTip(ModelColumn.FILE)) == hostile_file  # the name as the server wrote it
    local_name = item.text(ModelColumn.FILE)
    assert local_name == "_img src=x__b_bold&amp;-Q4_K_M.gguf"  # the name as a safe file name

    row = start_download(qtbot, view, local_name)
    qtbot.waitUntil(lambda: row.done, timeout=WAIT_MS)

    assert row.status_label.text() == f"Downloaded to {tmp_path / 'models' / local_name}"
    for label in (row.status_label, view.message_label, view.repo_label, view.token_label, view.downloads.dest_label):
        assert label.textFormat() == Qt.PlainText
    assert rendered(row.name_label.text()) == f"{local_name} evil/names-GGUF · Q4_K_M"


def test_cancelling_a_download_from_a_silent_server_frees_the_queue_at_once(qtbot, make_manager, make_view, qwen,
                                                                          hub, tmp_path):
    qwen.files[Q4].stall_after = 10_000  # then nothing, for longer than the read timeout below
    view = make_view(make_manager(client_factory(hub.url, read=5.0)))
    search(qtbot, view, QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    silent = start_download(qtbot, view, Q4)
    behind = start_download(qtbot, view, "Qwen3-0.6B-IQ2_XS.gguf")
    qtbot.waitUntil(lambda: silent.pause_button.isEnabled(), timeout=WAIT_MS)
    qtbot.wait(600)
    assert "10.0 KB of 65.8 KB" in silent.status_label.text()

    silent.cancel_button.click()

    qtbot.waitUntil(lambda: behind.done, timeout=2_000)  # not after the 5 s read timeout
    assert behind.status_label.text().startswith("Downloaded to ")
