"""Downloading models one after another on a worker thread: the queue behind the downloads panel.

Why a module of its own: the queue is about order, threads and callbacks (which job runs,
which waits, who is told when one ends); how one model is fetched and verified is
`downloads.download_model`, which it calls for each job in turn.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.library.download_progress import DownloadProgress
from app.library.downloads import DownloadControl, cancelled_error, download_model
from app.library.errors import HubError
from app.library.hub import HubClient
from app.library.quants import RemoteModel

_log = logging.getLogger(__name__)


@dataclass(eq=False)
class QueuedDownload:
    """One entry of a DownloadQueue; pause or cancel it through `control`."""

    model: RemoteModel
    control: DownloadControl = field(default_factory=DownloadControl)
    path: Path | None = None  # set when it finished
    error: HubError | None = None  # set when it failed or was cancelled


class DownloadQueue:
    """Downloads models one after another on a worker thread of its own.

    `current_client()` is asked for the HubClient as each download starts, so a client
    rebuilt with a new access token is used by the downloads still waiting.
    The callbacks run on that worker thread; a Qt GUI forwards them with a queued signal.
    A job cancelled before its turn is reported through `on_failed` with DownloadCancelled.
    """

    def __init__(
        self,
        current_client: Callable[[], HubClient],
        dest: str | os.PathLike,
        *,
        on_progress: Callable[[QueuedDownload, DownloadProgress], None] | None = None,
        on_finished: Callable[[QueuedDownload], None] | None = None,
        on_failed: Callable[[QueuedDownload], None] | None = None,
    ):
        self._current_client = current_client
        self._dest = Path(dest)
        self._on_progress = on_progress
        self._on_finished = on_finished
        self._on_failed = on_failed
        self._jobs: deque[QueuedDownload] = deque()
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._worker: threading.Thread | None = None
        self.current: QueuedDownload | None = None

    def add(self, model: RemoteModel) -> QueuedDownload:
        job = QueuedDownload(model)
        with self._lock:
            self._jobs.append(job)
            self._idle.clear()
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="hearth-downloads", daemon=True)
                self._worker.start()
        return job

    def cancel_all(self, keep_partial: bool = False) -> None:
        with self._lock:
            jobs = [*self._jobs, *([self.current] if self.current else [])]
        for job in jobs:
            job.control.cancel(keep_partial)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every job has finished or failed; False on timeout."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._worker = None
                    self.current = None
                    self._idle.set()
                    return
                job = self.current = self._jobs.popleft()
            self._download(job)

    def _download(self, job: QueuedDownload) -> None:
        def progress(snapshot: DownloadProgress) -> None:
            if self._on_progress:
                self._on_progress(job, snapshot)

        try:
            if job.control.cancelled:
                raise cancelled_error(job.model, job.control)
            job.path = download_model(self._current_client(), job.model, self._dest, on_progress=progress,
                                      control=job.control)
        except HubError as exc:
            job.error = exc
        except Exception as exc:  # a bug must fail one job, not stop the queue for good
            _log.exception("download of %s failed", job.model.name)
            job.error = HubError(f"The download of {job.model.name} failed: {exc}")
        callback = self._on_finished if job.error is None else self._on_failed
        if callback is not None:
            try:
                callback(job)
            except Exception:
                _log.exception("a download queue callback failed")
