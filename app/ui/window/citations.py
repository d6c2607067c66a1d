"""A reply's sources in the window: a citation clicked under a reply opens its source
(ui/dialogs/source_view.py), read from the question's record in the store, so it is what the
reply read, wherever the file has gone since; and the sources found for a question after it was
shown (SourceLookup, search_documents) reach the chat's record of it, for the reply's block."""

from __future__ import annotations

import os
from dataclasses import replace

import shiboken6
from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QWidget

from ...owners.chat_session import ChatSession
from ...store import Source, StoreError
from ..chat.view import ChatView
from ..dialogs.source_view import SourceView


class Citations(QObject):
    """Opens the source view of a citation clicked in `chat`, one at a time, over `window`."""

    def __init__(self, session: ChatSession, chat: ChatView, window: QWidget) -> None:
        super().__init__(window)
        self._session, self._window = session, window
        self.view: SourceView | None = None
        chat.sourceOpened.connect(self.open)
        # Sources are found after the question is shown: the view's record of it takes them.
        for finder in (session.lookup, session.loop.documents if session.loop is not None else None):
            if finder is not None:
                finder.sourcesKept.connect(chat.set_sources)

    def open(self, question_id: int, number: int) -> None:
        try:
            question = self._session.store.message(question_id)
        except StoreError:
            return  # the message is gone (deleted meanwhile): nothing to open
        sources = question.sources if question is not None else ()
        if not 1 <= number <= len(sources):
            return
        if self.view is not None and shiboken6.isValid(self.view):
            self.view.close()
        source = sources[number - 1]
        checked = self._in_collections(source)
        if checked is not None:
            source = replace(source, path=checked)  # the path checked is the path opened
        self.view = SourceView(source, number, self._window, in_collections=checked is not None)
        self.view.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # its page image goes with it
        self.view.show()
        self.view.raise_()
        self.view.activateWindow()  # the keyboard goes with it (Esc closes it, back to the link)

    def _in_collections(self, source: Source) -> str | None:
        """The source's file, links and ".." resolved, where it is under a folder or file of a
        collection the user has now (None elsewhere). A conversation's record may come from an
        import, which can name any path (another machine's, a network share's): only a file the
        user chose to index is drawn or handed to the system."""
        documents = self._session.documents
        if documents is None:
            return None
        path = os.path.realpath(source.path)
        for summary in documents.library.summaries:
            for root in summary.roots:
                root = os.path.realpath(root)
                if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                    return path
        return None
