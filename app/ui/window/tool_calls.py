"""The window's side of tool use: the tools button beside the message box, the cards of a
turn's calls in the chat, and Settings → Tools opened from the button.

A turn's calls are shown as live cards (ui/chat/tool_card.py) under the reply that wrote them,
asking, running, then with their outcome, while the model goes on below them. The results are
stored as the turn goes (ChatSession), but while a call's card is shown it stands for the
stored result; when the turn ends the conversation is shown afresh from the store, where each
call and result is a block under its reply (ui/chat/tool_calls/stored.py). Cards belong to the
conversation whose turn it is: opening another takes them away, and coming back shows the
call still being asked about or run.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QApplication

from ...owners.chat_session import ChatSession
from ...store import StoredMessage
from ...tool_servers.approval import DENIED_TEXT, PendingCall
from ...tool_servers.types import ToolOutcome
from ..chat.composer import Composer
from ..chat.tool_card import ToolCallCard
from ..chat.tools_picker import ToolsPicker
from ..chat.view import ChatView


class ToolCallDisplay(QObject):
    """Wires the tools button and the call cards to the session's tools and turn.

    `reshow(conversation_id)` shows a conversation afresh from the store
    (MainWindow.show_conversation); `manage("tools")` opens Settings at its Tools page.
    """

    def __init__(self, session: ChatSession, chat: ChatView, composer: Composer, reshow: Callable[[int | None], None],
                 manage: Callable[..., None], parent: QObject | None = None):
        super().__init__(parent)
        self._session, self._chat, self._composer, self._reshow = session, chat, composer, reshow
        self.picker = ToolsPicker()
        composer.add_beside_send(self.picker)
        tools, turn = session.tools, session.turn
        if tools is None or turn is None:
            self.picker.hide()
            return
        self._show_statuses()
        self.picker.set_chosen(frozenset(tools.chosen))
        self.picker.chosenChanged.connect(self._choose)
        self.picker.manageRequested.connect(lambda: manage("tools"))
        tools.servers.statusChanged.connect(self._show_statuses)
        tools.servers.serversChanged.connect(self._show_statuses)
        tools.choiceChanged.connect(lambda names: self.picker.set_chosen(frozenset(names)))
        turn.callProposed.connect(lambda pending: self._card(pending, awaiting=True))
        turn.callStarted.connect(self._on_started)
        turn.callFinished.connect(self._on_finished)
        turn.callRefused.connect(self._on_refused)
        session.conversationChanged.connect(self._on_conversation)
        session.busyChanged.connect(self._on_busy)

    def shows(self, message: StoredMessage) -> bool:
        """A stored result whose call has a live card: the card stands for it until the turn ends."""
        result = message.tool_result
        return result is not None and self._chat.tool_card(result.call_id) is not None

    def _choose(self, chosen: frozenset[str]) -> None:
        order = [config.name for config in self._session.tools.servers.servers()]
        self._session.choose_tool_servers(tuple(name for name in order if name in chosen))

    def _show_statuses(self, *_changed) -> None:
        self.picker.set_statuses(self._session.tools.servers.statuses())

    def _here(self) -> bool:
        """The turn's conversation is the one shown."""
        return self._session.reply_conversation_id == self._session.conversation_id is not None

    def _card(self, pending: PendingCall, awaiting: bool) -> ToolCallCard | None:
        if not self._here():
            return None
        card = self._chat.tool_card(pending.call_id)
        if card is None:
            card = self._chat.show_tool_call(pending, awaiting)
            card.decided.connect(lambda decision: self._session.turn.decide(pending.call_id, decision))
            card.stopRequested.connect(self._session.stop)
        return card

    def _on_started(self, call_id: str) -> None:
        pending = self._session.turn.current
        card = self._card(pending, awaiting=False) if pending is not None and pending.call_id == call_id else None
        if card is not None:
            card.set_running()

    def _on_finished(self, call_id: str, outcome: ToolOutcome) -> None:
        card = self._chat.tool_card(call_id)
        if card is not None:
            card.set_outcome(outcome)

    def _on_refused(self, call_id: str, text: str) -> None:
        card = self._chat.tool_card(call_id)
        if card is None:
            return
        if text == DENIED_TEXT:
            card.set_denied()
        else:
            card.set_outcome(ToolOutcome(text, error=True))

    def _on_conversation(self, _conversation_id) -> None:
        """Another conversation (or this one afresh): the cards go; the call the turn is on
        comes back where the turn's conversation is shown again."""
        self._chat.clear_tool_cards()
        turn = self._session.turn
        pending = turn.current
        if pending is not None and self._here():
            card = self._card(pending, awaiting=not turn.running)
            if card is not None and turn.running:
                card.set_running()

    def _on_busy(self, busy: bool) -> None:
        if not busy and self._chat.has_tool_cards():
            focused = QApplication.focusWidget()
            on_a_card = focused is not None and any(card.isAncestorOf(focused) for card in self._chat.tool_cards())
            self._chat.clear_tool_cards()
            self._reshow(self._session.conversation_id)  # the stored blocks take the cards' place
            if on_a_card:  # the keyboard goes back to where the next message is written, not to a stranger
                self._composer.edit.setFocus(Qt.FocusReason.OtherFocusReason)
