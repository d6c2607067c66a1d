"""Downloading a model from Hugging Face into a folder, resumably and verified.

Why our own chunk loop rather than `hf_hub_download`: hf_hub_download writes into the
huggingface cache (or a `.cache/huggingface` folder inside `local_dir`), reports progress
only through a tqdm class, cannot be paused or cancelled from another thread, and names
its partial files after etags. Hearth needs models as plain files in its models folder, a
pause button, a cancel button and a progress bar. So the loop is ours and everything around
it is huggingface_hub's: `hf_hub_url` builds the URL (endpoint, revision, quoting), the
shared `get_session()` client sends it (proxies, offline switch), `build_hf_headers` adds
auth, and `hf_raise_for_status` turns error answers into its typed exceptions, which
`hub_errors` words for the user. The file list, sizes and sha256 come from the listing
(`HubClient.list_models`), pinned to one commit so every part of a split model matches.

On disk: a file is written as `NAME.gguf.part` in the target folder and continued with an
HTTP Range request after a pause, a dropped connection or a restart of Hearth. It is hashed
as it arrives; only when the hash matches what the Hub publishes is it renamed to its final
name, so the model picker never sees a partial or corrupt file. A mismatch is moved to
`quarantine/NAME.gguf.corrupt`. The parts of a split model are renamed together, first part
last, once all of them are verified.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import httpx2
from huggingface_hub import hf_hub_url
from huggingface_hub.utils import get_session, hf_raise_for_status

from app.library.errors import (
    DownloadCancelled,
    HubError,
    HubUnavailable,
    IntegrityError,
    NotEnoughSpace,
    hub_errors,
)
from app.library.hub import HubClient
from app.library.quants import QUARANTINE_DIR, RemoteFile, RemoteModel

_log = logging.getLogger(__name__)

CHUNK_SIZE = 1024 * 1024
PARTIAL_SUFFIX = ".part"
# Dropped connections in a row, without a byte received between them, before giving up.
MAX_RECONNECTS = 3
_PROGRESS_INTERVAL_S = 0.1  # at most ten progress callbacks a second
_SPEED_SAMPLE_S = 0.5
_SPEED_SMOOTHING = 0.3  # weight of the newest sample in the moving average


@dataclass(frozen=True)
class DownloadProgress:
    """A snapshot for a progress bar. Byte counts cover all parts of a split model."""

    model_name: str
    file_name: str  # the part being fetched now
    bytes_done: int
    bytes_total: int
    speed: float  # bytes per second, smoothed; 0 until measured and while paused
    eta_seconds: float | None
    paused: bool = False

    @property
    def fraction(self) -> float:
        return self.bytes_done / self.bytes_total if self.bytes_total else 1.0


ProgressCallback = Callable[[DownloadProgress], None]


class DownloadControl:
    """Pause, resume and cancel, set from any thread and obeyed between chunks.

    A paused download closes its connection (so no server times it out) and blocks its
    thread until resumed; resuming continues with a Range request. Cancelling deletes the
    partial files unless `keep_partial` is set (for quitting Hearth mid-download: the next
    download of the same model continues where this one stopped). A read that is waiting
    on a silent server notices the flags only when the read timeout ends it.
    """

    def __init__(self):
        self._state = threading.Condition()
        self._paused = False
        self._cancelled = False
        self._keep_partial = False

    def pause(self) -> None:
        with self._state:
            self._paused = True

    def resume(self) -> None:
        with self._state:
            self._paused = False
            self._state.notify_all()

    def cancel(self, keep_partial: bool = False) -> None:
        with self._state:
            self._cancelled = True
            self._keep_partial = keep_partial
            self._state.notify_all()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def keep_partial(self) -> bool:
        return self._keep_partial

    def wait_while_paused(self) -> None:
        with self._state:
            self._state.wait_for(lambda: not self._paused or self._cancelled)


class _SpeedMeter:
    """Bytes per second as an exponential moving average of half-second samples.

    Raw per-chunk rates jump around with TCP bursts; the average keeps the ETA readable.
    """

    def __init__(self):
        self.speed = 0.0
        self.restart()

    def restart(self) -> None:
        """Forget the time spent paused; the average itself is kept."""
        self._sample_start = time.monotonic()
        self._sample_bytes = 0

    def add(self, nbytes: int) -> None:
        self._sample_bytes += nbytes
        elapsed = time.monotonic() - self._sample_start
        if elapsed >= _SPEED_SAMPLE_S:
            rate = self._sample_bytes / elapsed
            self.speed = rate if self.speed == 0 else self.speed + _SPEED_SMOOTHING * (rate - self.speed)
            self.restart()


class _Reporter:
    """Turns bytes received into throttled DownloadProgress callbacks."""

    def __init__(self, model: RemoteModel, callback: ProgressCallback | None):
        self._model = model
        self._callback = callback
        self._meter = _SpeedMeter()
        self._last_emit = 0.0
        self.file_name = model.name
        self.done = 0

    def add(self, nbytes: int, counts_for_speed: bool = True) -> None:
        self.done += nbytes
        if counts_for_speed:
            self._meter.add(nbytes)
        if time.monotonic() - self._last_emit >= _PROGRESS_INTERVAL_S:
            self.emit()

    def emit(self, paused: bool = False) -> None:
        self._last_emit = time.monotonic()
        if self._callback is None:
            return
        speed = 0.0 if paused else self._meter.speed
        remaining = self._model.size - self.done
        self._callback(DownloadProgress(
            model_name=self._model.name,
            file_name=self.file_name,
            bytes_done=self.done,
            bytes_total=self._model.size,
            speed=speed,
            eta_seconds=remaining / speed if speed > 0 else None,
            paused=paused,
        ))

    def resumed(self) -> None:
        self._meter.restart()


class _Checksum:
    """The hash the Hub publishes for a file: sha256 for LFS files (every real GGUF), and
    git's blob sha1 for small files kept in git itself, whose only checksum that is."""

    def __init__(self, file: RemoteFile):
        self.expected = (file.sha256 or file.git_sha1 or "").lower()
        if not self.expected:
            raise HubError(f"Hugging Face publishes no checksum for {file.name}, so it cannot be verified.")
        if file.sha256:
            self._hash = hashlib.sha256()
        else:
            self._hash = hashlib.sha1(b"blob %d\0" % file.size)

    def update(self, data: bytes) -> None:
        self._hash.update(data)

    def matches(self) -> bool:
        return self._hash.hexdigest() == self.expected


def partial_path(dest: Path, file: RemoteFile) -> Path:
    return dest / (file.name + PARTIAL_SUFFIX)


def download_model(
    client: HubClient,
    model: RemoteModel,
    dest: str | os.PathLike,
    *,
    on_progress: ProgressCallback | None = None,
    control: DownloadControl | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> Path:
    """Download every part of `model` into `dest`, verified; return the path to load.

    Blocks; run it on a worker thread. Raises a HubError subclass: HubUnavailable (offline,
    unreachable, timed out, connection lost), GatedRepo, IntegrityError, NotEnoughSpace,
    DownloadCancelled. A file already in `dest` under its final name with the expected
    size counts as downloaded (it was verified when it was written).
    """
    dest = Path(dest)
    control = control or DownloadControl()
    _refuse_foreign_files(model, dest)
    if all((dest / part.name).exists() for part in model.parts):
        return dest / model.name
    client.check_online()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        _check_space(model, dest)
        reporter = _Reporter(model, on_progress)
        for part in model.parts:
            if (dest / part.name).exists():
                reporter.add(part.size, counts_for_speed=False)
                continue
            reporter.file_name = part.name
            with hub_errors(f"download {part.name}", model.repo_id):
                _fetch_part(client, model, part, dest, control, reporter, chunk_size)
        for part in reversed(model.parts):  # the first part, the one the picker lists, last
            if not (dest / part.name).exists():
                os.replace(partial_path(dest, part), dest / part.name)
        reporter.emit()
    except DownloadCancelled:
        if not control.keep_partial:
            for part in model.parts:
                partial_path(dest, part).unlink(missing_ok=True)
        raise
    except OSError as exc:
        raise HubError(f"Could not save {model.name} in {dest}: {exc.strerror or exc}") from None
    return dest / model.name


def _refuse_foreign_files(model: RemoteModel, dest: Path) -> None:
    for part in model.parts:
        final = dest / part.name
        if final.exists() and final.stat().st_size != part.size:
            raise HubError(
                f"A different file named {part.name} is already in {dest}. "
                "Move or delete it, then download again."
            )


def _check_space(model: RemoteModel, dest: Path) -> None:
    needed = 0
    for part in model.parts:
        if not (dest / part.name).exists():
            partial = partial_path(dest, part)
            needed += part.size - (partial.stat().st_size if partial.exists() else 0)
    free = shutil.disk_usage(dest).free
    if needed > free:
        raise NotEnoughSpace(
            f"{model.name} needs {format_bytes(needed)} more disk space in {dest}, "
            f"but only {format_bytes(free)} is free."
        )


def _fetch_part(
    client: HubClient,
    model: RemoteModel,
    part: RemoteFile,
    dest: Path,
    control: DownloadControl,
    reporter: _Reporter,
    chunk_size: int,
) -> None:
    """Bring `NAME.part` to the full, verified file, continuing whatever is there already."""
    partial = partial_path(dest, part)
    if partial.exists() and partial.stat().st_size > part.size:
        partial.unlink()
    try:
        with open(partial, "ab") as out:
            transfer = _PartTransfer(client, model, part, out, reporter, chunk_size)
            transfer.hash_existing(partial, control)
            transfer.complete(control)
    finally:
        if partial.exists() and partial.stat().st_size == 0:
            partial.unlink()  # refused at once (gated, offline...): leave no trace
    if not transfer.checksum.matches():
        raise _quarantine(partial, part, dest)


class _PartTransfer:
    """The open `.part` file of one part, how much of it there is, and its running hash."""

    def __init__(self, client: HubClient, model: RemoteModel, part: RemoteFile, out: BinaryIO,
                 reporter: _Reporter, chunk_size: int):
        self._client = client
        self._model = model
        self._url = hf_hub_url(model.repo_id, part.path, revision=model.revision, endpoint=client.endpoint)
        self._part = part
        self._out = out
        self._reporter = reporter
        self._chunk_size = chunk_size
        self.done = 0
        self.checksum = _Checksum(part)

    def hash_existing(self, partial: Path, control: DownloadControl) -> None:
        """Feed the bytes an earlier attempt left into the checksum."""
        with open(partial, "rb") as existing:
            while not control.cancelled and (block := existing.read(CHUNK_SIZE)):
                self.checksum.update(block)
                self.done += len(block)
        self._reporter.add(self.done, counts_for_speed=False)

    def complete(self, control: DownloadControl) -> None:
        """GET the rest of the part, obeying pause and cancel, reconnecting when dropped."""
        failures = 0
        while self.done < self._part.size:
            if control.cancelled:
                raise _cancelled(self._model, control)
            if control.paused:
                self._reporter.emit(paused=True)
                control.wait_while_paused()
                self._reporter.resumed()
                continue
            before = self.done
            try:
                self.get(control)
            except (httpx2.ReadError, httpx2.RemoteProtocolError):
                pass  # the connection dropped; the next GET continues from self.done
            if self.done < self._part.size and not (control.paused or control.cancelled):
                failures = 0 if self.done > before else failures + 1
                if failures > MAX_RECONNECTS:
                    raise HubUnavailable(
                        f"The connection to Hugging Face kept dropping while downloading {self._part.name}. "
                        "What was downloaded is kept; download again to continue."
                    )

    def get(self, control: DownloadControl) -> None:
        """One GET from byte `done` on, until it ends or the download is paused or cancelled."""
        headers = self._client.headers()
        if self.done:
            headers["Range"] = f"bytes={self.done}-"
        with get_session().stream("GET", self._url, headers=headers, timeout=self._client.timeouts.for_httpx(),
                                  follow_redirects=True) as response:
            hf_raise_for_status(response)
            if self.done and response.status_code != 206:
                self._start_over()  # the server ignored the Range and sends the whole file
            for chunk in response.iter_bytes(self._chunk_size):
                self._out.write(chunk)
                self.checksum.update(chunk)
                self.done += len(chunk)
                self._reporter.add(len(chunk))
                if self.done >= self._part.size or control.paused or control.cancelled:
                    break
        self._out.flush()

    def _start_over(self) -> None:
        self._out.truncate(0)
        self._reporter.add(-self.done, counts_for_speed=False)
        self.done = 0
        self.checksum = _Checksum(self._part)


def _quarantine(partial: Path, part: RemoteFile, dest: Path) -> IntegrityError:
    """Move a file that failed verification out of the picker's sight; return the error."""
    folder = dest / QUARANTINE_DIR
    folder.mkdir(exist_ok=True)
    target = folder / (part.name + ".corrupt")
    os.replace(partial, target)
    return IntegrityError(
        f"{part.name} arrived damaged: its checksum does not match the one Hugging Face "
        f"publishes. It was moved to {target}. Download it again.",
        target,
    )


def _cancelled(model: RemoteModel, control: DownloadControl) -> DownloadCancelled:
    kept = " What was downloaded is kept for next time." if control.keep_partial else ""
    return DownloadCancelled(f"The download of {model.name} was cancelled.{kept}", control.keep_partial)


def format_bytes(count: float) -> str:
    """'4.7 GB': decimal units, as Hugging Face and disk makers count."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(count) < 1000:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} TB"


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
        chunk_size: int = CHUNK_SIZE,
    ):
        self._current_client = current_client
        self._dest = Path(dest)
        self._on_progress = on_progress
        self._on_finished = on_finished
        self._on_failed = on_failed
        self._chunk_size = chunk_size
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
                raise _cancelled(job.model, job.control)
            job.path = download_model(self._current_client(), job.model, self._dest, on_progress=progress,
                                      control=job.control, chunk_size=self._chunk_size)
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
