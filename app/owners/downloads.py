"""Hearth's downloads from Hugging Face, owned by the application rather than by a window.

Why it is built the way it is:

* Downloads belong to the application: closing the "Get models" view, or deleting it, never
  stops one, and a view opened later shows every download queued since (running, waiting,
  finished or failed) from `jobs`, each with its latest progress.
* Downloads go through one DownloadQueue, one after another: two big files never split the
  bandwidth, and the first one is usable sooner. The queue calls back on its own thread;
  `_QueueRelay` turns those calls into queued signals handled on the GUI thread.
* The HubClient is made on first use, so the saved token is read only when the Hub is needed.
  Entering an access token rebuilds it, and downloads still waiting in the queue must go out
  with the new token: the queue asks for the current client as each download starts.
* The token itself is kept by `app.library.credentials`, in the system keyring (or for this
  session only), never in Hearth's settings.

Only QtCore: the views that show these downloads are widgets; this is not one. And nothing of
the Hub's client library or the keyring is imported until the first search or download: the
manager exists from start-up, and huggingface_hub alone costs a fifth of a second and 20 MB the
user may never need.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal

from ..library.quants import RemoteModel
from . import paths

if TYPE_CHECKING:
    from ..library.credentials import TokenSaved
    from ..library.download_progress import DownloadProgress
    from ..library.download_queue import DownloadQueue, QueuedDownload
    from ..library.hub import HubClient

SHUTDOWN_WAIT_S = 2  # how long quitting waits for the running download to stop and flush


def _is_over(job: QueuedDownload) -> bool:
    """Finished, failed, or cancelled (a job cancelled while waiting is reported only when its turn comes)."""
    return job.path is not None or job.error is not None or job.control.cancelled


class _HubClients:
    """The current HubClient: made on first use with the saved token, made anew with a token
    the user enters.

    Kept apart from the manager so that the DownloadQueue, which asks it for the client as
    each download starts, holds no reference back to the manager: a QObject caught in a
    reference cycle is freed by Python's cycle collector, which may run on any thread.
    """

    def __init__(self, factory: Callable[..., HubClient] | None):
        self._factory = factory
        self._client: HubClient | None = None

    def current(self) -> HubClient:
        if self._client is None:
            from ..library import credentials  # the keyring: only when the Hub is needed

            self._client = self._make(token=credentials.load_token())
        return self._client

    def use_token(self, token: str) -> None:
        self._client = self._make(token=token)

    def _make(self, token: str | None) -> HubClient:
        if self._factory is None:
            from ..library.hub import HubClient

            self._factory = HubClient
        return self._factory(token=token)


class _QueueRelay(QObject):
    """The DownloadQueue's callbacks (on its worker thread) as signals for the GUI thread."""

    progress = Signal(object, object)  # QueuedDownload, DownloadProgress
    finished = Signal(object)  # QueuedDownload
    failed = Signal(object)  # QueuedDownload


class DownloadManager(QObject):
    """The Hugging Face client and every download, for as long as Hearth runs.

    `download(model)` queues a model into `dest` (Hearth's models folder by default); views
    list `jobs` and follow the signals below, and pause or cancel a job through its
    `control`. Call `shutdown()` when Hearth quits: running downloads stop and keep their
    partial files, so downloading the same model again continues where it stopped.

    `client_factory(token=...)` makes the HubClient; tests pass one aimed at a fake Hub.

    Signals, all emitted on the GUI thread:
        jobAdded(QueuedDownload): a download was queued; it is last in `jobs`.
        jobProgressed(QueuedDownload, DownloadProgress): bytes arrived, or it paused.
        jobFinished(QueuedDownload): downloaded and verified; `job.path` is the file.
        jobFailed(QueuedDownload): it failed or was cancelled; `job.error` says why.
        jobRemoved(QueuedDownload): a job that was over left `jobs`.
        modelDownloaded(Path): a model finished downloading and was verified; the path is
            the file to load (the first part of a split model).
    """

    jobAdded = Signal(object)
    jobProgressed = Signal(object, object)
    jobFinished = Signal(object)
    jobFailed = Signal(object)
    jobRemoved = Signal(object)
    modelDownloaded = Signal(object)

    def __init__(self, client_factory: Callable[..., HubClient] | None = None,
                 dest: str | os.PathLike | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self._clients = _HubClients(client_factory)
        self._dest = Path(dest) if dest is not None else paths.user_models_dir()
        self._jobs: dict[QueuedDownload, DownloadProgress | None] = {}  # in the order queued

        self._relay = _QueueRelay(self)
        self._relay.progress.connect(self._on_progress, Qt.QueuedConnection)
        self._relay.finished.connect(self._on_finished, Qt.QueuedConnection)
        self._relay.failed.connect(self._on_failed, Qt.QueuedConnection)
        self._queue: DownloadQueue | None = None  # made with the first download

    @property
    def dest(self) -> Path:
        """The folder downloads are saved in."""
        return self._dest

    @property
    def jobs(self) -> list[QueuedDownload]:
        """Every download queued and not cleared, oldest first."""
        return list(self._jobs)

    def latest_progress(self, job: QueuedDownload) -> DownloadProgress | None:
        """What `job` last reported, or None if it has not started."""
        return self._jobs.get(job)

    def client(self) -> HubClient:
        """The current client, made on first use with the saved token."""
        return self._clients.current()

    def set_token(self, token: str) -> TokenSaved:
        """Keep the access token (in the keyring, or for this session) and use it from now on,
        for downloads already waiting too. The answer says where it was kept."""
        from ..library import credentials

        saved = credentials.save_token(token)
        self._clients.use_token(token.strip())
        return saved

    def download(self, model: RemoteModel) -> QueuedDownload | None:
        """Queue `model`; None if it is already waiting or downloading."""
        if any(job.model == model and not _is_over(job) for job in self._jobs):
            return None
        job = self._download_queue().add(model)
        self._jobs[job] = None
        self.jobAdded.emit(job)
        return job

    def retry(self, job: QueuedDownload) -> None:
        """Queue a failed job's model again (with the current token), in place of the failure."""
        self._remove(job)
        self.download(job.model)

    def clear_finished(self) -> None:
        """Forget the downloads that are over; running and waiting ones stay."""
        for job in [job for job in self._jobs if _is_over(job)]:
            self._remove(job)

    def shutdown(self) -> None:
        """Stop every download, keeping partial files so the next download continues them."""
        if self._queue is not None:
            self._queue.cancel_all(keep_partial=True)
            self._queue.wait_idle(timeout=SHUTDOWN_WAIT_S)

    def _download_queue(self) -> DownloadQueue:
        if self._queue is None:
            from ..library.download_queue import DownloadQueue

            self._queue = DownloadQueue(
                self._clients.current, self._dest,
                on_progress=self._relay.progress.emit,
                on_finished=self._relay.finished.emit,
                on_failed=self._relay.failed.emit,
            )
        return self._queue

    def _remove(self, job: QueuedDownload) -> None:
        if job in self._jobs:
            del self._jobs[job]
            self.jobRemoved.emit(job)

    def _on_progress(self, job: QueuedDownload, progress: DownloadProgress) -> None:
        if job in self._jobs:
            self._jobs[job] = progress
            self.jobProgressed.emit(job, progress)

    def _on_finished(self, job: QueuedDownload) -> None:
        self.jobFinished.emit(job)
        self.modelDownloaded.emit(job.path)

    def _on_failed(self, job: QueuedDownload) -> None:
        self.jobFailed.emit(job)
