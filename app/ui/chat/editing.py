"""Edit under a user message: which message is being edited, and the editor laid over it.

The editor (inline_editor.EditorOverlay) lies over a gap the transcript leaves in place of the
message's text and footer, so opening or closing it means writing the transcript again in
place; the pane answers rewriteNeeded at once. The editor stays until the conversation is shown
again (set_messages), so an edit that is refused (a reply is being written) loses nothing.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from .browser import ChatBrowser
from .inline_editor import EditorOverlay
from .paging import Pages


class MessageEditing(QObject):
    """At most one open editor over a rendered user message of `pages`, in `browser`.

    Signals:
        submitted(int, str): the editor sent this (non-empty) text for the message with this id.
        rewriteNeeded(): the editor opened or closed: the transcript must be written again in
            place (the message's text gives way to the gap, or comes back). Answered before
            the editor is scrolled into view.
    """

    submitted = Signal(int, str)
    rewriteNeeded = Signal()

    def __init__(self, browser: ChatBrowser, pages: Pages) -> None:
        super().__init__(browser)
        self._browser = browser
        self._pages = pages
        self._overlay: EditorOverlay | None = None

    def overlay_for(self, message_id: int | None) -> EditorOverlay | None:
        """The editor over the message with this id, if that message is being edited."""
        if self._overlay is not None and message_id == self._overlay.message_id:
            return self._overlay
        return None

    def is_open(self) -> bool:
        return self._overlay is not None

    def place(self) -> None:
        """Lay the editor over its gap again, after the transcript was written afresh."""
        if self._overlay is not None:
            self._overlay.place()

    def open(self, message_id: int) -> None:
        """Edit was clicked under the user message with this id: open an editor in its place."""
        message = next((m for m in self._pages.shown() if m.id == message_id and m.role == "user"), None)
        if message is None:
            return
        if self._overlay is not None and self._overlay.message_id == message_id:
            self._overlay.editor.box.setFocus()
            return
        self.close(rewrite=False)
        self._overlay = EditorOverlay(self._browser, message_id, message.content)
        self._overlay.editor.submitted.connect(lambda text: self.submitted.emit(message_id, text))
        self._overlay.editor.cancelled.connect(self._cancel)
        self.rewriteNeeded.emit()
        self._overlay.scroll_into_view()
        self._overlay.editor.box.setFocus()

    def close(self, rewrite: bool = True) -> None:
        """Take the editor away; with `rewrite`, have its message written again in place of its gap."""
        if self._overlay is None:
            return
        self._overlay.close()
        self._overlay = None
        if rewrite:
            self.rewriteNeeded.emit()

    def _cancel(self) -> None:
        self.close()
        self._browser.setFocus()
