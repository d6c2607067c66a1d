"""What the window does with the versions of messages: move between them, delete one (with
Undo), start a new conversation from a message (Branch from here), the Chat menu's version
actions for the last reply, the line in the chat where the model's view of a long conversation
began, and opening a conversation from a search at the message that matched.

A part of MainWindow kept in a file of its own (the window inherits it): it uses the window's
session, store, chat, undo bar, status bar and menu helper. Everything about the open
conversation goes through ChatSession; while the open conversation's reply is written it
refuses to change the branch shown (the reply belongs to it), and the status bar says so:
nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from ...engine.types import ReplyStatus
from ...store import DeletedVersion, StoredMessage
from ..widgets.announce import announce
from .conversation_list import shown_title
from .shortcuts import SHORTCUTS
from .store_problems import reports_store_errors

# Messages handed to the chat above one it must show (a search's hit, the version stepped to)
# when that one is older than the newest page: a little of what led to it.
CONTEXT_ABOVE = 2
REFUSED_WHILE_WRITTEN = "A reply is being written in this conversation: stop it (Esc) or let it finish, then {}."
SHOWN_FOR_SECONDS = 5


def deleted_text(deleted: DeletedVersion) -> str:
    """What the undo bar says after a version was deleted, with how much went with it."""
    count = deleted.messages
    return f"Deleted a version ({count} message{'' if count == 1 else 's'})."


class VersionActions:
    """Versions, branches, the context boundary and opening at a search's hit, for MainWindow."""

    _keep_position: int | None = None  # a position the next show_conversation must hand over

    # --- construction ------------------------------------------------------------------------

    def _add_version_actions(self, menu: QMenu) -> None:
        """The Chat menu's actions on the last reply of the branch shown (the chat's links under
        each message do the same for any message), enabled only when they can act."""
        self.previous_version_action = self._action(
            menu, "Previous version of the reply", lambda: self._step_last_reply(-1), SHORTCUTS["previous_version"],
            tip="Show the reply written before this one, and what followed it")
        self.next_version_action = self._action(
            menu, "Next version of the reply", lambda: self._step_last_reply(1), SHORTCUTS["next_version"],
            tip="Show the reply written after this one, and what followed it")
        self.delete_version_action = self._action(
            menu, "Delete this version of the reply", self._delete_last_reply,
            tip="Delete the reply shown when it has other versions; they stay (Undo brings it back)")
        self.branch_action = self._action(
            menu, "Branch from the last message", self._branch_from_last, SHORTCUTS["branch"],
            tip="Start a new conversation with a copy of this one up to its last message")
        for action in self._version_actions():
            action.setEnabled(False)

    def _version_actions(self) -> tuple[QAction, ...]:
        return self.previous_version_action, self.next_version_action, self.delete_version_action, self.branch_action

    def _connect_versions(self) -> None:
        self.chat.versionStepped.connect(self.step_version)
        self.chat.branchRequested.connect(self.branch_from)
        self.chat.deleteVersionRequested.connect(self.delete_version)
        self.session.messageAdded.connect(lambda _message: self._enable_version_actions())

    # --- versions ------------------------------------------------------------------------------

    @reports_store_errors
    def step_version(self, message_id: int, step: int) -> bool:
        """The chat's ‹ or ›: show the version before or after (step -1 or 1) and the branch
        below it. The chat is handed everything from that message down (it keeps the message
        where the one stepped from stood); False when there is no such version or the session
        refused."""
        sibling = self.store.sibling(message_id, step)
        if sibling is None:
            return False
        with self._handing_over_from(self.store.message(sibling).position):
            shown = self.session.show_version(sibling)
        if not shown:
            self._refused("change the version shown")
        return shown

    @reports_store_errors
    def delete_version(self, message_id: int) -> None:
        """Delete a version and all that follows it, with Undo in the undo bar (as for a
        conversation); the version before it (or after it) is shown in its place."""
        deleted = self.session.delete_version(message_id)
        if deleted is None:
            self._refused("delete a version")
            return
        self.undo_bar.offer(deleted_text(deleted), lambda: self.restore_version(deleted))

    @reports_store_errors
    def restore_version(self, deleted: DeletedVersion) -> None:
        """Undo a deleted version: it comes back with the branch that was shown. Not while a
        reply is written in its conversation (the branch shown belongs to the reply): then
        Undo is offered again, and the status bar says why."""
        if self.session.restore_version(deleted):
            self.statusBar().showMessage("The deleted version is back.", SHOWN_FOR_SECONDS * 1000)
            return
        self.statusBar().showMessage(
            "A reply is being written in that conversation: Undo brings the version back when it has ended.", 10_000)
        self.undo_bar.offer(deleted_text(deleted), lambda: self.restore_version(deleted))

    @reports_store_errors
    def branch_from(self, message_id: int) -> None:
        """Open a new conversation holding a copy of the branch up to this message, ready to
        type in; the status bar names it."""
        if self.store.message(message_id).status is ReplyStatus.STREAMING:
            self.statusBar().showMessage("This reply is still being written: branch from it when it has ended.", 10_000)
            return
        conversation_id = self.session.branch_from(message_id)
        title = shown_title(self.store.get_conversation(conversation_id).title)
        self.statusBar().showMessage(f"Opened “{title}”: a new conversation with the messages up to there.", 10_000)
        self.composer.edit.setFocus()

    def _refused(self, what: str) -> None:
        """ChatSession refused: the open conversation's reply is being written."""
        self.statusBar().showMessage(REFUSED_WHILE_WRITTEN.format(what), 10_000)

    # --- the Chat menu: the last reply --------------------------------------------------------

    def _last_message(self) -> StoredMessage | None:
        conversation_id = self.session.conversation_id
        return self.store.leaf_message(conversation_id) if conversation_id is not None else None

    def _last_reply(self) -> StoredMessage | None:
        last = self._last_message()
        return last if last is not None and last.role == "assistant" else None

    def _step_last_reply(self, step: int) -> None:
        """The menu's (or its keys') step: the chat's own arrows say which version is shown to
        a screen reader; this says it too, the focus being elsewhere."""
        reply = self._last_reply()
        if reply is not None and self.step_version(reply.id, step):
            shown = self._last_reply()
            if shown is not None:
                announce(self.chat, f"Reply: version {shown.version} of {shown.versions}")

    def _delete_last_reply(self) -> None:
        reply = self._last_reply()
        if reply is not None:
            self.delete_version(reply.id)

    def _branch_from_last(self) -> None:
        last = self._last_message()
        if last is not None:
            self.branch_from(last.id)

    @reports_store_errors
    def _enable_version_actions(self) -> None:
        """Each action on the last reply only when it can act: none while the open
        conversation's reply is written; previous/next only where such a version exists; delete
        only where another version stays (as the chat offers it: deleting the only reply would
        leave the question unanswered, where Regenerate says what is meant)."""
        for action in self._version_actions():
            action.setEnabled(False)
        if self._reply_is_shown():
            return
        last = self._last_message()
        if last is None:
            return
        reply = last.role == "assistant"
        self.previous_version_action.setEnabled(reply and last.version > 1)
        self.next_version_action.setEnabled(reply and last.version < last.versions)
        self.delete_version_action.setEnabled(reply and last.versions > 1)
        self.branch_action.setEnabled(last.status is not ReplyStatus.STREAMING)

    # --- where the model's view began ----------------------------------------------------------

    @reports_store_errors
    def _show_context_boundary(self) -> None:
        """The line above which the model saw nothing in the branch's last reply, or none."""
        boundary = self.session.context_boundary()
        if boundary is None:
            self.chat.set_context_boundary(None)
        else:
            self.chat.set_context_boundary(boundary.message_id, boundary.unseen)

    # --- opening a conversation ----------------------------------------------------------------

    @reports_store_errors
    def open_conversation(self, conversation_id: int) -> None:
        """The list asked for a conversation. While the search box has words that one of its
        messages holds, it opens on the branch through that message (in whichever version),
        scrolled to it; otherwise as it was last viewed."""
        query = self.conversations.search.text().strip()
        hit = self.store.search_hit(query, conversation_id) if query else None
        if hit is None:
            if conversation_id != self.session.conversation_id:
                self.session.open(conversation_id)
            return
        with self._handing_over_from(self.store.message(hit).position):
            self.session.open(conversation_id, at=hit)
        if not self.store.is_shown(hit):
            self._refused("show the version that matched")
            return
        self.chat.reveal(hit)

    # --- handing messages over ----------------------------------------------------------------

    @contextmanager
    def _handing_over_from(self, position: int) -> Iterator[None]:
        """While the session shows the conversation again, hand the chat everything from this
        position (and CONTEXT_ABOVE before it) to the end, not only the newest page."""
        self._keep_position = position
        try:
            yield
        finally:
            self._keep_position = None

    def _messages_to_hand_over(self, conversation_id: int, newest: int) -> int:
        """How many of the branch's last messages show_conversation reads: the `newest`, or
        as far back as the position being kept in view."""
        if self._keep_position is None:
            return newest
        last = self.store.leaf_message(conversation_id)
        if last is None:
            return newest
        return max(newest, last.position - self._keep_position + 1 + CONTEXT_ABOVE)
