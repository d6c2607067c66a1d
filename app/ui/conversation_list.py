"""The left pane: conversations, newest first, with search, rename, delete and export."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QLineEdit, QMenu, QPushButton, QVBoxLayout, QWidget

from ..store import Conversation, shorten

# Characters of a title shown in a row and its tooltip: an imported title may be a megabyte,
# which made every refresh of the list take seconds.
TITLE_SHOWN_CHARS = 120


_SHOWN_TITLE = Qt.UserRole + 1


def shown_title(title: str) -> str:
    """A title as lists, messages and file names show it: one line, TITLE_SHOWN_CHARS at most."""
    return shorten(title, TITLE_SHOWN_CHARS) or "New chat"


class ConversationList(QWidget):
    """Lists conversations; says what the user asked for, the window decides what it means.

    Signals:
        opened(int): a conversation was selected.
        newRequested(): "New chat".
        renameRequested(int, str): a title was edited in place.
        deleteRequested(int): Delete from the context menu (the window offers Undo).
        exportRequested(int, str): export as "markdown" or "json".
        searchChanged(str): the search text, debounced.
    """

    opened = Signal(int)
    newRequested = Signal()
    renameRequested = Signal(int, str)
    deleteRequested = Signal(int)
    exportRequested = Signal(int, str)
    searchChanged = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.new_button = QPushButton("New chat")
        self.new_button.setToolTip("Start a new conversation (Ctrl+N)")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search conversations…")
        self.search.setClearButtonEnabled(True)
        self.list = QListWidget()
        self.list.setContextMenuPolicy(Qt.CustomContextMenu)
        self.list.setEditTriggers(QListWidget.EditKeyPressed | QListWidget.DoubleClicked)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.ElideRight)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 0, 6)
        layout.addWidget(self.new_button)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        self._debounce = QTimer(self, singleShot=True, interval=200)
        self._debounce.timeout.connect(lambda: self.searchChanged.emit(self.search.text()))
        self.search.textChanged.connect(self._debounce.start)
        self.new_button.clicked.connect(self.newRequested)
        self.list.currentItemChanged.connect(self._on_current)
        self.list.itemChanged.connect(self._on_item_changed)
        self.list.customContextMenuRequested.connect(self._context_menu)
        self._filling = False

    def set_conversations(self, conversations: list[Conversation], current: int | None) -> None:
        self._filling = True
        self.list.clear()
        for conversation in conversations:
            title = shown_title(conversation.title)
            item = QListWidgetItem(title)
            item.setData(Qt.UserRole, conversation.id)
            item.setData(_SHOWN_TITLE, title)
            item.setToolTip(f"{title}\nLast active {shorten(conversation.updated_at[:16].replace('T', ' '))}")
            item.setFlags(item.flags() | Qt.ItemIsEditable)
            self.list.addItem(item)
            if conversation.id == current:
                self.list.setCurrentItem(item)
        self._filling = False

    def _on_current(self, item, _previous) -> None:
        if item is not None and not self._filling:
            self.opened.emit(item.data(Qt.UserRole))

    def _on_item_changed(self, item) -> None:
        """A rename, unless the text is still the shown title: editing a shortened title and
        leaving it as it was must not cut the stored one to what was shown."""
        text = item.text().strip()
        if not self._filling and text and text != item.data(_SHOWN_TITLE):
            self.renameRequested.emit(item.data(Qt.UserRole), text)

    def _context_menu(self, position) -> None:
        item = self.list.itemAt(position)
        if item is None:
            return
        conversation_id = item.data(Qt.UserRole)
        menu = QMenu(self)
        menu.addAction("Rename", lambda: self.list.editItem(item))
        menu.addAction("Export as Markdown…", lambda: self.exportRequested.emit(conversation_id, "markdown"))
        menu.addAction("Export as JSON…", lambda: self.exportRequested.emit(conversation_id, "json"))
        menu.addSeparator()
        menu.addAction("Delete", lambda: self.deleteRequested.emit(conversation_id))
        menu.exec(self.list.viewport().mapToGlobal(position))
