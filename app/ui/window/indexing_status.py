"""The window's status bar while documents are indexed and Settings → Documents is not in view.

Indexing a folder takes minutes on a small machine and goes on with the Settings dialog closed,
so the status bar says how it goes ("Indexing “notes”: 12 of 40 files", with Cancel), then how
it ended ("“notes” indexed: 38 files, 2 failed"; with failures, "See why…" opens Settings →
Documents, whose list says why each file was skipped). While the Documents page is shown, it
says all this itself and the status bar stays quiet, so a screen reader hears each thing once.
A problem the library reports (a model that does not load, a damaged index) is shown for a while
and said at once.

A collection whose last run was cut short (Hearth quit while indexing) is taken up again here,
once, when the window first has the collections (DocumentLibrary.resume), unless the user
asked for a run before that.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QStatusBar, QToolButton, QWidget

from ...common.text import shorten
from ...documents.indexing import IndexReport, Progress
from ...owners.chat_session import ChatSession
from ..dialogs import collection_words as words
from ..dialogs.documents_page import DocumentsPage
from ..widgets.announce import announce

DONE_MS = 15_000  # how long "“notes” indexed: 38 files" stays
FAILED_MS = 60_000  # and with files that failed, whose "See why…" the user may want
PROBLEM_MS = 20_000
PROBLEM_CHARS = 160


class IndexingStatus(QObject):
    """Indexing in the status bar, for MainWindow.

    Slots (connected here): the session's DocumentLibrary's indexingChanged, progress, indexed,
    problem and (once) collectionsChanged. `open_settings("documents")` opens Settings at its
    Documents page. Nothing is shown, and nothing connected, when the session has no documents.
    """

    def __init__(self, session: ChatSession, status_bar: QStatusBar, open_settings: Callable[[str], None],
                 window: QWidget):
        """`window`: the main window, whose Settings dialog may hold the Documents page."""
        super().__init__(window)
        self._status_bar, self._open_settings, self._window = status_bar, open_settings, window
        self._steps: dict[str, Progress] = {}
        self._running: str | None = None
        self._asked = False  # the user asked for a run, or runs cut short were taken up
        self._watched: list[DocumentsPage] = []
        self.widget = QWidget()
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # a collection's name
        self.cancel_button = self._button("Cancel", "Cancel indexing", "Stop indexing this collection; what is "
                                          "done stays, and its next update goes on from there")
        self.why_button = self._button("See why…", "See why files were not read",
                                       "Open Settings → Documents, which lists each file that was not read and why")
        row = QHBoxLayout(self.widget)
        row.setContentsMargins(6, 0, 6, 0)
        row.addWidget(self.label)
        row.addWidget(self.cancel_button)
        row.addWidget(self.why_button)
        self._hide_timer = QTimer(self)
        self._hide_timer.setSingleShot(True)
        self._hide_timer.timeout.connect(self.widget.hide)
        status_bar.addWidget(self.widget)
        self.widget.hide()
        if session.documents is None:
            return
        self.library = library = session.documents.library
        self.cancel_button.clicked.connect(lambda: self._running is not None and library.cancel(self._running))
        self.why_button.clicked.connect(self._show_why)
        library.indexingChanged.connect(self._indexing_changed)
        library.progress.connect(self._progress)
        library.indexed.connect(self._ended)
        library.problem.connect(self._problem)
        if library.summaries:  # already read: take up what was cut short now
            self._resume()
        else:
            library.collectionsChanged.connect(self._first_read, Qt.ConnectionType.SingleShotConnection)

    def page_shown(self) -> bool:
        """Whether Settings → Documents is on screen (it then says everything itself). The page
        is watched from then on, so a run goes on in the status bar as soon as it is closed."""
        pages = self._window.findChildren(DocumentsPage)
        for page in pages:
            if page not in self._watched:
                self._watched.append(page)
                page.installEventFilter(self)
        return any(page.isVisible() for page in pages)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The Documents page hidden (Settings closed, another tab) while a run goes on: the
        status bar takes it up; shown: the page says it."""
        if event.type() == QEvent.Type.Hide and self._running is not None and not self.page_shown():
            self._show_running(len(self.library.indexing()) - 1)
        elif event.type() == QEvent.Type.Show and self.cancel_button.isVisibleTo(self.widget):
            self.widget.hide()
        return False

    def _button(self, text: str, name: str, description: str) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setAutoRaise(True)
        button.setAccessibleName(name)
        button.setAccessibleDescription(description)
        button.setToolTip(description)
        return button

    def _first_read(self, _summaries) -> None:
        if not self._asked:
            self._resume()

    def _resume(self) -> None:
        self._asked = True
        self.library.resume()

    def _indexing_changed(self, names) -> None:
        self._asked = True
        running = names[0] if names else None
        if running != self._running:
            self._steps.pop(self._running or "", None)
        self._running = running
        if running is not None:
            self._show_running(len(names) - 1)
        elif self.cancel_button.isVisibleTo(self.widget):  # it ended with no report (a problem says why)
            self.widget.hide()

    def _progress(self, name: str, step: Progress) -> None:
        self._steps[name] = step
        if name == self._running:
            self._show_running(len(self.library.indexing()) - 1)

    def _show_running(self, waiting: int) -> None:
        if self.page_shown():
            self.widget.hide()
            return
        more = f" ({waiting:,} more waiting)" if waiting > 0 else ""
        self._show(words.running_words(self._running, self._steps.get(self._running)) + more, running=True)

    def _ended(self, name: str, report: IndexReport) -> None:
        """How the run ended, for a while; with failures, a way to see why."""
        last = self._steps.pop(name, None)
        if self.page_shown():
            self.widget.hide()
            return
        summary = next((found for found in self.library.summaries if found.name == name), None)
        text = words.ended_words(name, report, summary, last)
        failed = not report.cancelled and words.failed_of(summary, report) > 0
        self._show(text, failed=failed)
        self._hide_timer.start(FAILED_MS if failed else DONE_MS)
        announce(self.label, text + (" See why in Settings → Documents." if failed else ""))

    def _show(self, text: str, running: bool = False, failed: bool = False) -> None:
        self._hide_timer.stop()
        self.label.setText(text)
        self.cancel_button.setVisible(running)
        self.why_button.setVisible(failed)
        self.widget.show()

    def _show_why(self) -> None:
        self.widget.hide()
        self._open_settings("documents")

    def _problem(self, text: str) -> None:
        if not self.page_shown():
            message = f"Documents: {shorten(text, PROBLEM_CHARS)}"
            self._status_bar.showMessage(message, PROBLEM_MS)
            announce(self.label, message, urgent=True)
