"""The status bar's indexing (ui/window/indexing_status.py) in the real main window over a real
DocumentLibrary and the real embedding model: a run goes on in the status bar once Settings is
closed, with Cancel; how it ended stays a while, and failures lead to Settings → Documents; a
run cut short is taken up again when the window next opens; a problem is said there, not in a box.
Settings is opened from the File menu and closed with Esc, as a user does."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from documents_page_helpers import (  # noqa: F401 (fixtures: pytest finds them by name here)
    WAIT_MS,
    Library,
    add_folder,
    folder,
    gated,
    heard,
    heard_in_status,
    made,
    minilm,
    row,
)
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox
from support.scripted_window import find_action
from support.window_stack import DATABASE_FILE, ModelStack

from app.owners.chat_session import ChatSession
from app.owners.conversation_documents import ConversationDocuments
from app.owners.documents import DocumentLibrary
from app.owners.downloads import DownloadManager
from app.store import ConversationStore
from app.ui.dialogs.collection_words import UNFINISHED
from app.ui.dialogs.settings import SettingsDialog
from app.ui.window.main_window import MainWindow


@dataclass
class Opened:
    window: MainWindow
    downloads: DownloadManager
    store: ConversationStore

    def close(self) -> None:
        self.window.close()
        self.downloads.shutdown()
        self.store.close()


@pytest.fixture
def windows(qtbot, scripted_models, tmp_path):
    """Opens the main window over a library, as the application assembles it (a session with
    documents); each is closed after the test, before the libraries."""
    opened: list[Opened] = []

    def open_window(library: DocumentLibrary) -> MainWindow:
        stack = ModelStack.of(scripted_models, tmp_path)
        store = ConversationStore(tmp_path / DATABASE_FILE)
        session = ChatSession(store, stack.bridge, scripted_models, None, documents=ConversationDocuments(library))
        downloads = DownloadManager()
        window = MainWindow(scripted_models, session, stack.settings, downloads)
        qtbot.addWidget(window)
        window.resize(1024, 640)
        window.show()
        qtbot.waitExposed(window)
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
        opened.append(Opened(window, downloads, store))
        return window

    yield open_window
    for each in opened:
        each.close()


def open_settings(qtbot, window: MainWindow) -> SettingsDialog:
    """File → Settings…, then its Documents tab by its mnemonic (Alt+O)."""
    find_action(window, "Settings").trigger()
    dialog = window._settings_dialog
    qtbot.waitUntil(dialog.isActiveWindow, timeout=WAIT_MS)
    QTest.keyClick(dialog, Qt.Key.Key_O, Qt.KeyboardModifier.AltModifier)
    assert dialog.tabs.currentWidget() is dialog.documents
    return dialog


def shown(window: MainWindow) -> str:
    """The status bar's indexing line, "" when it is hidden."""
    status = window.indexing_status
    return status.label.text() if status.widget.isVisible() else ""


def test_a_run_goes_on_in_the_status_bar_and_its_failures_lead_to_settings(qtbot, gated, folder, windows, heard,
                                                                           heard_in_status):
    window = windows(gated.library)
    status = window.indexing_status
    dialog = open_settings(qtbot, window)
    with qtbot.waitSignal(gated.library.indexed, timeout=WAIT_MS) as ended:
        add_folder(qtbot, dialog.documents, folder)
        gated.embedding(qtbot)
        qtbot.waitUntil(lambda: dialog.documents.progress_label.text() == "Indexing “docs”: 0 of 3 files",
                        timeout=WAIT_MS)
        assert shown(window) == "", "the page says it while it is shown"
        dialog.activateWindow()
        qtbot.waitUntil(dialog.isActiveWindow, timeout=WAIT_MS)
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)
        assert not dialog.isVisible()
        assert shown(window) == "Indexing “docs”: 0 of 3 files" and status.cancel_button.isVisible()
        gated.release()
    assert not ended.args[1].cancelled
    assert shown(window) == "“docs” indexed: 2 files, 1 failed"
    assert status.why_button.isVisible() and not status.cancel_button.isVisible()
    assert heard_in_status == [("“docs” indexed: 2 files, 1 failed See why in Settings → Documents.", False)]
    assert not any("indexed" in text for text, _urgent in heard), "said once: by the status bar, not the hidden page"
    QTest.mouseClick(status.why_button, Qt.MouseButton.LeftButton)
    assert dialog.isVisible() and dialog.tabs.currentWidget() is dialog.documents
    assert shown(window) == "" and dialog.documents.failures.item(0, 0).text() == "broken.docx"


def test_cancel_in_the_status_bar_then_the_next_start_goes_on(qtbot, tmp_path, minilm, folder, windows):
    first = Library(tmp_path, minilm, gated=True)
    try:
        window = windows(first.library)
        status = window.indexing_status
        with qtbot.waitSignal(first.library.indexed, timeout=WAIT_MS) as ended:
            first.library.add("docs", [folder])  # as Settings → Documents asks (tested in test_documents_page.py)
            first.embedding(qtbot)
            qtbot.waitUntil(lambda: shown(window) == "Indexing “docs”: 0 of 3 files", timeout=WAIT_MS)
            QTest.mouseClick(status.cancel_button, Qt.MouseButton.LeftButton)
            first.release()
        assert ended.args[1].cancelled
        assert shown(window) == "Indexing “docs” stopped after 1 of 3 files." and not status.why_button.isVisible()
        dialog = open_settings(qtbot, window)
        qtbot.waitUntil(lambda: row(dialog.documents, "docs")[5] == UNFINISHED, timeout=WAIT_MS)
        window.close()
    finally:
        first.close()

    again = Library(tmp_path, minilm)
    try:
        qtbot.waitUntil(lambda: again.library.names() == ("docs",), timeout=WAIT_MS)
        with qtbot.waitSignal(again.library.indexed, timeout=WAIT_MS) as resumed:
            window = windows(again.library)  # Hearth starts again: the window takes the run up
        report = resumed.args[1]
        assert (report.cancelled, report.unchanged, report.indexed, len(report.failed)) == (False, 1, 1, 1)
        assert shown(window) == "“docs” indexed: 2 files, 1 failed"
    finally:
        again.close()


def test_a_problem_is_said_in_the_status_bar_not_in_a_box(qtbot, tmp_path, made, folder, windows, heard_in_status):
    not_a_model = tmp_path / "not-a-model.gguf"
    not_a_model.write_bytes(b"GGUF but not really")
    made.library.set_embedding_model(not_a_model)
    window = windows(made.library)
    with qtbot.waitSignal(made.library.indexingChanged, timeout=WAIT_MS, check_params_cb=lambda names: names == ()):
        made.library.add("docs", [folder])
    message = window.statusBar().currentMessage()
    assert message.startswith("Documents: docs could not be indexed") and (message, True) in heard_in_status
    assert shown(window) == "", "no run left showing"
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]


def test_without_documents_nothing_is_shown(qtbot, scripted_models, tmp_path):
    stack = ModelStack.of(scripted_models, tmp_path)
    store = ConversationStore(tmp_path / DATABASE_FILE)
    downloads = DownloadManager()
    window = MainWindow(scripted_models, ChatSession(store, stack.bridge, scripted_models), stack.settings, downloads)
    qtbot.addWidget(window)
    try:
        window.show()
        window.show_settings("documents")
        dialog = window._settings_dialog
        assert dialog.documents is None and "Saved states" in [dialog.tabs.tabText(i).replace("&", "")
                                                                for i in range(dialog.tabs.count())]
        assert not window.indexing_status.widget.isVisible()
    finally:
        window.close()
        downloads.shutdown()
        store.close()

