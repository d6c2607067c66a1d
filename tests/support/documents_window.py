"""The main window given documents, as app/ui/app/application.py opens it: a real ChatSession with
ConversationDocuments over a real DocumentLibrary (its index a file in the test's folder, its
embedding model the one the test gives), and the keyboard's way into a button's menu."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSettings

from app.owners.chat_session import ChatSession
from app.owners.conversation_documents import ConversationDocuments
from app.owners.document_settings import DocumentSettings
from app.owners.documents import DocumentLibrary
from app.owners.downloads import DownloadManager
from app.store import ConversationStore
from app.ui.window.main_window import MainWindow
from support.window_stack import DATABASE_FILE, ModelStack

WAIT_MS = 60_000


@dataclass
class DocumentsWindow:
    """A real ChatSession given ConversationDocuments over a real DocumentLibrary (its index a
    file in the test's folder); `stack` loads a chat model where a test asks."""

    window: MainWindow
    session: ChatSession
    store: ConversationStore
    library: DocumentLibrary
    stack: ModelStack

    def open_new_conversation(self, title: str) -> int:
        """A conversation made and opened, as the list opens one."""
        conversation_id = self.store.create_conversation(title=title)
        self.session.open(conversation_id)
        return conversation_id

    def wait_indexed(self, qtbot, name: str) -> None:
        """Until the collection is in the library and nothing is being indexed."""
        qtbot.waitUntil(lambda: name in self.library.names() and not self.library.indexing(), timeout=WAIT_MS)


@contextmanager
def window_with_documents(qtbot, folder: Path, open_embedder: Callable[[Path | None], object]):
    stack = ModelStack.start(folder)
    settings = DocumentSettings(QSettings(str(folder / "documents.ini"), QSettings.Format.IniFormat))
    library = DocumentLibrary(settings, folder / "documents.sqlite3", open_embedder)
    qtbot.waitUntil(lambda: library.summaries == () and not library.indexing(), timeout=WAIT_MS)
    store = ConversationStore(folder / DATABASE_FILE)
    session = ChatSession(store, stack.bridge, stack.models, documents=ConversationDocuments(library))
    downloads = DownloadManager()
    window = MainWindow(stack.models, session, stack.settings, downloads)
    window.resize(1024, 640)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    try:
        yield DocumentsWindow(window, session, store, library, stack)
    finally:
        window.close()
        library.close()
        downloads.shutdown()
        stack.shutdown()
        store.close()
