"""What the window does with the versions of messages: move between them, delete one (with
Undo), start a new conversation from a message (Branch from here), the Chat menu's version
actions for the last reply, the line in the chat where the model's view of a long conversation
began, and opening a conversation from a search at the message that matched.

A controller the window owns, given what it works with: the session, the chat, the conversation
list (its search), the undo bar, the message box, the status bar and the banner for store
errors. Everything about the open conversation goes through ChatSession; while the open conversation's reply is written it
refuses to change the branch shown (the reply belongs to it), and the status bar says so:
nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QStatusBar

from ...engine.types import ReplyStatus
from ...owners.chat_session import ChatSession
from ...store import ConversationStore, DeletedVersion, StoredMessage
from ..chat.composer import Composer
from ..chat.view import ChatView
from ..widgets.announce import announce
from ..widgets.shortcuts import SHORTCUTS
from .conversation_list import ConversationList, shown_title
from .menu_actions import MenuActions
from .store_problems import StoreProblemBanner, reports_store_errors
from .undo_bar import UndoBar

# Messages handed to the chat above one it must show (a search's hit, the version stepped to)
# when that one is older than the newest page: a little of what led to it.
CONTEXT_ABOVE = 2
REFUSED_WHILE_WRITTEN = "A reply is being written in this conversation: stop it (Esc) or let it finish, then {}."
SHOWN_FOR_SECONDS = 5


def open_reply_is_shown(session: ChatSession) -> bool:
    """Whether a reply is being written in the conversation shown."""
    reply_in = session.reply_conversation_id
    return reply_in is not None and reply_in == session.conversation_id


def deleted_text(deleted: DeletedVersion) -> str:
    """What the undo bar says after a version was deleted, with how much went with it."""
    count = deleted.messages
    return f"Deleted a version ({count} message{'' if count == 1 else 's'})."


class VersionActions(QObject):
    """Versions, branches, the context boundary and opening at a search's hit, for MainWindow.

    Slots (connected here): the chat's versionStepped, branchRequested and
    deleteVersionRequested; the session's messageAdded (the Chat menu's actions follow the
    last message). The window calls open_conversation (the list's opened),
    show_context_boundary and enable_actions (after it shows a conversation or a reply
    changes) and messages_to_hand_over (as it reads a conversation to show).

    Its Chat menu actions on the last reply (previous_version_action, next_version_action,
    delete_version_action, branch_action) are made here; the window puts them in the menu.
    """

    def __init__(self, session: ChatSession, chat: ChatView, conversations: ConversationList, undo_bar: UndoBar,
                 composer: Composer, status_bar: QStatusBar, store_banner: StoreProblemBanner,
                 menu_actions: MenuActions, parent: QObject | None = None):
        super().__init__(parent)
        self._session, self._chat, self._conversations = session, chat, conversations
        self._undo_bar, self._composer, self._status_bar = undo_bar, composer, status_bar
        self.store_banner = store_banner
        self._keep_position: int | None = None  # a position the next show_conversation must hand over
        # The chat's links under each message do the same for any message; these act on the
        # last reply of the branch shown, enabled only when they can act.
        self.previous_version_action = menu_actions.make(
            "Previous version of the reply", lambda: self._step_last_reply(-1), SHORTCUTS["previous_version"],
            tip="Show the reply written before this one, and what followed it")
        self.next_version_action = menu_actions.make(
            "Next version of the reply", lambda: self._step_last_reply(1), SHORTCUTS["next_version"],
            tip="Show the reply written after this one, and what followed it")
        self.delete_version_action = menu_actions.make(
            "Delete this version of the reply", self._delete_last_reply,
            tip="Delete the reply shown when it has other versions; they stay (Undo brings it back)")
        self.branch_action = menu_actions.make(
            "Branch from the last message", self._branch_from_last, SHORTCUTS["branch"],
            tip="Start a new conversation with a copy of this one up to its last message")
        for action in self.actions():
            action.setEnabled(False)
        chat.versionStepped.connect(self.step_version)
        chat.branchRequested.connect(self.branch_from)
        chat.deleteVersionRequested.connect(self.delete_version)
        session.messageAdded.connect(lambda _message: self.enable_actions())

    @property
    def _store(self) -> ConversationStore:
        return self._session.store  # replaced when a damaged database is moved aside

    def actions(self) -> tuple[QAction, ...]:
        """The Chat menu's actions on the last reply, in menu order."""
        return self.previous_version_action, self.next_version_action, self.delete_version_action, self.branch_action

    # --- versions ------------------------------------------------------------------------------

    @reports_store_errors
    def step_version(self, message_id: int, step: int) -> bool:
        """The chat's ‹ or ›: show the version before or after (step -1 or 1) and the branch
        below it. The chat is handed everything from that message down (it keeps the message
        where the one stepped from stood); False when there is no such version or the session
        refused."""
        sibling = self._store.sibling(message_id, step)
        if sibling is None:
            return False
        with self._handing_over_from(self._store.message(sibling).position):
            shown = self._session.show_version(sibling)
        if not shown:
            self._refused("change the version shown")
        return shown

    @reports_store_errors
    def delete_version(self, message_id: int) -> None:
        """Delete a version and all that follows it, with Undo in the undo bar (as for a
        conversation); the version before it (or after it) is shown in its place."""
        deleted = self._session.delete_version(message_id)
        if deleted is None:
            self._refused("delete a version")
            return
        self._undo_bar.offer(deleted_text(deleted), lambda: self.restore_version(deleted))

    @reports_store_errors
    def restore_version(self, deleted: DeletedVersion) -> None:
        """Undo a deleted version: it comes back with the branch that was shown. Not while a
        reply is written in its conversation (the branch shown belongs to the reply): then
        Undo is offered again, and the status bar says why."""
        if self._session.restore_version(deleted):
            self._status_bar.showMessage("The deleted version is back.", SHOWN_FOR_SECONDS * 1000)
            return
        self._status_bar.showMessage(
            "A reply is being written in that conversation: Undo brings the version back when it has ended.", 10_000)
        self._undo_bar.offer(deleted_text(deleted), lambda: self.restore_version(deleted))

    @reports_store_errors
    def branch_from(self, message_id: int) -> None:
        """Open a new conversation holding a copy of the branch up to this message, ready to
        type in; the status bar names it."""
        if self._store.message(message_id).status is ReplyStatus.STREAMING:
            self._status_bar.showMessage("This reply is still being written: branch from it when it has ended.", 10_000)
            return
        conversation_id = self._session.branch_from(message_id)
        title = shown_title(self._store.get_conversation(conversation_id).title)
        self._status_bar.showMessage(f"Opened “{title}”: a new conversation with the messages up to there.", 10_000)
        self._composer.edit.setFocus()

    def _refused(self, what: str) -> None:
        """ChatSession refused: the open conversation's reply is being written."""
        self._status_bar.showMessage(REFUSED_WHILE_WRITTEN.format(what), 10_000)

    # --- the Chat menu: the last reply --------------------------------------------------------

    def _last_message(self) -> StoredMessage | None:
        conversation_id = self._session.conversation_id
        return self._store.leaf_message(conversation_id) if conversation_id is not None else None

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
                announce(self._chat, f"Reply: version {shown.version} of {shown.versions}")

    def _delete_last_reply(self) -> None:
        reply = self._last_reply()
        if reply is not None:
            self.delete_version(reply.id)

    def _branch_from_last(self) -> None:
        last = self._last_message()
        if last is not None:
            self.branch_from(last.id)

    @reports_store_errors
    def enable_actions(self) -> None:
        """Each action on the last reply only when it can act: none while the open
        conversation's reply is written; previous/next only where such a version exists; delete
        only where another version stays (as the chat offers it: deleting the only reply would
        leave the question unanswered, where Regenerate says what is meant)."""
        for action in self.actions():
            action.setEnabled(False)
        if open_reply_is_shown(self._session):
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
    def show_context_boundary(self) -> None:
        """The line above which the model saw nothing in the branch's last reply, or none."""
        boundary = self._session.context_boundary()
        if boundary is None:
            self._chat.set_context_boundary(None)
        else:
            self._chat.set_context_boundary(boundary.message_id, boundary.unseen)

    # --- opening a conversation ----------------------------------------------------------------

    @reports_store_errors
    def open_conversation(self, conversation_id: int) -> None:
        """The list asked for a conversation. While the search box has words that one of its
        messages holds, it opens on the branch through that message (in whichever version),
        scrolled to it; otherwise as it was last viewed."""
        query = self._conversations.search.text().strip()
        hit = self._store.search_hit(query, conversation_id) if query else None
        if hit is None:
            if conversation_id != self._session.conversation_id:
                self._session.open(conversation_id)
            return
        with self._handing_over_from(self._store.message(hit).position):
            self._session.open(conversation_id, at=hit)
        if not self._store.is_shown(hit):
            self._refused("show the version that matched")
            return
        self._chat.reveal(hit)

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

    def messages_to_hand_over(self, conversation_id: int, newest: int) -> int:
        """How many of the branch's last messages show_conversation reads: the `newest`, or
        as far back as the position being kept in view."""
        if self._keep_position is None:
            return newest
        last = self._store.leaf_message(conversation_id)
        if last is None:
            return newest
        return max(newest, last.position - self._keep_position + 1 + CONTEXT_ABOVE)
