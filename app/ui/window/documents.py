"""The window's side of chat with documents: the documents button beside the message box, folders
added from it, and files or folders dropped onto the window.

Whichever way a folder comes, it becomes a collection that is indexed on the library's thread
and chosen for the open conversation at once, so the user can ask about it while it indexes
(answers come from what is indexed so far). A folder added from the button is named by the user
(its own name offered); one folder dropped takes its own name; several things dropped together
ask for a name ("Dropped files" offered). A name that is already a collection adds to it.

Dropping: while local files or folders are dragged over the window, the chat is covered by a
hint that says what a drop does (and a screen reader is told). A drag that carries a model file
(.gguf), a web link or text is left alone: whatever the window does with those stays as it is;
one of image files alone is the message box's (images.py).
The window takes the drop wherever the pointer is, message box included (it would otherwise
paste the files' paths), through DropTarget's event filter (widgets/drop_hint.py): drags bubble
up from the widget under the pointer to the window when that widget does not take them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QMimeData, QObject, QTimer
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMainWindow, QStatusBar

from ...common.text import shorten
from ...documents.indexing import IndexReport, Progress
from ...owners.chat_session import ChatSession
from ..chat.composer import Composer
from ..chat.documents.picker import DocumentsPicker
from ..chat.images.attachments import image_files
from ..chat.view import ChatView
from ..widgets.announce import announce
from ..widgets.drop_hint import DropHint, DropTarget
from ..widgets.tick_menu import plural

DROP_TEXT = "Drop to add to your documents"
DROP_DESCRIPTION = ("Folders and documents dropped here are indexed into a collection and used in this "
                    "conversation. Model files (.gguf) are not taken.")
DROPPED_NAME = "Dropped files"
GONE_TEXT = "Nothing was added: what was dropped is no longer there."
MODEL_SUFFIX = ".gguf"
NAME_CHARS = 40
MESSAGE_MS = 10_000


def dropped_documents(mime: QMimeData) -> list[Path]:
    """The local files and folders a drag carries, or none when it is not for the documents: no
    URLs, any that is not a local file (a web link), any model file (.gguf), or image files
    alone (they go with the message: ui/window/images.py)."""
    if not mime.hasUrls() or image_files(mime):
        return []
    urls = mime.urls()
    if not urls or not all(url.isLocalFile() for url in urls):
        return []
    paths = [Path(url.toLocalFile()) for url in urls]
    return [] if any(path.suffix.lower() == MODEL_SUFFIX for path in paths) else paths


class DocumentsDisplay(QObject):
    """Wires the documents button and drops onto the window to the session's documents.

    `manage("documents")` opens Settings at its Documents page. Without documents (a session
    given none) the button is hidden and drops are not taken. How indexing goes is said in the
    button's menu and its description; the status bar's indexing line is IndexingStatus's.
    """

    def __init__(self, session: ChatSession, window: QMainWindow, chat: ChatView, composer: Composer,
                 status: QStatusBar, manage: Callable[[str], None]):
        super().__init__(window)
        self._session, self._window, self._status = session, window, status
        self._adding: dict[str, int | None] = {}  # asked for, not yet in the library: the conversation it is for
        self._refreshed: set[str] = set()  # new collections whose first progress read the library again
        self.picker = DocumentsPicker()
        composer.add_beside_send(self.picker)
        self.drop_hint = DropHint(chat, DROP_TEXT, DROP_DESCRIPTION)
        documents = session.documents
        if documents is None:
            self.picker.hide()
            return
        self._library = library = documents.library
        self.picker.set_collections(library.summaries)
        self.picker.set_indexing(library.indexing())
        self._show_chosen()
        self.picker.chosenChanged.connect(self._choose)
        self.picker.addFolderRequested.connect(self.add_folder)
        self.picker.manageRequested.connect(lambda: manage("documents"))
        library.collectionsChanged.connect(self._on_collections)
        library.indexingChanged.connect(self._on_indexing)
        library.progress.connect(self._on_progress)
        library.indexed.connect(self._on_indexed)
        documents.choiceChanged.connect(lambda _names: self._show_chosen())
        session.conversationChanged.connect(lambda _conversation_id: self._show_chosen())
        self._drops = DropTarget(self.drop_hint, lambda mime: bool(dropped_documents(mime)), self._take,
                                 (window, composer.edit.viewport()), self)

    # -- adding ---------------------------------------------------------------------------------

    def add_folder(self) -> None:
        """"Add folder…": a folder, then its collection's name (the folder's own offered)."""
        chosen = QFileDialog.getExistingDirectory(self._window, "Add a folder of documents")
        if not chosen:
            return
        folder = Path(chosen)
        name = self._ask_name(folder.name or str(folder), "Index this folder into the collection named\n"
                              "(a name already used adds the folder to that collection):")
        if name:
            self.add(name, [folder])

    def add_dropped(self, paths: Sequence[Path]) -> None:
        """Files or folders dropped onto the window: one folder keeps its name; anything else
        is named by the user ("Dropped files" offered)."""
        paths = [path for path in paths if path.exists()]
        if not paths:
            self._status.showMessage(GONE_TEXT, MESSAGE_MS)
            announce(self._window, GONE_TEXT)
            return
        if len(paths) == 1 and paths[0].is_dir():
            self.add(self._name_for(paths[0]), paths)
            return
        what = plural(len(paths), "item" if any(path.is_dir() for path in paths) else "file")
        name = self._ask_name(DROPPED_NAME, f"Index the {what} dropped into the collection named\n"
                              "(a name already used adds them to that collection):")
        if name:
            self.add(name, paths)

    def add(self, name: str, paths: Sequence[Path]) -> None:
        """Index `paths` into collection `name` and use it in the open conversation now."""
        library = self._library
        if name not in library.names():
            self._adding[name] = self._session.conversation_id
        library.add(name, paths)
        chosen = self._shown_chosen() | {name}
        self._session.choose_collections(self._in_order(chosen))
        self._show_chosen()
        # Said, not shown: the status bar's indexing line (indexing_status.py) shows how it goes,
        # and a message there would hide it.
        announce(self._window, f"“{shorten(name, NAME_CHARS)}” is being indexed and is used in this conversation: "
                               "ask about it now; answers use what is indexed so far.")

    def _ask_name(self, offered: str, label: str) -> str | None:
        """The collection's name, the user's or `offered`; the existing ones can be picked to
        add to them. None when cancelled or blank."""
        names = [offered] + [name for name in self._library.names() if name != offered]
        name, ok = QInputDialog.getItem(self._window, "Name the collection", label, names, 0, True)
        name = " ".join(name.split())
        return name if ok and name else None

    def _name_for(self, folder: Path) -> str:
        """A dropped folder's collection: its name, unless another folder already has it."""
        base = folder.name or str(folder)
        name, number = base, 1
        summaries = {summary.name: summary for summary in self._library.summaries}
        while name in summaries and folder not in summaries[name].roots or name in self._adding:
            number += 1
            name = f"{base} ({number})"
        return name

    # -- the choice -------------------------------------------------------------------------------

    def _shown_chosen(self) -> frozenset[str]:
        """The open conversation's collections, with those just added for it that the library
        has not begun yet (the conversation's choice names only collections that exist)."""
        waiting = {name for name, conversation_id in self._adding.items()
                   if conversation_id == self._session.conversation_id}
        return frozenset(self._session.documents.chosen) | waiting

    def _in_order(self, chosen: frozenset[str]) -> tuple[str, ...]:
        return tuple(name for name in self._library.names() + tuple(self._adding) if name in chosen)

    def _show_chosen(self) -> None:
        self.picker.set_chosen(self._shown_chosen())

    def _choose(self, chosen: frozenset[str]) -> None:
        for name in [name for name in self._adding if name not in chosen]:
            del self._adding[name]
        self._session.choose_collections(self._in_order(chosen))

    # -- the library's news ---------------------------------------------------------------------

    def _on_collections(self, summaries) -> None:
        for summary in summaries:
            self._adding.pop(summary.name, None)
        self.picker.set_collections(summaries)
        self._show_chosen()

    def _on_indexing(self, names: tuple[str, ...]) -> None:
        for name in [name for name in self._adding if name not in names and name not in self._library.names()]:
            del self._adding[name]  # its run ended before it began (the embedding model did not load: `problem` said why)
        self.picker.set_indexing(names)
        self._show_chosen()

    def _on_progress(self, name: str, step: Progress) -> None:
        self.picker.set_progress(name, step)
        if name not in self._library.names() and name not in self._refreshed:
            self._refreshed.add(name)  # it exists now: listed with what it has so far
            self._library.refresh()

    def _on_indexed(self, name: str, _report: IndexReport) -> None:
        self._refreshed.discard(name)

    # -- dropping ---------------------------------------------------------------------------------

    def _take(self, mime: QMimeData) -> None:
        """Documents dropped on the window (or the message box): added once the drop has returned,
        so the drag's source is not kept waiting."""
        paths = dropped_documents(mime)
        QTimer.singleShot(0, self, lambda: self.add_dropped(paths))
