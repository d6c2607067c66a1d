"""The "Downloads" part of the "Get models" view: a row for each of the DownloadManager's jobs.

The panel owns nothing but its rows: the jobs are the manager's, so a panel made while
downloads are running (the view was closed and opened again) starts from the manager's list,
and deleting the panel stops nothing.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from ...library.download_progress import DownloadProgress
from ...library.download_queue import QueuedDownload
from ...owners.downloads import DownloadManager
from ..widgets.colors import Tone, set_tone
from .download_row import DownloadRow


class DownloadsPanel(QGroupBox):
    """The manager's downloads, newest last, with "Clear finished" and where models are saved."""

    def __init__(self, manager: DownloadManager, parent=None):
        super().__init__("Downloads", parent)
        self._manager = manager
        self._rows: dict[QueuedDownload, DownloadRow] = {}

        self.dest_label = QLabel(f"Models are saved in {manager.dest}")
        set_tone(self.dest_label, Tone.MUTED)
        self.dest_label.setTextFormat(Qt.PlainText)
        self.dest_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.clear_button = QPushButton("Clear finished")
        self.clear_button.setToolTip("Remove finished, failed and cancelled downloads from the list")
        self._rows_widget = QWidget()
        self._rows_layout = QVBoxLayout(self._rows_widget)
        self._rows_layout.setContentsMargins(0, 0, 0, 0)
        self.no_downloads_label = QLabel("Nothing downloading. Choose a model above and press Download.")
        set_tone(self.no_downloads_label, Tone.MUTED)
        self._rows_layout.addWidget(self.no_downloads_label)
        self._rows_layout.addStretch(1)
        rows_scroll = QScrollArea()
        rows_scroll.setWidget(self._rows_widget)
        rows_scroll.setWidgetResizable(True)
        rows_scroll.setFrameShape(QFrame.NoFrame)
        rows_scroll.setAccessibleName("Downloads list")
        rows_scroll.setAccessibleDescription("Each download with its progress, Pause or Resume, and Cancel")

        footer = QHBoxLayout()
        footer.addWidget(self.dest_label, 1)
        footer.addWidget(self.clear_button)
        layout = QVBoxLayout(self)
        layout.addWidget(rows_scroll, 1)
        layout.addLayout(footer)

        for job in manager.jobs:
            self._add_row(job).show_job_so_far(manager.latest_progress(job))
        self._update_clear_button()

        manager.jobAdded.connect(self._add_row)
        manager.jobProgressed.connect(self._on_progress)
        manager.jobFinished.connect(self._on_finished)
        manager.jobFailed.connect(self._on_failed)
        manager.jobRemoved.connect(self._remove_row)
        self.clear_button.clicked.connect(lambda _checked=False: manager.clear_finished())

    def _add_row(self, job: QueuedDownload) -> DownloadRow:
        row = DownloadRow(job)
        self._rows[job] = row
        self._rows_layout.insertWidget(self._rows_layout.count() - 1, row)
        self.no_downloads_label.hide()
        return row

    def _on_progress(self, job: QueuedDownload, progress: DownloadProgress) -> None:
        if job in self._rows:
            self._rows[job].show_progress(progress)

    def _on_finished(self, job: QueuedDownload) -> None:
        if job in self._rows:
            self._rows[job].show_finished(job.path)
            self._update_clear_button()

    def _on_failed(self, job: QueuedDownload) -> None:
        if job in self._rows:
            self._rows[job].show_failed(job.error)
            self._update_clear_button()

    def _remove_row(self, job: QueuedDownload) -> None:
        row = self._rows.pop(job, None)
        if row is not None:
            row.deleteLater()
        self.no_downloads_label.setVisible(not self._rows)
        self._update_clear_button()

    def _update_clear_button(self) -> None:
        self.clear_button.setEnabled(any(row.done for row in self._rows.values()))
