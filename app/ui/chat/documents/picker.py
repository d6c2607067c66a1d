"""Beside the message box: which document collections this conversation's questions are answered
from.

The button says how many collections are used ("Docs · 2", or "No documents"); its menu lists
every collection with a tick, how many files it holds and how its indexing is going (indexing 3
of 10 files…, waiting, not finished, failed files counted, the failures in the row's tooltip),
then "Add folder…" (a folder indexed as a new collection, used here at once) and "Manage
documents…" for Settings → Documents. A collection being indexed can be ticked, and asked at
once: its questions are answered from what is indexed so far. A collection asked for but not
yet begun (the embedding model still loading) has a row too, so what was just added shows.

A menu row has no accessible description of its own, so its state is in its words, and the
button's description names the collections used and any being indexed, so a screen reader hears
it before opening the menu. Ticking stays in the menu (ui/widgets/tick_menu.py). Collection
names and file names are the user's: shown through shorten(), never as a mnemonic or markup.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QWidget

from ....common.text import shorten
from ....documents.index import CollectionSummary
from ....documents.indexing import Progress
from ...widgets.tick_menu import TickMenuButton, menu_text, plural
from ...widgets.tooltips import plain_tooltip

NAME_CHARS = 40
FAILURES_LISTED = 10  # in a row's tooltip; "and n more" after them


class DocumentsPicker(TickMenuButton):
    """The documents button for the open conversation.

    Signals:
        chosenChanged(object): the user ticked or unticked a collection: the frozenset of the
            collection names now chosen for this conversation.
        addFolderRequested(): "Add folder…": the window asks for a folder and indexes it.
        manageRequested(): "Manage documents…": the window opens Settings → Documents.
    """

    chosenChanged = Signal(object)
    addFolderRequested = Signal()
    manageRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Documents for this conversation", "Document collections for this conversation", parent)
        self._collections: dict[str, CollectionSummary] = {}
        self._indexing: tuple[str, ...] = ()
        self._progress: dict[str, Progress] = {}
        self._chosen: frozenset[str] = frozenset()
        self._rows: dict[str, QAction] = {}
        self._rebuild()

    # -- the window's API --------------------------------------------------------------------

    def set_collections(self, summaries: tuple[CollectionSummary, ...]) -> None:
        """Every collection, as the library last read them."""
        self._collections = {summary.name: summary for summary in summaries}
        self._sync()

    def set_indexing(self, names: tuple[str, ...]) -> None:
        """The collection being indexed, then those waiting (DocumentLibrary.indexing)."""
        self._indexing = tuple(names)
        self._progress = {name: step for name, step in self._progress.items() if name in self._indexing[:1]}
        self._sync()

    def set_progress(self, name: str, step: Progress) -> None:
        """How the named collection's run is going."""
        self._progress[name] = step
        if name in self._rows:
            self._dress(self._rows[name], name)
            self._show_count()

    def set_chosen(self, chosen: frozenset[str]) -> None:
        """The collections chosen for the conversation shown (not echoed by chosenChanged)."""
        self._chosen = frozenset(chosen)
        self._sync()

    def chosen(self) -> frozenset[str]:
        return self._chosen

    def names(self) -> tuple[str, ...]:
        """The collections listed: those indexed, then those asked for and not yet begun."""
        return tuple(self._collections) + tuple(name for name in self._indexing if name not in self._collections)

    # -- inside ---------------------------------------------------------------------------------

    def _sync(self) -> None:
        """The rows brought up to date: changed in place while the same collections are listed,
        so an open menu keeps the row the keyboard is on as indexing goes."""
        if self.names() != tuple(self._rows):
            self._rebuild()
            return
        for name, action in self._rows.items():
            self._dress(action, name)
        self._show_count()

    def _rebuild(self) -> None:
        menu = self.tick_menu
        menu.clear()
        self._rows = {}
        menu.addSection("Answer from these documents")
        if not self.names():
            menu.addAction("No documents yet: add a folder").setEnabled(False)
        for name in self.names():
            action = QAction(menu)
            action.setCheckable(True)
            action.toggled.connect(lambda on, collection=name: self._toggled(collection, on))
            self._dress(action, name)
            menu.addAction(action)
            self._rows[name] = action
        menu.addSeparator()
        add = menu.addAction("&Add folder…")
        add.setToolTip("Index a folder of documents as a new collection, and use it in this conversation")
        add.triggered.connect(self.addFolderRequested)
        manage = menu.addAction("&Manage documents…")
        manage.setToolTip("Update, rename or remove collections, and choose the embedding model (Settings → Documents)")
        manage.triggered.connect(self.manageRequested)
        self._show_count()

    def _dress(self, action: QAction, name: str) -> None:
        """The row's words, tick and tooltip for the collection as it is now."""
        action.setText(menu_text(f"{shorten(name, NAME_CHARS)} · {self._how(name)}"))
        action.setChecked(name in self._chosen)
        summary = self._collections.get(name)
        failures = summary.failures if summary is not None else ()
        if failures:
            lines = [f"{shorten(failure.path.name)}: {shorten(failure.reason)}" for failure in failures[:FAILURES_LISTED]]
            more = len(failures) - FAILURES_LISTED
            action.setToolTip(plain_tooltip(f"{plural(len(failures), 'file')} could not be read:\n" + "\n".join(lines)
                                            + (f"\nand {more} more" if more > 0 else "")))
        elif summary is not None and summary.roots:
            action.setToolTip(plain_tooltip("Reads " + ", ".join(shorten(str(root)) for root in summary.roots)))
        else:
            action.setToolTip("")

    def _how(self, name: str) -> str:
        """How a collection is doing, in a few words."""
        summary = self._collections.get(name)
        step = self._progress.get(name)
        words = []
        if self._indexing[:1] == (name,):
            words.append(f"indexing {step.done} of {plural(step.total, 'file')}…" if step is not None and step.total
                         else "indexing…")
        else:
            if summary is not None:
                words.append(plural(summary.stats.files, "file"))
            if name in self._indexing:
                words.append("waiting")
            elif summary is not None and not summary.collection.finished:
                words.append("not finished")
        failed = step.failed if step is not None else summary.stats.failed if summary is not None else 0
        if failed:
            words.append(f"{failed} failed")
        return " · ".join(words) or "empty"

    def _toggled(self, name: str, on: bool) -> None:
        chosen = self._chosen | {name} if on else self._chosen - {name}
        if chosen != self._chosen:
            self._chosen = chosen
            self._show_count()
            self.chosenChanged.emit(chosen)

    def _show_count(self) -> None:
        used = [name for name in self.names() if name in self._chosen]
        shown = [shorten(name, NAME_CHARS) for name in used]
        if not used:
            self.show_label("No documents")
            words = "No documents are used in this conversation."
        else:
            self.show_label(f"Docs · {len(used)}")
            words = f"Questions here are answered from {_listed(shown)}."
        if self._indexing:
            running, *waiting = self._indexing
            step = self._progress.get(running)
            so_far = f" ({step.done} of {plural(step.total, 'file')})" if step is not None and step.total else ""
            words += f" {shorten(running, NAME_CHARS)} is being indexed{so_far}."
            if waiting:
                words += f" Waiting to be indexed: {_listed([shorten(name, NAME_CHARS) for name in waiting])}."
        failed = sum(self._collections[name].stats.failed for name in used if name in self._collections)
        if failed:
            words += f" {plural(failed, 'file')} could not be read."
        self.setAccessibleDescription(f"{words} Opens a list of your document collections to choose from.")
        self.setToolTip(plain_tooltip(words))


def _listed(names: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
