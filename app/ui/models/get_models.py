"""The "Get models" view: find GGUF models on Hugging Face and download them into Hearth.

Why it is built the way it is:

* Every Hub request (a search, a repository's file list) runs on the thread pool through
  `run_in_background`, and downloads run on the DownloadQueue's own thread, so a slow or
  silent network never freezes the window; the library's timeouts bound every wait. Only
  the newest search and the newest listing are shown (`app.common.newest.NewestWins`), so a late
  answer cannot replace a newer one.
* The view only shows downloads: they belong to the application's DownloadManager, which
  also holds the Hub client. Closing or deleting the view stops none of them, and a view
  opened later shows them all (`DownloadsPanel`).
* Nothing touches the network until the user searches or chooses a model, so opening the
  view with no network, or with HF_HUB_OFFLINE set, just says that Hugging Face can't be
  reached. Before a search, and whenever the Hub can't be reached, the view shows Hearth's
  own suggestions (`curated_list.py`): a few small instruct models, each marked as fitting
  this machine or not; choosing one lists its repository as a search result does, with its
  recommended file selected.
* A gated or private repository asks for an access token, which the manager keeps in the
  system keyring (or for this session only); the client is rebuilt with it and the action
  that failed is tried again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ...common.newest import NewestWins
from ...library.curated import CuratedListError, CuratedModel, load_curated
from ...library.download_queue import QueuedDownload
from ...library.errors import OFFLINE_MESSAGE, GatedRepo, HubError, HubUnavailable
from ...library.hub import RepoListing, RepoSummary, offline_mode
from ...owners.downloads import DownloadManager
from ..widgets.background import run_in_background
from ..widgets.colors import Tone, set_tone
from .curated_list import CuratedModelsTable
from .downloads_panel import DownloadsPanel
from .hub_lists import RepoModelsTree, SearchResultsTable

_log = logging.getLogger(__name__)

OFFLINE_HEADLINE = (
    "Hugging Face can't be reached — Hearth works offline; models you already have are in the Model tab."
)
_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


class GetModelsView(QWidget):
    """Search Hugging Face for GGUF models, see what fits this machine, and download them.

    Before a search (and when the Hub can't be reached) it suggests a few small instruct
    models. Searching takes text or an exact `owner/name`; choosing a repository lists its models
    grouped by quantization with their size and whether they fit in RAM (or VRAM, once
    `set_vram` gave a figure). Download queues the chosen model with `manager`, whose
    downloads (also those queued before this view was made) are listed below.

    Signals:
        searchFinished(): a search's results, or why it failed, are on show.
        listingFinished(str): a repository's models (repo id), or why they could not be
            listed, are on show.
    """

    searchFinished = Signal()
    listingFinished = Signal(str)

    def __init__(self, manager: DownloadManager, parent=None):
        super().__init__(parent)
        self._manager = manager
        self._vram: int | None = None
        self._curated: list[CuratedModel] = []
        self._wanted_file: str | None = None  # a suggestion's file, selected when its listing comes
        self._listing: RepoListing | None = None
        self._searches = NewestWins()
        self._listings = NewestWins()
        self._retry: Callable[[], None] | None = None  # what to try again once a token is entered

        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText("Search GGUF models (e.g. qwen3), or enter owner/name")
        self.search_box.setClearButtonEnabled(True)
        self.search_box.setAccessibleName("Search Hugging Face")
        self.search_box.setAccessibleDescription("Words to search GGUF models for, or a repository as owner/name; "
                                                 "Enter searches")
        self.search_button = QPushButton("Search")
        self.suggestions_button = QPushButton("Suggestions")
        self.suggestions_button.setToolTip("Back to Hearth's suggested models")
        self.suggestions_button.hide()

        # The labels below quote what the server sent (repository and file names, messages):
        # plain text, so none of it is rendered as HTML.
        self.message_label = QLabel()
        self.message_label.setTextFormat(Qt.PlainText)
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.token_button = QPushButton("Enter token…")
        self.token_button.setToolTip("Enter a Hugging Face access token (huggingface.co/settings/tokens)")
        self.token_button.hide()
        self.token_label = QLabel()
        self.token_label.setTextFormat(Qt.PlainText)
        self.token_label.setWordWrap(True)
        set_tone(self.token_label, Tone.MUTED)
        self.token_label.hide()

        self.suggestions = CuratedModelsTable()
        self.suggestions_label = QLabel("Suggested models: small, well-known models that follow instructions. "
                                        "Choose one to see its files.")
        self.suggestions_label.setWordWrap(True)
        self.suggestions_label.setTextFormat(Qt.PlainText)
        self.suggestion_details = QLabel()
        self.suggestion_details.setWordWrap(True)
        self.suggestion_details.setTextFormat(Qt.PlainText)
        self.suggestion_details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.suggestion_details.hide()  # until a suggestion is chosen
        self._suggestions_page = suggestions_page = QWidget()
        suggestions_layout = QVBoxLayout(suggestions_page)
        suggestions_layout.setContentsMargins(0, 0, 0, 0)
        suggestions_layout.addWidget(self.suggestions_label)
        suggestions_layout.addWidget(self.suggestions, 1)
        suggestions_layout.addWidget(self.suggestion_details)
        self.results = SearchResultsTable()
        self.browse_pages = QStackedWidget()
        self.browse_pages.addWidget(suggestions_page)
        self.browse_pages.addWidget(self.results)
        self.repo_label = QLabel("Choose a repository to see its models.")
        self.repo_label.setTextFormat(Qt.PlainText)
        self.repo_label.setWordWrap(True)
        self.models = RepoModelsTree()
        self.download_button = QPushButton("Download")
        self.download_button.setToolTip("Add the selected model to the downloads below")
        self.download_button.setEnabled(False)
        self.downloads = DownloadsPanel(manager)

        search_row = QHBoxLayout()
        search_row.addWidget(self.search_box, 1)
        search_row.addWidget(self.search_button)
        search_row.addWidget(self.suggestions_button)
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
        browse.addWidget(self.browse_pages)
        browse.addWidget(repo_panel)
        browse.setStretchFactor(0, 1)
        browse.setStretchFactor(1, 1)
        browse.setChildrenCollapsible(False)

        body = QSplitter(Qt.Vertical)
        body.addWidget(browse)
        body.addWidget(self.downloads)
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

        # clicked(bool) would land in search(text): a button's slots take no arguments.
        self.search_box.returnPressed.connect(lambda: self.search())
        self.search_button.clicked.connect(lambda _checked=False: self.search())
        self.suggestions_button.clicked.connect(lambda _checked=False: self.show_suggestions())
        self.token_button.clicked.connect(lambda _checked=False: self._ask_for_token())
        self.suggestions.itemSelectionChanged.connect(self._on_suggestion_selected)
        self.results.itemSelectionChanged.connect(self._on_result_selected)
        self.models.itemSelectionChanged.connect(self._update_download_button)
        self.download_button.clicked.connect(lambda _checked=False: self._download_selected())
        manager.jobFailed.connect(self._on_download_failed)

        self._load_suggestions()
        if offline_mode():
            self._show_offline(OFFLINE_MESSAGE)
        else:
            self._show_message("Choose a suggested model, search for one by name, or enter a repository as "
                               "owner/name.")

    # --- public API ------------------------------------------------------------------------------

    def search(self, text: str | None = None) -> None:
        """Search for `text` (default: what the search box holds) on the thread pool."""
        if text is not None:
            self.search_box.setText(text)
        query = self.search_box.text().strip()
        ticket = self._searches.begin()
        self._listings.begin()  # an older repository's files no longer belong on show
        self.results.setRowCount(0)
        self._show_page(self.results)
        self._clear_models("Choose a repository to see its models.")
        self._show_message("Searching…")
        client = self._manager.client()

        def done(results, error):
            if self._searches.finish(ticket):
                self._on_searched(query, results, error)

        run_in_background(lambda: client.search(query), done, self)

    def set_vram(self, vram_bytes: int | None) -> None:
        """The GPU memory models may use, or None for none; the fits markers follow it."""
        self._vram = vram_bytes
        self._refresh_fits()

    def show_suggestions(self) -> None:
        """Show Hearth's suggested models again (after a search)."""
        self._show_page(self._suggestions_page)
        self._refresh_fits()  # free memory changes: a model downloaded or loaded since

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # light to dark: muted rows follow
            self._refresh_fits()

    def sizeHint(self) -> QSize:
        return QSize(980, 680)  # room for repository and file names without eliding them

    # --- suggestions -----------------------------------------------------------------------------

    def _load_suggestions(self) -> None:
        """Read the suggestions file; a broken one is said where the list would be."""
        try:
            self._curated = load_curated()
        except CuratedListError as exc:
            _log.error("%s", exc)
            self.suggestions_label.setText(f"The suggested models can't be shown: {exc}")
            set_tone(self.suggestions_label, Tone.ERROR)
        self.suggestions.show_models(self._curated, self._vram)

    def _refresh_fits(self) -> None:
        """Mark what fits again (the GPU's memory became known, or the palette changed)."""
        self.suggestions.show_models(self._curated, self._vram)
        if self._listing is not None:
            chosen = self.models.selected_model()
            self._show_listing(self._listing)
            if chosen is not None:
                self.models.select_file(chosen.name)

    def _show_page(self, page: QWidget) -> None:
        self.browse_pages.setCurrentWidget(page)
        self.suggestions_button.setVisible(page is self.results)

    def _on_suggestion_selected(self) -> None:
        model = self.suggestions.selected_model()
        self.suggestion_details.setVisible(model is not None)  # an empty selectable label is a nameless stop
        if model is None:
            self.suggestion_details.clear()
            return
        self.suggestion_details.setText(
            f"{model.summary}\n{model.repo_id} · {model.file} · {model.context_length:,} tokens of context")
        self._wanted_file = model.file
        self._list_repo(model.repo_id)

    # --- searching and listing -------------------------------------------------------------------

    def _on_searched(self, query: str, results: list[RepoSummary] | None, error: Exception | None) -> None:
        if error is not None:
            if isinstance(error, HubUnavailable):
                self.show_suggestions()  # offline: what Hearth can suggest without the Hub
            self._show_error(error, retry=lambda: self.search(query))
        elif not results and _REPO_ID.match(query):
            self._show_message(f"{query} is not in the search results; looking it up directly…")
            self._list_repo(query)  # private repositories are found only by their name
        elif not results:
            self._show_message(f"No GGUF models match “{query}”." if query else "No GGUF models found.")
        else:
            count = len(results)
            self._show_message(f"{count} repositor{'ies' if count != 1 else 'y'} with GGUF models, most "
                               "downloaded first. Choose one to see its models.")
            self.results.show_results(results)
            self.results.select_repo(query)
        self.searchFinished.emit()

    def _on_result_selected(self) -> None:
        repo_id = self.results.selected_repo()
        if repo_id is not None:
            self._wanted_file = None
            self._list_repo(repo_id)

    def _list_repo(self, repo_id: str) -> None:
        ticket = self._listings.begin()
        self._clear_models(f"Listing the models in {repo_id}…")
        client = self._manager.client()

        def done(listing, error):
            if self._listings.finish(ticket):
                self._on_listed(repo_id, listing, error)

        run_in_background(lambda: client.list_models(repo_id), done, self)

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
        text = f"{listing.repo_id}: {count} model{'s' if count != 1 else ''}"
        if listing.gated:
            text += " · gated: downloading needs an access token with approved access"
        self.repo_label.setText(text)
        self.models.show_models(listing.models, self._vram)
        if self._wanted_file is not None and not self.models.select_file(self._wanted_file):
            self.repo_label.setText(f"{text} · the suggested {self._wanted_file} is not among them")

    def _update_download_button(self) -> None:
        self.download_button.setEnabled(self.models.selected_model() is not None)

    # --- messages and the access token -----------------------------------------------------------

    def _show_message(self, text: str, error: bool = False) -> None:
        self.message_label.setText(text)
        set_tone(self.message_label, Tone.ERROR if error else Tone.NORMAL)
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
        saved = self._manager.set_token(token)
        self.token_label.setText(saved.message)
        self.token_label.show()
        retry = self._retry
        self._show_message("Trying again with the access token…")
        if retry is not None:
            retry()

    # --- downloads -------------------------------------------------------------------------------

    def _download_selected(self) -> None:
        model = self.models.selected_model()
        if model is not None and self._manager.download(model) is None:
            self._show_message(f"{model.name} is already in the downloads list.")

    def _on_download_failed(self, job: QueuedDownload) -> None:
        if isinstance(job.error, GatedRepo):
            self._show_error(job.error, retry=lambda: self._retry_download(job))

    def _retry_download(self, job: QueuedDownload) -> None:
        self._manager.retry(job)
        self._show_message(f"Downloading {job.model.name} again, with the access token: see Downloads below.")
