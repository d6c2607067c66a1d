"""The "Get models" view: find GGUF models on Hugging Face and download them into Hearth.

Why it is built the way it is:

* Every Hub request (a search, a repository's file list) runs on the thread pool through
  `run_in_background`, and downloads run on the DownloadQueue's own thread, so a slow or
  silent network never freezes the window; the library's timeouts bound every wait. Only
  the newest search and the newest listing are shown, so a late answer cannot replace a
  newer one.
* Downloads go through one DownloadQueue, one after another: two big files never split the
  bandwidth, and the first one is usable sooner. The queue calls back on its own thread;
  `_QueueRelay` turns those calls into queued signals handled on the GUI thread.
* Nothing touches the network until the user searches, so opening the view with no network,
  or with HF_HUB_OFFLINE set, just says that Hugging Face can't be reached.
* A gated or private repository asks for an access token, which `app.library.credentials`
  keeps in the system keyring (or for this session only); the client is rebuilt with it and
  the action that failed is tried again.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable
from enum import IntEnum
from pathlib import Path

import shiboken6
from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView, QFrame, QGridLayout, QGroupBox, QHBoxLayout, QHeaderView, QInputDialog, QLabel,
    QLineEdit, QProgressBar, QPushButton, QScrollArea, QSplitter, QTableWidget, QTableWidgetItem, QTreeWidget,
    QTreeWidgetItem, QVBoxLayout, QWidget,
)

from .. import paths
from ..library import credentials
from ..library.downloads import DownloadProgress, DownloadQueue, QueuedDownload, format_bytes
from ..library.errors import OFFLINE_MESSAGE, DownloadCancelled, GatedRepo, HubError, HubUnavailable
from ..library.hub import HubClient, RepoListing, RepoSummary, memory_fit, offline_mode
from ..library.quants import RemoteModel, by_quant
from .background import run_in_background
from .model_picker import ERROR_COLOR

_log = logging.getLogger(__name__)

OFFLINE_HEADLINE = (
    "Hugging Face can't be reached — Hearth works offline; models you already have are in the Model tab."
)
_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
_MODEL_ROLE = Qt.UserRole  # the RemoteModel behind a row of the models tree


class ResultColumn(IntEnum):
    REPO = 0
    DOWNLOADS = 1
    LIKES = 2
    UPDATED = 3
    ACCESS = 4


class ModelColumn(IntEnum):
    QUANT = 0
    FILE = 1
    SIZE = 2
    FITS = 3


_RESULT_HEADERS = {
    ResultColumn.REPO: ("Repository", "owner/name on Hugging Face"),
    ResultColumn.DOWNLOADS: ("Downloads", "Downloads in the last month"),
    ResultColumn.LIKES: ("Likes", "How many people liked the repository"),
    ResultColumn.UPDATED: ("Updated", "When the repository last changed"),
    ResultColumn.ACCESS: ("Access", "gated: you must accept its terms and enter an access token to download"),
}
_MODEL_HEADERS = {
    ModelColumn.QUANT: ("Quant", "How the weights are compressed; Q4_K_M is a good balance, Q8_0 is near-lossless"),
    ModelColumn.FILE: ("File", "The file Hearth will load (the first part of a split model)"),
    ModelColumn.SIZE: ("Size", "Download size"),
    ModelColumn.FITS: ("Fits?", "Whether the model and room for its context fit this machine's free memory"),
}


def format_duration(seconds: float) -> str:
    """Time left, as a person says it: "45 s", "3 min", "1 h 5 min"."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def fit_text(size: int, vram_bytes: int | None) -> tuple[str, bool, str]:
    """The fits marker for a model of `size` bytes: (text, fits somewhere, tooltip)."""
    fit = memory_fit(size, vram_bytes)
    needs = f"Needs about {format_bytes(fit.needed_bytes)} of memory: the file plus room for the context."
    if fit.fits_vram:
        return "✓ fits in VRAM", True, needs
    if fit.fits_ram:
        return "✓ fits in RAM", True, needs + (" Too big for the GPU's memory." if fit.fits_vram is False else "")
    return "too large for this machine", False, needs + " That is more than this machine has free now."


class _CurrentClient:
    """The view's HubClient as the one object its DownloadQueue holds.

    A DownloadQueue keeps the client it was made with, but entering an access token rebuilds
    the client, and downloads still waiting in the queue must go out with the new token. So
    the queue is given this stand-in, which forwards every attribute to the current client.
    """

    def __init__(self):
        self.client: HubClient | None = None

    def __getattr__(self, name):
        return getattr(self.client, name)


class _QueueRelay(QObject):
    """The DownloadQueue's callbacks (on its worker thread) as signals for the GUI thread."""

    progress = Signal(object, object)  # QueuedDownload, DownloadProgress
    finished = Signal(object)  # QueuedDownload
    failed = Signal(object)  # QueuedDownload


class DownloadRow(QFrame):
    """One entry of the downloads list: name, progress bar, figures, Pause/Resume and Cancel.

    The buttons act on the job's DownloadControl directly; what the queue reports comes in
    through `show_progress`, `show_finished` and `show_failed`. Pause is offered only once the
    download has started: a paused job holds the queue, and one paused before its turn would
    hold it without the user seeing why.
    """

    def __init__(self, job: QueuedDownload, parent=None):
        super().__init__(parent)
        self.job = job
        self.done = False
        self.setFrameShape(QFrame.StyledPanel)

        repo = html.escape(job.model.repo_id, quote=False)
        self.name_label = QLabel(f"<b>{html.escape(job.model.name, quote=False)}</b> "
                                 f"<span style='color:gray'>{repo} · {job.model.quant}</span>")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.status_label = QLabel("Waiting for the downloads before it")
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

        self.pause_button.clicked.connect(self._toggle_pause)
        self.cancel_button.clicked.connect(self._cancel)

    def show_progress(self, progress: DownloadProgress) -> None:
        if self.done:
            return
        self.pause_button.setEnabled(True)
        self.progress.setValue(round(progress.fraction * 1000))
        figures = f"{format_bytes(progress.bytes_done)} of {format_bytes(progress.bytes_total)}"
        if progress.paused:  # the worker's word that it has flushed the file and holds
            self.status_label.setText(f"Paused · {figures}")
            return
        if self.job.control.paused:
            return  # asked to pause, but a chunk is still landing: "Pausing…" stays
        if progress.speed > 0:
            figures += f" · {format_bytes(progress.speed)}/s"
        if progress.eta_seconds is not None:
            figures += f" · {format_duration(progress.eta_seconds)} left"
        if len(self.job.model.parts) > 1:
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

    def _toggle_pause(self) -> None:
        control = self.job.control
        if control.paused:
            control.resume()
            self.pause_button.setText("Pause")
            self.status_label.setText("Resuming…")
        else:
            control.pause()
            self.pause_button.setText("Resume")
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
        self.status_label.setStyleSheet(f"color: {ERROR_COLOR};" if error else "")


class GetModelsView(QWidget):
    """Search Hugging Face for GGUF models, see what fits this machine, and download them.

    Searching takes text or an exact `owner/name`; choosing a repository lists its models
    grouped by quantization with their size and whether they fit in RAM (or VRAM, once
    `set_vram` gave a figure). Download queues the chosen model into `dest` (Hearth's models
    folder by default). Call `shutdown()` when Hearth quits: running downloads stop and keep
    their partial files, so downloading the same model again continues where it stopped.

    `client_factory(token=...)` makes the HubClient; tests pass one aimed at a fake Hub.

    Signals:
        modelDownloaded(Path): a model finished downloading and was verified; the path is
            the file to load (the first part of a split model).
        searchFinished(): a search's results, or why it failed, are on show.
        listingFinished(str): a repository's models (repo id), or why they could not be
            listed, are on show.
    """

    modelDownloaded = Signal(object)
    searchFinished = Signal()
    listingFinished = Signal(str)

    def __init__(self, client_factory: Callable[..., HubClient] = HubClient, dest: Path | None = None, parent=None):
        super().__init__(parent)
        self._client_factory = client_factory
        self._client = _CurrentClient()
        self._dest = Path(dest) if dest is not None else paths.user_models_dir()
        self._queue: DownloadQueue | None = None
        self._rows: dict[QueuedDownload, DownloadRow] = {}
        self._vram: int | None = None
        self._listing: RepoListing | None = None
        self._search_generation = 0
        self._listing_generation = 0
        self._retry: Callable[[], None] | None = None  # what to try again once a token is entered

        self._relay = _QueueRelay(self)
        self._relay.progress.connect(self._on_progress, Qt.QueuedConnection)
        self._relay.finished.connect(self._on_finished, Qt.QueuedConnection)
        self._relay.failed.connect(self._on_failed, Qt.QueuedConnection)

        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText("Search GGUF models (e.g. qwen3), or enter owner/name")
        self.search_box.setClearButtonEnabled(True)
        self.search_button = QPushButton("Search")

        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.token_button = QPushButton("Enter token…")
        self.token_button.setToolTip("Enter a Hugging Face access token (huggingface.co/settings/tokens)")
        self.token_button.hide()
        self.token_label = QLabel()
        self.token_label.setWordWrap(True)
        self.token_label.setStyleSheet("color: gray;")
        self.token_label.hide()

        self.results = QTableWidget(0, len(ResultColumn))
        self.results.setHorizontalHeaderLabels([_RESULT_HEADERS[c][0] for c in ResultColumn])
        for column in ResultColumn:
            self.results.horizontalHeaderItem(column).setToolTip(_RESULT_HEADERS[column][1])
        self.results.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.results.setSelectionMode(QAbstractItemView.SingleSelection)
        self.results.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.results.setShowGrid(False)
        self.results.setAlternatingRowColors(True)
        self.results.setWordWrap(False)
        self.results.setTextElideMode(Qt.ElideMiddle)
        self.results.verticalHeader().hide()
        self.results.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.results.horizontalHeader().setHighlightSections(False)
        self.results.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.results.horizontalHeader().setSectionResizeMode(ResultColumn.REPO, QHeaderView.Stretch)

        self.repo_label = QLabel("Choose a repository to see its models.")
        self.repo_label.setWordWrap(True)
        self.models = QTreeWidget()
        self.models.setColumnCount(len(ModelColumn))
        self.models.setHeaderLabels([_MODEL_HEADERS[c][0] for c in ModelColumn])
        for column in ModelColumn:
            self.models.headerItem().setToolTip(column, _MODEL_HEADERS[column][1])
        self.models.setRootIsDecorated(True)
        self.models.setUniformRowHeights(True)
        self.models.setAlternatingRowColors(True)
        self.models.setTextElideMode(Qt.ElideMiddle)
        self.models.header().setStretchLastSection(False)
        self.models.header().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.models.header().setSectionResizeMode(ModelColumn.FILE, QHeaderView.Stretch)
        self.download_button = QPushButton("Download")
        self.download_button.setToolTip("Add the selected model to the downloads below")
        self.download_button.setEnabled(False)

        self.dest_label = QLabel(f"Models are saved in {self._dest}")
        self.dest_label.setStyleSheet("color: gray;")
        self.dest_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.clear_button = QPushButton("Clear finished")
        self.clear_button.setToolTip("Remove finished, failed and cancelled downloads from the list")
        self.clear_button.setEnabled(False)
        self._rows_widget = QWidget()
        self._rows_layout = QVBoxLayout(self._rows_widget)
        self._rows_layout.setContentsMargins(0, 0, 0, 0)
        self.no_downloads_label = QLabel("Nothing downloading. Choose a model above and press Download.")
        self.no_downloads_label.setStyleSheet("color: gray;")
        self._rows_layout.addWidget(self.no_downloads_label)
        self._rows_layout.addStretch(1)
        rows_scroll = QScrollArea()
        rows_scroll.setWidget(self._rows_widget)
        rows_scroll.setWidgetResizable(True)
        rows_scroll.setFrameShape(QFrame.NoFrame)

        search_row = QHBoxLayout()
        search_row.addWidget(self.search_box, 1)
        search_row.addWidget(self.search_button)
        message_row = QHBoxLayout()
        message_row.addWidget(self.message_label, 1)
        message_row.addWidget(self.token_button, 0, Qt.AlignTop)

        repo_panel = QWidget()
        repo_layout = QVBoxLayout(repo_panel)
        repo_layout.setContentsMargins(0, 0, 0, 0)
        repo_layout.addWidget(self.repo_label)
        repo_layout.addWidget(self.models, 1)
        download_row = QHBoxLayout()
        download_row.addStretch(1)
        download_row.addWidget(self.download_button)
        repo_layout.addLayout(download_row)

        browse = QSplitter(Qt.Horizontal)
        browse.addWidget(self.results)
        browse.addWidget(repo_panel)
        browse.setStretchFactor(0, 1)
        browse.setStretchFactor(1, 1)
        browse.setChildrenCollapsible(False)

        downloads = QGroupBox("Downloads")
        downloads_layout = QVBoxLayout(downloads)
        downloads_footer = QHBoxLayout()
        downloads_footer.addWidget(self.dest_label, 1)
        downloads_footer.addWidget(self.clear_button)
        downloads_layout.addWidget(rows_scroll, 1)
        downloads_layout.addLayout(downloads_footer)

        body = QSplitter(Qt.Vertical)
        body.addWidget(browse)
        body.addWidget(downloads)
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 2)
        body.setSizes([300, 200])  # scaled to the real height: room for about three downloads
        body.setChildrenCollapsible(False)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(search_row)
        layout.addLayout(message_row)
        layout.addWidget(self.token_label)
        layout.addWidget(body, 1)

        self.search_box.returnPressed.connect(self.search)
        self.search_button.clicked.connect(self.search)
        self.token_button.clicked.connect(self._ask_for_token)
        self.results.itemSelectionChanged.connect(self._on_result_selected)
        self.models.itemSelectionChanged.connect(self._update_download_button)
        self.download_button.clicked.connect(self._download_selected)
        self.clear_button.clicked.connect(self._clear_finished)

        if offline_mode():
            self._show_offline(OFFLINE_MESSAGE)
        else:
            self._show_message("Search for a model by name, or enter a repository as owner/name.")

    # --- public API ------------------------------------------------------------------------------

    def search(self, text: str | None = None) -> None:
        """Search for `text` (default: what the search box holds) on the thread pool."""
        if text is not None:
            self.search_box.setText(text)
        query = self.search_box.text().strip()
        self._search_generation += 1
        generation = self._search_generation
        self._listing_generation += 1  # an older repository's files no longer belong on show
        self.results.setRowCount(0)
        self._clear_models("Choose a repository to see its models.")
        self._show_message("Searching…")
        client = self._current_client()

        def done(results, error):
            if shiboken6.isValid(self) and generation == self._search_generation:
                self._on_searched(query, results, error)

        run_in_background(lambda: client.search(query), done)

    def set_vram(self, vram_bytes: int | None) -> None:
        """The GPU memory models may use, or None for none; the fits markers follow it."""
        self._vram = vram_bytes
        if self._listing is not None:
            self._show_listing(self._listing)

    def shutdown(self) -> None:
        """Stop every download, keeping partial files so the next download continues them."""
        if self._queue is not None:
            self._queue.cancel_all(keep_partial=True)
            self._queue.wait_idle(timeout=2)

    def sizeHint(self) -> QSize:
        return QSize(980, 680)  # room for repository and file names without eliding them

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)

    # --- searching and listing -------------------------------------------------------------------

    def _current_client(self) -> HubClient:
        """The client, made on first use: the saved token is read only when the Hub is needed."""
        if self._client.client is None:
            self._client.client = self._client_factory(token=credentials.load_token())
        return self._client.client

    def _on_searched(self, query: str, results: list[RepoSummary] | None, error: Exception | None) -> None:
        if error is not None:
            self._show_error(error, retry=lambda: self.search(query))
        elif not results and _REPO_ID.match(query):
            self._show_message(f"{query} is not in the search results; looking it up directly…")
            self._list_repo(query)  # private repositories are found only by their name
        elif not results:
            self._show_message(f"No GGUF models match “{query}”." if query else "No GGUF models found.")
        else:
            self._fill_results(results)
            exact = next((row for row, r in enumerate(results) if r.repo_id.lower() == query.lower()), None)
            if exact is not None:
                self.results.selectRow(exact)
        self.searchFinished.emit()

    def _fill_results(self, results: list[RepoSummary]) -> None:
        count = len(results)
        self._show_message(f"{count} repositor{'ies' if count != 1 else 'y'} with GGUF models, most downloaded "
                           "first. Choose one to see its models.")
        self.results.setRowCount(count)
        for row, result in enumerate(results):
            access = "private" if result.private else "gated" if result.gated else ""
            tooltip = result.repo_id + (f"\n{access}: downloading needs a Hugging Face access token that may "
                                        "open it" if access else "")
            cells = {
                ResultColumn.REPO: result.repo_id,
                ResultColumn.DOWNLOADS: f"{result.downloads:,}",
                ResultColumn.LIKES: f"{result.likes:,}",
                ResultColumn.UPDATED: result.last_modified.strftime("%Y-%m-%d") if result.last_modified else "",
                ResultColumn.ACCESS: access,
            }
            for column, text in cells.items():
                item = QTableWidgetItem(text)
                if column in (ResultColumn.DOWNLOADS, ResultColumn.LIKES):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                item.setToolTip(tooltip)
                self.results.setItem(row, column, item)

    def _on_result_selected(self) -> None:
        rows = self.results.selectionModel().selectedRows()
        if rows:
            self._list_repo(self.results.item(rows[0].row(), ResultColumn.REPO).text())

    def _list_repo(self, repo_id: str) -> None:
        self._listing_generation += 1
        generation = self._listing_generation
        self._clear_models(f"Listing the models in {repo_id}…")
        client = self._current_client()

        def done(listing, error):
            if shiboken6.isValid(self) and generation == self._listing_generation:
                self._on_listed(repo_id, listing, error)

        run_in_background(lambda: client.list_models(repo_id), done)

    def _on_listed(self, repo_id: str, listing: RepoListing | None, error: Exception | None) -> None:
        if error is not None:
            self._clear_models(f"Could not list the models in {repo_id}.")
            self._show_error(error, retry=lambda: self._list_repo(repo_id))
        else:
            self._show_listing(listing)
        self.listingFinished.emit(repo_id)

    def _clear_models(self, text: str) -> None:
        self._listing = None
        self.models.clear()
        self.repo_label.setText(text)
        self._update_download_button()

    def _show_listing(self, listing: RepoListing) -> None:
        self._clear_models("")
        self._listing = listing
        count = len(listing.models)
        if not count:
            self.repo_label.setText(f"{listing.repo_id} has no GGUF model files Hearth can load.")
            return
        text = f"<b>{html.escape(listing.repo_id, quote=False)}</b>: {count} model{'s' if count != 1 else ''}"
        if listing.gated:
            text += " · gated: downloading needs an access token with approved access"
        self.repo_label.setText(text)
        for quant, models in by_quant(listing.models).items():
            if len(models) == 1:
                self.models.addTopLevelItem(self._model_item(models[0], quant))
                continue
            group = QTreeWidgetItem([quant, f"{len(models)} models"])
            group.setFlags(group.flags() & ~Qt.ItemIsSelectable)
            group.addChildren([self._model_item(model, "") for model in models])
            self.models.addTopLevelItem(group)
            group.setExpanded(True)

    def _model_item(self, model: RemoteModel, quant: str) -> QTreeWidgetItem:
        fits, usable, tooltip = fit_text(model.size, self._vram)
        item = QTreeWidgetItem([quant, model.name, format_bytes(model.size), fits])
        item.setData(0, _MODEL_ROLE, model)
        item.setTextAlignment(ModelColumn.SIZE, Qt.AlignRight | Qt.AlignVCenter)
        item.setToolTip(ModelColumn.FITS, tooltip)
        parts = f"{len(model.parts)} parts, loaded together:\n" if len(model.parts) > 1 else ""
        item.setToolTip(ModelColumn.FILE, parts + "\n".join(part.path for part in model.parts))
        if not usable:
            grey = QGuiApplication.palette().color(QPalette.Disabled, QPalette.Text)
            for column in ModelColumn:
                item.setForeground(column, grey)
        return item

    def _selected_model(self) -> RemoteModel | None:
        items = self.models.selectedItems()
        return items[0].data(0, _MODEL_ROLE) if items else None

    def _update_download_button(self) -> None:
        self.download_button.setEnabled(self._selected_model() is not None)

    # --- messages and the access token -----------------------------------------------------------

    def _show_message(self, text: str, error: bool = False) -> None:
        self.message_label.setText(text)
        self.message_label.setStyleSheet(f"color: {ERROR_COLOR};" if error else "")
        self._retry = None
        self.token_button.hide()

    def _show_offline(self, detail: str) -> None:
        self._show_message(f"{OFFLINE_HEADLINE}\n{detail}", error=True)

    def _show_error(self, error: Exception, retry: Callable[[], None]) -> None:
        """Say what went wrong; a gated repository also gets the token button, which retries."""
        if isinstance(error, HubUnavailable):
            self._show_offline(str(error))
        elif isinstance(error, HubError):
            self._show_message(str(error), error=True)
        else:
            _log.error("Hugging Face request failed", exc_info=error)
            self._show_message(f"Something went wrong: {error}", error=True)
        if isinstance(error, GatedRepo):
            self._retry = retry
            self.token_button.show()

    def _ask_for_token(self) -> None:
        token, ok = QInputDialog.getText(
            self, "Hugging Face access token",
            "Paste an access token from huggingface.co/settings/tokens.\n"
            "It opens the gated and private repositories your account may use.",
            QLineEdit.Password,
        )
        token = token.strip()
        if not ok or not token:
            return
        saved = credentials.save_token(token)
        self.token_label.setText(saved.message)
        self.token_label.show()
        self._client.client = self._client_factory(token=token)
        retry = self._retry
        self._show_message("Trying again with the access token…")
        if retry is not None:
            retry()

    # --- downloads -------------------------------------------------------------------------------

    def _download_selected(self) -> None:
        model = self._selected_model()
        if model is not None:
            self._download(model)

    def _download(self, model: RemoteModel) -> None:
        waiting = next((row for row in self._rows.values() if not row.done and row.job.model == model), None)
        if waiting is not None:
            self._show_message(f"{model.name} is already in the downloads list.")
            return
        if self._queue is None:
            self._current_client()
            self._queue = DownloadQueue(
                self._client, self._dest,
                on_progress=self._relay.progress.emit,
                on_finished=self._relay.finished.emit,
                on_failed=self._relay.failed.emit,
            )
        job = self._queue.add(model)
        row = DownloadRow(job)
        self._rows[job] = row
        self._rows_layout.insertWidget(self._rows_layout.count() - 1, row)
        self.no_downloads_label.hide()

    def _on_progress(self, job: QueuedDownload, progress: DownloadProgress) -> None:
        if job in self._rows:
            self._rows[job].show_progress(progress)

    def _on_finished(self, job: QueuedDownload) -> None:
        if job in self._rows:
            self._rows[job].show_finished(job.path)
            self.clear_button.setEnabled(True)
        self.modelDownloaded.emit(job.path)

    def _on_failed(self, job: QueuedDownload) -> None:
        row = self._rows.get(job)
        if row is not None:
            row.show_failed(job.error)
            self.clear_button.setEnabled(True)
        if isinstance(job.error, GatedRepo):
            self._show_error(job.error, retry=lambda: self._retry_download(job))

    def _retry_download(self, job: QueuedDownload) -> None:
        self._remove_row(job)
        self._download(job.model)
        self._show_message(f"Downloading {job.model.name} again, with the access token: see Downloads below.")

    def _clear_finished(self) -> None:
        for job in [job for job, row in self._rows.items() if row.done]:
            self._remove_row(job)
        self.clear_button.setEnabled(False)

    def _remove_row(self, job: QueuedDownload) -> None:
        row = self._rows.pop(job, None)
        if row is not None:
            row.deleteLater()
        self.no_downloads_label.setVisible(not self._rows)
