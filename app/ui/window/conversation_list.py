"""The left pane: conversations, newest first and grouped by day, with search, rename, delete
and export, all of it from the keyboard too (Delete, F2, the Menu key and Shift+F10)."""

from __future__ import annotations

from datetime import date

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QContextMenuEvent, QKeyEvent, QKeySequence, QMouseEvent
from PySide6.QtWidgets import QLabel, QLineEdit, QListWidget, QListWidgetItem, QMenu, QPushButton, QVBoxLayout, QWidget

from ...store import Conversation, shorten
from .conversation_rows import (
    CONVERSATION_ID,
    HEADING,
    SHOWN_TITLE,
    SNIPPET,
    ConversationDelegate,
    date_group,
    local_time,
    snippet_text,
)

# Characters of a title shown in a row and its tooltip: an imported title may be a megabyte,
# which made every refresh of the list take seconds.
TITLE_SHOWN_CHARS = 120
NO_CONVERSATIONS = "No conversations yet: what you send appears here."


def shown_title(title: str) -> str:
    """A title as lists, messages and file names show it: one line, TITLE_SHOWN_CHARS at most."""
    return shorten(title, TITLE_SHOWN_CHARS) or "New chat"


def no_results(query: str) -> str:
    return f"No conversations match “{shorten(query, 40)}”."


class _ConversationListWidget(QListWidget):
    """The list itself: Delete asks to delete the selected conversation, and the Menu key or
    Shift+F10 open its menu at the row, as right-clicking it does. A click on the row already
    selected says so (currentPressed): selecting it again changes nothing for Qt."""

    deletePressed = Signal()
    menuKeyPressed = Signal(QPoint)
    currentPressed = Signal()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        item = self.itemAt(event.position().toPoint())
        again = event.button() == Qt.MouseButton.LeftButton and item is not None and item is self.currentItem()
        super().mousePressEvent(event)
        if again:
            self.currentPressed.emit()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        menu_key = event.key() == Qt.Key.Key_Menu or (
            event.key() == Qt.Key.Key_F10 and event.modifiers() == Qt.KeyboardModifier.ShiftModifier)
        if event.key() == Qt.Key.Key_Delete and event.modifiers() == Qt.KeyboardModifier.NoModifier:
            self.deletePressed.emit()
        elif menu_key:
            self._menu_at_current()
        else:
            super().keyPressEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        """A keyboard's context-menu event (some platforms send one for the Menu key) opens the
        menu at the selected row, not wherever the mouse happens to be."""
        if event.reason() == QContextMenuEvent.Reason.Keyboard:
            self._menu_at_current()
            event.accept()
        else:
            super().contextMenuEvent(event)

    def _menu_at_current(self) -> None:
        item = self.currentItem()
        if item is not None and item.data(CONVERSATION_ID) is not None:
            self.menuKeyPressed.emit(self.visualItemRect(item).center())


class ConversationList(QWidget):
    """Lists conversations; says what the user asked for, the window decides what it means.

    Signals:
        opened(int): a conversation was selected, or its row, already selected, was clicked or
            activated (Enter) again: the window opens it at what a search found.
        newRequested(): "New chat".
        renameRequested(int, str): a title was edited in place.
        deleteRequested(int): Delete from the context menu or the Delete key (the window
            offers Undo).
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
        self.new_button.setAccessibleName("New chat")
        self.new_button.setAccessibleDescription("Start a new conversation (Ctrl+N)")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search conversations…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search conversations")
        self.search.setAccessibleDescription("Finds conversations by words in their titles and messages")
        self.list = _ConversationListWidget()
        self.list.setAccessibleName("Conversations")
        self.list.setAccessibleDescription(
            "Newest first, grouped by day. Enter or a click opens one; F2 renames it, Delete deletes "
            "it, the Menu key or Shift+F10 opens its menu")
        self.list.setItemDelegate(ConversationDelegate(self.list))
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.setEditTriggers(QListWidget.EditTrigger.EditKeyPressed | QListWidget.EditTrigger.DoubleClicked)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.empty_label = QLabel(NO_CONVERSATIONS)  # in the list's place when it has nothing to show
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.empty_label.setTextFormat(Qt.TextFormat.PlainText)  # the query is the user's text
        self.empty_label.setContentsMargins(4, 8, 4, 0)
        self.empty_label.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 0, 6)
        layout.addWidget(self.new_button)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.empty_label, 1)
        self._debounce = QTimer(self, singleShot=True, interval=200)
        self._debounce.timeout.connect(lambda: self.searchChanged.emit(self.search.text()))
        self.search.textChanged.connect(self._debounce.start)
        self.new_button.clicked.connect(self.newRequested)
        self.list.currentItemChanged.connect(self._on_current)
        self.list.itemActivated.connect(self._open_again)
        self.list.currentPressed.connect(lambda: self._open_again(self.list.currentItem()))
        self.list.itemChanged.connect(self._on_item_changed)
        self.list.customContextMenuRequested.connect(self._context_menu)
        self.list.menuKeyPressed.connect(self._context_menu)
        self.list.deletePressed.connect(self._delete_current)
        self._filling = False

    def set_conversations(self, conversations: list[Conversation], current: int | None,
                          snippets: dict[int, str] | None = None, query: str = "") -> None:
        """Show conversations (newest first) under their day's heading; `snippets` are what a
        search for `query` found in them, shown under their titles."""
        snippets = snippets or {}
        self._filling = True
        self.list.clear()
        today = date.today()
        heading = None
        for conversation in conversations:
            group = date_group(conversation.updated_at, today)
            if group != heading:
                heading = group
                self.list.addItem(_heading_item(group))
            item = _conversation_item(conversation, snippets.get(conversation.id))
            self.list.addItem(item)
            if conversation.id == current:
                self.list.setCurrentItem(item)
        self._filling = False
        empty = not conversations
        self.empty_label.setText(no_results(query) if query.strip() else NO_CONVERSATIONS)
        self.empty_label.setVisible(empty)
        self.list.setVisible(not empty)

    def conversation_ids(self) -> list[int]:
        """The listed conversations, top to bottom (headings left out)."""
        return [self.list.item(row).data(CONVERSATION_ID) for row in range(self.list.count())
                if self.list.item(row).data(CONVERSATION_ID) is not None]

    def item_of(self, conversation_id: int) -> QListWidgetItem | None:
        for row in range(self.list.count()):
            if self.list.item(row).data(CONVERSATION_ID) == conversation_id:
                return self.list.item(row)
        return None

    def headings(self) -> list[str]:
        return [self.list.item(row).text() for row in range(self.list.count()) if self.list.item(row).data(HEADING)]

    def _on_current(self, item, _previous) -> None:
        if item is not None and not self._filling and item.data(CONVERSATION_ID) is not None:
            self.opened.emit(item.data(CONVERSATION_ID))

    def _open_again(self, item: QListWidgetItem | None) -> None:
        if item is not None and item.data(CONVERSATION_ID) is not None:
            self.opened.emit(item.data(CONVERSATION_ID))

    def _on_item_changed(self, item) -> None:
        """A rename, unless the text is still the shown title: editing a shortened title and
        leaving it as it was must not cut the stored one to what was shown."""
        text = item.text().strip()
        if not self._filling and text and text != item.data(SHOWN_TITLE):
            self.renameRequested.emit(item.data(CONVERSATION_ID), text)

    def _delete_current(self) -> None:
        item = self.list.currentItem()
        if item is not None and item.data(CONVERSATION_ID) is not None:
            self.deleteRequested.emit(item.data(CONVERSATION_ID))

    def _context_menu(self, position: QPoint) -> None:
        item = self.list.itemAt(position)
        if item is None or item.data(CONVERSATION_ID) is None:
            return
        conversation_id = item.data(CONVERSATION_ID)
        menu = QMenu(self)
        menu.setAccessibleName("Conversation")
        rename = menu.addAction("Rename", lambda: self.list.editItem(item))
        rename.setShortcut(QKeySequence(Qt.Key.Key_F2))  # shown in the menu; the list handles the key
        menu.addAction("Export as Markdown…", lambda: self.exportRequested.emit(conversation_id, "markdown"))
        menu.addAction("Export as JSON…", lambda: self.exportRequested.emit(conversation_id, "json"))
        menu.addSeparator()
        delete = menu.addAction("Delete", lambda: self.deleteRequested.emit(conversation_id))
        delete.setShortcut(QKeySequence(Qt.Key.Key_Delete))
        menu.exec(self.list.viewport().mapToGlobal(position))


def _heading_item(text: str) -> QListWidgetItem:
    """A group heading: read in place, never selected, skipped by the arrow keys."""
    item = QListWidgetItem(text)
    item.setFlags(Qt.ItemFlag.NoItemFlags)
    item.setData(HEADING, True)
    item.setData(Qt.ItemDataRole.AccessibleDescriptionRole, "Heading")
    return item


def _conversation_item(conversation: Conversation, snippet: str | None) -> QListWidgetItem:
    title = shown_title(conversation.title)
    if snippet is not None:
        snippet = snippet_text(snippet) or None
    if snippet is not None and snippet.strip("…") in title:
        snippet = None  # a hit in the first message would say again what its title says
    item = QListWidgetItem(title)
    item.setData(CONVERSATION_ID, conversation.id)
    item.setData(SHOWN_TITLE, title)
    item.setToolTip(f"{title}\nLast active {local_time(conversation.updated_at)}" + (f"\n{snippet}" if snippet else ""))
    if snippet:
        item.setData(SNIPPET, snippet)
        item.setData(Qt.ItemDataRole.AccessibleTextRole, f"{title}: {snippet}")
    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
    return item
