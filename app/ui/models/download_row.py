"""One download in the "Get models" view's downloads list: its name, progress and buttons."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QProgressBar, QPushButton

from ...common.units import byte_size
from ...library.download_progress import DownloadProgress
from ...library.download_queue import QueuedDownload
from ...library.errors import DownloadCancelled, HubError
from ..widgets.colors import Tone, muted_color, set_tone


def format_duration(seconds: float) -> str:
    """Time left, as a person says it: "45 s", "3 min", "1 h 5 min"."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


class DownloadRow(QFrame):
    """One entry of the downloads list: name, progress bar, figures, Pause/Resume and Cancel.

    The buttons act on the job's DownloadControl directly; what the queue reports comes in
    through `show_progress`, `show_finished` and `show_failed`, and a row made for a job
    that was queued before it existed starts from `show_job_so_far`. Pause is offered only
    once the download has started: a paused job holds the queue, and one paused before its
    turn would hold it without the user seeing why.
    """

    def __init__(self, job: QueuedDownload, parent=None):
        super().__init__(parent)
        self.job = job
        self.done = False
        self.setFrameShape(QFrame.StyledPanel)

        self.name_label = QLabel()
        self.name_label.setTextFormat(Qt.RichText)
        self._show_name()
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.status_label = QLabel("Waiting for the downloads before it")
        self.status_label.setTextFormat(Qt.PlainText)  # it quotes file names and server messages
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.pause_button = QPushButton("Pause")
        self.pause_button.setToolTip("Stop for now; Resume continues where it stopped")
        self.pause_button.setEnabled(False)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop and delete what was downloaded of this model")

        layout = QGridLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setVerticalSpacing(4)
        layout.addWidget(self.name_label, 0, 0)
        layout.addWidget(self.pause_button, 0, 1)
        layout.addWidget(self.cancel_button, 0, 2)
        layout.addWidget(self.progress, 1, 0, 1, 3)
        layout.addWidget(self.status_label, 2, 0, 1, 3)
        layout.setColumnStretch(0, 1)

        self._set_pause_text("Pause")
        self.cancel_button.setAccessibleName(f"Cancel {job.model.name}")
        self.progress.setAccessibleName(f"Download of {job.model.name}")
        self.pause_button.clicked.connect(lambda _checked=False: self._toggle_pause())
        self.cancel_button.clicked.connect(lambda _checked=False: self._cancel())

    def _show_name(self) -> None:
        """The file name in bold, and where it comes from in the palette's muted colour.
        Names come from the server: escaped here, and every other label is plain text."""
        model = self.job.model
        repo, quant = (html.escape(text, quote=False) for text in (model.repo_id, model.quant))
        muted = muted_color(self.palette()).name()
        pair = ""
        if model.projector is not None:  # a vision model: its projector comes in the same download
            pair = f" · with its projector {html.escape(model.projector.name, quote=False)}"
        self.name_label.setText(f"<b>{html.escape(model.name, quote=False)}</b> "
                                f"<span style='color:{muted}'>{repo} · {quant}{pair}</span>")

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # light to dark: the muted colour follows
            self._show_name()

    def show_job_so_far(self, latest: DownloadProgress | None) -> None:
        """Show where the job stands now: how it ended, or `latest`, the progress it last reported."""
        job = self.job
        if job.path is not None:
            self.show_finished(job.path)
        elif job.error is not None:
            self.show_failed(job.error)
        elif job.control.cancelled:
            self._end("Cancelled")
        elif latest is not None:
            self.show_progress(latest)

    def show_progress(self, progress: DownloadProgress) -> None:
        if self.done:
            return
        self.pause_button.setEnabled(True)
        # Paused here, or in a view since closed.
        self._set_pause_text("Resume" if self.job.control.paused else "Pause")
        self.progress.setValue(round(progress.fraction * 1000))
        figures = f"{byte_size(progress.bytes_done, decimals=1)} of {byte_size(progress.bytes_total, decimals=1)}"
        if progress.paused:  # the worker's word that it has flushed the file and holds
            self.status_label.setText(f"Paused · {figures}")
            return
        if self.job.control.paused:
            self.status_label.setText("Pausing…")  # asked to pause, but a chunk is still landing
            return
        if progress.speed > 0:
            figures += f" · {byte_size(progress.speed, decimals=1)}/s"
        if progress.eta_seconds is not None:
            figures += f" · {format_duration(progress.eta_seconds)} left"
        if len(self.job.model.files) > 1:  # the parts of a split model, or a model and its projector
            figures += f" · {progress.file_name}"
        self.status_label.setText(figures)

    def show_finished(self, path: Path) -> None:
        self._end(f"Downloaded to {path}")
        self.progress.setValue(1000)

    def show_failed(self, error: HubError) -> None:
        if isinstance(error, DownloadCancelled):
            self._end("Cancelled")
        else:
            self._end(str(error), error=True)

    def _set_pause_text(self, verb: str) -> None:
        """"Pause" or "Resume"; a screen reader also hears which download it is for, as there
        can be several rows of identical buttons."""
        self.pause_button.setText(verb)
        self.pause_button.setAccessibleName(f"{verb} {self.job.model.name}")

    def _toggle_pause(self) -> None:
        control = self.job.control
        if control.paused:
            control.resume()
            self._set_pause_text("Pause")
            self.status_label.setText("Resuming…")
        else:
            control.pause()
            self._set_pause_text("Resume")
            self.status_label.setText("Pausing…")

    def _cancel(self) -> None:
        self.job.control.cancel()
        # Shown at once: a job waiting its turn is reported cancelled only when it comes up.
        self._end("Cancelled")

    def _end(self, text: str, error: bool = False) -> None:
        self.done = True
        self.pause_button.hide()
        self.cancel_button.hide()
        self.status_label.setText(text)
        set_tone(self.status_label, Tone.ERROR if error else Tone.NORMAL)
