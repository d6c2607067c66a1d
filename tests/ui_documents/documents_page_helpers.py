"""Fixtures and helpers for the tests of Settings → Documents and the status bar's indexing (a
test module imports the fixtures it uses by name): the real embedding model, a folder of
documents (one of them broken), a library over a temporary index (its model optionally held at
its first embed), what is said to a screen reader, and the page driven as a user drives it: its
file chooser and name box typed into and answered with Enter."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QComboBox, QDialog, QFileDialog, QLineEdit
from support.documents_folder import small_folder
from support.gated_embedder import GatedEmbedder
from support.model_files.embedding_model import ensure_minilm
from support.settings_file import settings_at

from app.owners.document_settings import DocumentSettings
from app.owners.documents import DocumentLibrary
from app.owners.tool_servers import ToolServerManager
from app.ui.dialogs import documents_page
from app.ui.dialogs.documents_page import DocumentsPage
from app.ui.dialogs.settings import SettingsDialog
from app.ui.window import indexing_status

WAIT_MS = 60_000


class Library:
    """A DocumentLibrary over tmp_path's index with the real model, its settings in a file beside
    it; `gated`: the model waits at its first embed until `release`."""

    def __init__(self, tmp_path: Path, minilm: Path, gated: bool = False):
        from app.engine.opening import open_embedder

        self.qsettings = QSettings(str(tmp_path / "documents.ini"), QSettings.Format.IniFormat)
        self.models: list[GatedEmbedder] = []

        def opener(model):
            opened = open_embedder(minilm if model is None else model, tmp_path)
            if not gated:
                return opened
            self.models.append(GatedEmbedder(opened))
            return self.models[-1]

        self.library = DocumentLibrary(DocumentSettings(self.qsettings), tmp_path / "documents.sqlite3", opener)

    def embedding(self, qtbot) -> None:
        """Wait until the first file is being embedded (and held)."""
        qtbot.waitUntil(lambda: bool(self.models) and self.models[0].embedding.is_set(), timeout=WAIT_MS)

    def release(self) -> None:
        for model in self.models:
            model.gate.set()

    def close(self) -> None:
        self.release()
        self.library.close()


def open_page(qtbot, tmp_path: Path, library: DocumentLibrary) -> DocumentsPage:
    """Settings over the library, shown and active at its Documents tab."""
    settings = settings_at(tmp_path / "hearth.ini")
    # With the Tools tab too, as the window opens it: every mnemonic of the dialog is in play.
    dialog = SettingsDialog(settings, None, ToolServerManager(settings.tools), documents=library)
    qtbot.addWidget(dialog)
    dialog.show_page("documents")
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=WAIT_MS)
    assert dialog.tabs.currentWidget() is dialog.documents
    dialog.documents.holder = dialog  # qtbot keeps only a weak reference to the dialog
    return dialog.documents


def activate(qtbot, page: DocumentsPage) -> None:
    """The Settings window active again (keys typed reach it), as after a dialog it opened closed."""
    page.window().activateWindow()
    qtbot.waitUntil(page.window().isActiveWindow, timeout=WAIT_MS)


def active_dialog(qtbot, get) -> QDialog:
    """The window-modal dialog the page opened (kept in an attribute), once it is active."""
    qtbot.waitUntil(lambda: get() is not None and get().isVisible(), timeout=WAIT_MS)
    dialog = get()
    qtbot.waitExposed(dialog)
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=WAIT_MS)
    return dialog


def choose_in_file_dialog(qtbot, page: DocumentsPage, text: str, folder: Path | None = None) -> None:
    """Type into the chooser's file name box and press Enter (`folder`: the folder it shows)."""
    dialog: QFileDialog = active_dialog(qtbot, lambda: page.file_dialog)
    if folder is not None:
        dialog.setDirectory(str(folder))
    name_box = dialog.findChild(QLineEdit, "fileNameEdit")
    name_box.setFocus()
    name_box.setText(text)
    QTest.keyClick(name_box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: page.file_dialog is None, timeout=WAIT_MS)


def name_collection(qtbot, page: DocumentsPage, name: str | None = None) -> list[str]:
    """Answer the name box: type `name` (None: keep the default), press Enter; the names offered."""
    dialog = active_dialog(qtbot, lambda: page.name_dialog)
    combo = dialog.findChild(QComboBox)
    offered = [combo.itemText(index) for index in range(combo.count())]
    if name is not None:
        combo.lineEdit().selectAll()
        QTest.keyClicks(combo.lineEdit(), name)
    QTest.keyClick(combo.lineEdit(), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: page.name_dialog is None, timeout=WAIT_MS)
    return offered


def add_folder(qtbot, page: DocumentsPage, folder: Path, name: str | None = None) -> list[str]:
    """Add folder…, as a user does: the folder typed in the chooser, then its collection's name."""
    QTest.mouseClick(page.add_folder_button, Qt.MouseButton.LeftButton)
    choose_in_file_dialog(qtbot, page, str(folder))
    return name_collection(qtbot, page, name)


def row(page: DocumentsPage, name: str) -> list[str]:
    """The table's cells of the collection's row."""
    for index in range(page.table.rowCount()):
        if page.table.item(index, 0).data(Qt.ItemDataRole.UserRole) == name:
            return [page.table.item(index, column).text() for column in range(page.table.columnCount())]
    raise AssertionError(f"no row for {name!r}")


def failures(page: DocumentsPage) -> list[list[str]]:
    table = page.failures
    return [[table.item(index, column).text() for column in range(2)] for index in range(table.rowCount())]


def roots(page: DocumentsPage) -> list[str]:
    return [page.roots.item(index).text() for index in range(page.roots.count())]


def indexed_row(qtbot, page: DocumentsPage, name: str) -> list[str]:
    """The row, once no run is going and the collection was read back."""
    qtbot.waitUntil(lambda: not page.library.indexing() and name in page.library.names()
                    and row(page, name)[5].startswith("Indexed"), timeout=WAIT_MS)
    return row(page, name)


@pytest.fixture
def minilm() -> Path:
    """The converted model, looked up (and converted if need be) for each test: another pytest run
    on the machine may convert it again after a change to the converter."""
    return ensure_minilm().gguf


@pytest.fixture
def folder(tmp_path) -> Path:
    """Two documents and a .docx that is no zip archive."""
    return small_folder(tmp_path)


@pytest.fixture
def made(tmp_path, minilm, qtbot):
    made = Library(tmp_path, minilm)
    yield made
    made.close()


@pytest.fixture
def gated(tmp_path, minilm, qtbot):
    """A library whose model waits at its first embed until the test releases it."""
    made = Library(tmp_path, minilm, gated=True)
    yield made
    made.close()


def _hearing(monkeypatch, module) -> list[tuple[str, bool]]:
    said: list[tuple[str, bool]] = []
    monkeypatch.setattr(module, "announce", lambda _widget, text, urgent=False: said.append((text, urgent)))
    return said


@pytest.fixture
def heard(monkeypatch) -> list[tuple[str, bool]]:
    """What the page says to a screen reader: (text, urgent)."""
    return _hearing(monkeypatch, documents_page)


@pytest.fixture
def heard_in_status(monkeypatch) -> list[tuple[str, bool]]:
    """What the status bar's indexing says to a screen reader: (text, urgent)."""
    return _hearing(monkeypatch, indexing_status)
