"""What the window does with conversation files: export, import, and the remedies for a
damaged database (export what is readable, move the file aside and start afresh).

A controller the window owns, given what it works with: the session (and through it the
store, which a fresh start replaces), the store banner and the status bar. Store errors are
shown in the banner (ui/window/store_problems.py), never left to Qt's crash report.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QStatusBar, QWidget

from ...common.sqlite_files import move_aside
from ...owners.chat_session import ChatSession
from ...store import ConversationStore, DatabaseDamaged, StoreError, import_file, shorten
from ...store.schema import quick_check
from ..widgets.background import run_in_background
from .conversation_list import TITLE_SHOWN_CHARS
from .store_problems import StoreProblemBanner, guarded, reports_store_errors

log = logging.getLogger(__name__)

_UNSAFE_IN_FILE_NAMES = re.compile(r'[\x00-\x1f<>:"/\\|?*]+')


def export_file_name(title: str) -> str:
    """A title as a file name: shortened, no path separators or characters a file system refuses."""
    return _UNSAFE_IN_FILE_NAMES.sub("_", shorten(title, TITLE_SHOWN_CHARS)).strip(" .") or "conversation"


class ConversationFiles(QObject):
    """Export, import and the damaged-database remedies, for MainWindow.

    Signals:
        importFinished(object): an import ended: the new conversation's id, or None when it
            failed (the reason was shown).

    Slots: the conversation list's exportRequested (export_conversation) and the banner's
    buttons (choose_export_folder, confirm_start_fresh), connected by the window.
    """

    importFinished = Signal(object)

    def __init__(self, session: ChatSession, store_banner: StoreProblemBanner, status_bar: QStatusBar,
                 window: QWidget):
        """`window`: the parent of the dialogs this opens, and of the imports' workers."""
        super().__init__(window)
        self._session, self.store_banner, self._status_bar, self._window = session, store_banner, status_bar, window
        self._imports_running = 0  # imports on worker threads, each with its own connection

    @property
    def _store(self) -> ConversationStore:
        return self._session.store  # replaced by start_fresh

    @reports_store_errors
    def export_conversation(self, conversation_id: int | None, kind: str) -> None:
        conversation_id = conversation_id or self._session.conversation_id
        if conversation_id is None:
            return
        suffix = ".md" if kind == "markdown" else ".json"
        name = export_file_name(self._store.get_conversation(conversation_id).title) + suffix
        path, _ = QFileDialog.getSaveFileName(self._window, "Export conversation", name)
        if path:
            self.write_export(conversation_id, kind, Path(path))

    @reports_store_errors
    def write_export(self, conversation_id: int, kind: str, path: Path) -> None:
        if kind == "markdown":
            text = self._store.export_markdown(conversation_id)
        else:
            text = json.dumps(self._store.export_json(conversation_id), ensure_ascii=False, indent=2)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            QMessageBox.warning(self._window, "Export failed", f"Can't write {shorten(str(path))}: {exc.strerror or exc}.")
            return
        self._status_bar.showMessage(f"Exported to {shorten(str(path))}", 5000)

    def import_conversation(self, path: Path | None = None) -> None:
        """Import an export file on a worker thread (a large one takes seconds to read and
        check), then open it; every failure is one message and imports nothing."""
        if path is None:
            chosen, _ = QFileDialog.getOpenFileName(self._window, "Import conversation", "", "Hearth conversation (*.json)")
            if not chosen:
                return
            path = Path(chosen)
        path, database = Path(path), self._store.path
        self._status_bar.showMessage(f"Importing {shorten(path.name)}…")
        self._imports_running += 1
        run_in_background(lambda: import_file(database, path), lambda result, error: self._imported(path, result, error), self._window)

    def _imported(self, path: Path, conversation_id: int | None, error: Exception | None) -> None:
        self._imports_running -= 1
        self._status_bar.clearMessage()
        if error is not None:
            if not isinstance(error, StoreError):  # a case the checks missed: still a message, logged
                log.error("importing %s failed", path, exc_info=error)
            self.store_banner.show_problem(f"Could not import {shorten(path.name)}: {shorten(str(error), 300)}", False)
            self.importFinished.emit(None)
            return
        guarded(self._session.open, self.store_banner)(conversation_id)
        self._status_bar.showMessage(f"Imported {shorten(path.name)}", 5000)
        self.importFinished.emit(conversation_id)

    # --- a damaged database ------------------------------------------------------------------------

    def check_database(self) -> None:
        """PRAGMA quick_check on a worker thread (it reads the whole file), so that damage is
        said at start-up rather than when a conversation fails to open."""
        path = self._store.path
        run_in_background(lambda: quick_check(path), self._checked, self._window)

    def _checked(self, problems: list[str] | None, error: Exception | None) -> None:
        if error is None and problems:
            self.store_banner.show_error(DatabaseDamaged(
                f"The conversation database {self._store.path} is damaged ({problems[0]})."))

    def choose_export_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self._window, "Export readable conversations to")
        if folder:
            self.export_readable(Path(folder))

    def export_readable(self, folder: Path) -> tuple[int, int]:
        """Write each conversation that can still be read as JSON into folder; returns how many
        were written and how many could not be read."""
        try:
            conversations = self._store.list_conversations()
        except StoreError as exc:
            self.store_banner.show_error(exc)
            return 0, 0
        written = failed = 0
        for conversation in conversations:
            target = folder / f"{conversation.id} {export_file_name(conversation.title)}.json"
            try:
                data = self._store.export_json(conversation.id)
                target.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
                written += 1
            except (StoreError, OSError):
                failed += 1
        unread = f"; {failed} could not be read" if failed else ""
        self._status_bar.showMessage(f"Exported {written} conversations to {shorten(str(folder))}{unread}.", 15_000)
        return written, failed

    @reports_store_errors
    def confirm_start_fresh(self) -> None:
        answer = QMessageBox.question(
            self._window, "Start with an empty database?",
            f"Hearth will rename {self._store.path.name} (keeping it beside the new one) and start with "
            "an empty conversation database.")
        if answer == QMessageBox.Yes:
            self.start_fresh()

    def start_fresh(self) -> Path | None:
        """Move the damaged database aside (never deleted) and carry on with an empty one;
        returns where the old one went."""
        path = self._store.path
        if self._imports_running:  # its own connection writes to the file by name
            self.store_banner.show_problem(
                "An import is still being written into the database; move it aside when it has finished.", True)
            return None
        self._store.close()
        try:
            moved = move_aside(path)
            fresh = ConversationStore(path)
        except (OSError, StoreError) as exc:
            self._session.store = ConversationStore(path)  # as it was, or StoreError
            self.store_banner.show_error(StoreError(f"Could not move {path} aside: {shorten(str(exc))}."))
            return None
        self._session.replace_store(fresh)
        self.store_banner.show_problem(f"The damaged database was moved to {moved}; Hearth started an empty one.", False)
        return moved
