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

On disk: a file keeps its folder in the repository (`BF16/NAME.gguf`), made safe by
`quants.local_path`, so two files of one name in different folders stay two files. It is
written as `NAME.gguf.part` and continued with an HTTP Range request after a pause, a
dropped connection or a restart of Hearth, from the last byte that arrived. It is hashed as
it arrives; only when the hash matches what the Hub publishes is it renamed to its final
name, so the model picker never sees a partial or corrupt file. A mismatch is moved to
`quarantine/NAME.gguf.corrupt`. The parts of a split model are renamed together, first part
last, once all of them are verified. A vision model's projector (`RemoteModel.projector`) is one
more file of the same download, saved beside the model's first part and renamed before it: when
the model appears in the picker, it reads images.

A hostile or broken network is expected: the body is read on a thread of its own so Pause,
Cancel and progress never wait on the server (`body_reader.BodyReader`); a server that
trickles bytes is given up on (`body_reader.Pace`); a body that is not a GGUF (a web page
served with status 200) is refused at its first bytes. Progress snapshots are built in
`download_progress`; the queue that runs downloads one after another is `download_queue`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path
from typing import BinaryIO

import httpx2
from huggingface_hub import hf_hub_url

from app.common.units import byte_size
from app.engine.gguf.header import GGUF_MAGIC  # the first bytes of every GGUF file, each part of a split model too
from app.library.body_reader import END, TICK_S, BodyReader, Head, Pace
from app.library.download_progress import ProgressCallback, Reporter
from app.library.errors import (
    DownloadCancelled,
    HubError,
    HubUnavailable,
    IntegrityError,
    NotEnoughSpace,
    WrongContent,
    hub_errors,
)
from app.library.hub import HubClient
from app.library.quants import QUARANTINE_DIR, RemoteFile, RemoteModel

CHUNK_SIZE = 1024 * 1024  # blocks read when hashing a file already on disk
PARTIAL_SUFFIX = ".part"
_WEB_PAGE_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Dropped connections in a row, without a byte received between them, before giving up.
MAX_RECONNECTS = 3


class DownloadControl:
    """Pause, resume and cancel, set from any thread and obeyed within a quarter second.

    A paused download closes its connection (so no server times it out) and blocks its
    thread until resumed; resuming continues with a Range request. Cancelling deletes the
    partial files unless `keep_partial` is set (for quitting Hearth mid-download: the next
    download of the same model continues where this one stopped).
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


def final_path(dest: Path, file: RemoteFile) -> Path:
    """Where a verified file lives: its repository path under `dest`, made safe, never outside it."""
    return dest / file.local_path


def partial_path(dest: Path, file: RemoteFile) -> Path:
    final = final_path(dest, file)
    return final.with_name(final.name + PARTIAL_SUFFIX)


def download_model(
    client: HubClient,
    model: RemoteModel,
    dest: str | os.PathLike,
    *,
    on_progress: ProgressCallback | None = None,
    control: DownloadControl | None = None,
) -> Path:
    """Download every file of `model` (its parts, and its projector) into `dest`, verified;
    return the path to load.

    Blocks; run it on a worker thread. Raises a HubError subclass: HubUnavailable (offline,
    unreachable, timed out, too slow, connection lost), GatedRepo, WrongContent,
    IntegrityError, NotEnoughSpace, DownloadCancelled. A file already in `dest` under its
    final name counts as downloaded only if its checksum matches: one of the same name and
    size may be another repository's model, or an older version of this one.
    """
    dest = Path(dest)
    control = control or DownloadControl()
    reporter = Reporter(model, on_progress)
    try:
        missing = _parts_to_fetch(model, dest, control, reporter)
        if missing:
            client.check_online()
            dest.mkdir(parents=True, exist_ok=True)
            _check_space(model, missing, dest)
            for part in missing:
                reporter.file_name = part.name
                with hub_errors(f"download {part.name}", model.repo_id):
                    _fetch_part(client, model, part, dest, control, reporter)
            for part in reversed(missing):  # the projector first, the part the picker lists last
                os.replace(partial_path(dest, part), final_path(dest, part))
        reporter.emit()
    except DownloadCancelled:
        if not control.keep_partial:
            for part in model.files:
                partial_path(dest, part).unlink(missing_ok=True)
        raise
    except OSError as exc:
        raise HubError(f"Could not save {model.name} in {dest}: {exc.strerror or exc}") from None
    return final_path(dest, model.parts[0])


def _parts_to_fetch(model: RemoteModel, dest: Path, control: DownloadControl,
                    reporter: Reporter) -> list[RemoteFile]:
    """The files not yet in `dest`; one already there is hashed, and refused if it differs (a
    projector already beside the model, downloaded with another of its quantizations, is kept)."""
    missing = []
    for part in model.files:
        final = final_path(dest, part)
        if not final.exists():
            missing.append(part)
            continue
        reporter.file_name = part.name
        checksum = _Checksum(part)
        if final.stat().st_size == part.size:
            _hash_file(final, checksum, control, reporter)
        if control.cancelled:
            raise cancelled_error(model, control)
        if final.stat().st_size != part.size or not checksum.matches():
            raise HubError(
                f"A different file named {part.local_path} is already in {dest}. "
                "Move or delete it, then download again."
            )
    return missing


def _hash_file(path: Path, checksum: _Checksum, control: DownloadControl, reporter: Reporter) -> int:
    """Feed a file on disk into `checksum`, reporting progress; stops early when cancelled."""
    hashed = 0
    with open(path, "rb") as existing:
        while not control.cancelled and (block := existing.read(CHUNK_SIZE)):
            checksum.update(block)
            hashed += len(block)
            reporter.add(len(block), counts_for_speed=False)
    return hashed


def _check_space(model: RemoteModel, missing: list[RemoteFile], dest: Path) -> None:
    needed = 0
    for part in missing:
        partial = partial_path(dest, part)
        needed += part.size - (partial.stat().st_size if partial.exists() else 0)
    free = shutil.disk_usage(dest).free
    if needed > free:
        raise NotEnoughSpace(
            f"{model.name} needs {byte_size(needed, decimals=1)} more disk space in {dest}, "
            f"but only {byte_size(free, decimals=1)} is free."
        )


def _fetch_part(
    client: HubClient,
    model: RemoteModel,
    part: RemoteFile,
    dest: Path,
    control: DownloadControl,
    reporter: Reporter,
) -> None:
    """Bring `NAME.part` to the full, verified file, continuing whatever is there already."""
    partial = partial_path(dest, part)
    partial.parent.mkdir(parents=True, exist_ok=True)
    if partial.exists() and partial.stat().st_size > part.size:
        partial.unlink()
    try:
        with open(partial, "ab") as out:
            transfer = _PartTransfer(client, model, part, out, reporter)
            transfer.take_existing(partial, control)
            transfer.complete(control)
    finally:
        if partial.exists() and partial.stat().st_size == 0:
            partial.unlink()  # refused at once (gated, offline, a web page...): leave no trace
    if not transfer.checksum.matches():
        raise _quarantine(partial, part, dest)


class _PartTransfer:
    """The open `.part` file of one part, how much of it there is, and its running hash."""

    def __init__(self, client: HubClient, model: RemoteModel, part: RemoteFile, out: BinaryIO,
                 reporter: Reporter):
        self._client = client
        self._model = model
        self._url = hf_hub_url(model.repo_id, part.path, revision=model.revision, endpoint=client.endpoint)
        self._part = part
        self._out = out
        self._reporter = reporter
        self._pace = Pace(part, client.timeouts.slow_window, client.timeouts.slow_bytes)
        self._expects_gguf = part.name.lower().endswith(".gguf")
        self._start = b""  # the file's first bytes, until there are enough to check the GGUF magic
        self.done = 0
        self.checksum = _Checksum(part)

    def take_existing(self, partial: Path, control: DownloadControl) -> None:
        """Continue from the bytes an earlier attempt left, unless they are not the start of a GGUF
        (a web page an older Hearth saved): those are dropped and the file starts over."""
        with open(partial, "rb") as existing:
            self._start = existing.read(len(GGUF_MAGIC))
        if self._expects_gguf and len(self._start) == len(GGUF_MAGIC) and self._start != GGUF_MAGIC:
            self._start_over()
            return
        self.done = _hash_file(partial, self.checksum, control, self._reporter)

    def complete(self, control: DownloadControl) -> None:
        """GET the rest of the part, obeying pause and cancel, reconnecting when dropped."""
        failures = 0
        self._pace.restart()  # the time spent hashing what was there already does not count
        while self.done < self._part.size:
            if control.cancelled:
                raise cancelled_error(self._model, control)
            if control.paused:
                self._reporter.emit(paused=True)
                control.wait_while_paused()
                self._reporter.resumed()
                self._pace.restart()
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
        """One GET from byte `done` on, until it ends or the download is paused or cancelled.

        Every tick without bytes still reports progress (the speed falls), checks the pace and
        puts what arrived on disk.
        """
        headers = self._client.headers()
        if self.done:
            headers["Range"] = f"bytes={self.done}-"
        body = BodyReader(self._url, headers, self._client.timeouts.for_httpx())
        try:
            while self.done < self._part.size and not (control.paused or control.cancelled):
                item = body.next(TICK_S)
                if item is END:
                    return
                if item is None:
                    self._out.flush()  # the server is quiet: what arrived goes to disk meanwhile
                if isinstance(item, Head):
                    self._accept(item)
                written = self._write(item) if isinstance(item, bytes) else 0
                self._reporter.add(written)
                self._pace.add(written)
                self._pace.check()
        finally:
            body.stop()
            self._out.flush()

    def _accept(self, head: Head) -> None:
        if head.content_type.split(";")[0].strip().lower() in _WEB_PAGE_TYPES:
            raise self._wrong_content(web_page=True)
        if self.done and head.status != 206:
            self._start_over()  # the server ignored the Range and sends the whole file

    def _write(self, chunk: bytes) -> int:
        """Write what arrived (never past the file's size), at once: a dropped connection
        then loses nothing already received."""
        chunk = chunk[: self._part.size - self.done]
        if self._expects_gguf and self.done < len(GGUF_MAGIC):
            self._check_start(chunk)
        self._out.write(chunk)
        self.checksum.update(chunk)
        self.done += len(chunk)
        return len(chunk)

    def _check_start(self, chunk: bytes) -> None:
        """Refuse a body that does not begin as a GGUF does, at its first bytes: a web page
        served with status 200 (an error or login page) would otherwise arrive in full, fail
        its checksum, and look like a damaged download or a dropping connection."""
        sniffed = self._start + chunk
        self._start = sniffed[: len(GGUF_MAGIC)]
        if len(self._start) == len(GGUF_MAGIC) and self._start != GGUF_MAGIC:
            raise self._wrong_content(web_page=sniffed.lstrip()[:1] == b"<")

    def _wrong_content(self, web_page: bool) -> WrongContent:
        if web_page:
            return WrongContent(
                f"Could not download {self._part.name}: the server sent a web page instead of the model "
                "file (an error page, or a network's login page). Check that huggingface.co opens in a "
                "browser, then try again."
            )
        return WrongContent(
            f"Could not download {self._part.name}: what the server sent is not a GGUF model file. "
            "Try again later, or choose another file."
        )

    def _start_over(self) -> None:
        self._out.truncate(0)
        self._reporter.add(-self.done, counts_for_speed=False)
        self.done = 0
        self._start = b""
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


def cancelled_error(model: RemoteModel, control: DownloadControl) -> DownloadCancelled:
    kept = " What was downloaded is kept for next time." if control.keep_partial else ""
    return DownloadCancelled(f"The download of {model.name} was cancelled.{kept}", control.keep_partial)
