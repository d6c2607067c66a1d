"""One open conversation: what Send, Stop, Regenerate and Edit do, and what gets saved when.

`ChatSession` is the GUI thread's glue between the store (what is kept) and the engine
bridge (what is generated); the window only wires widgets to it. Saving follows the
"nothing lost" rule: the user's message is stored before generation starts, the reply is
stored as 'streaming' at once and rewritten every PARTIAL_SAVE_MS while it grows, so a killed
process leaves the reply as far as it got.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal

from .bridge import EngineBridge
from .engine.generator import ReplyStats
from .engine.sampling import SamplingParams
from .store import ConversationStore, StoredMessage

PARTIAL_SAVE_MS = 500


@dataclass(frozen=True)
class ReplySettings:
    """What the next reply is generated with; read fresh for every reply."""

    params: SamplingParams
    system_prompt: str
    model_name: str | None


class ChatSession(QObject):
    """Send / stop / regenerate / edit for the current conversation.

    Signals:
        conversationChanged(int): a conversation was opened or created; reload the view.
        messageAdded(object): a finished message (StoredMessage) to append to the view.
        replyStarted(int): an assistant reply with this message id begins streaming.
        replyChunk(str): more text of the streaming reply.
        replyFinished(int, str, dict, str): message id, full text, stats, status.
        busyChanged(bool): a reply started (True) or ended (False).
        error(str): something the user should read (the reply could not start, …).
        conversationsChanged(): titles or the list changed (a new or renamed conversation).
    """

    conversationChanged = Signal(int)
    messageAdded = Signal(object)
    replyStarted = Signal(int)
    replyChunk = Signal(str)
    replyFinished = Signal(int, str, dict, str)
    busyChanged = Signal(bool)
    error = Signal(str)
    conversationsChanged = Signal()

    def __init__(self, store: ConversationStore, bridge: EngineBridge, settings: Callable[[], ReplySettings], parent=None):
        super().__init__(parent)
        self.store = store
        self.bridge = bridge
        self._settings = settings
        self.conversation_id: int | None = None
        self._reply_id: int | None = None
        self._reply_text: list[str] = []
        self._saved_length = 0
        self._save_timer = QTimer(self)
        self._save_timer.setInterval(PARTIAL_SAVE_MS)
        self._save_timer.timeout.connect(self._save_partial)
        bridge.chunk.connect(self._on_chunk)
        bridge.replyFinished.connect(self._on_finished)
        bridge.failed.connect(self._on_failed)

    @property
    def busy(self) -> bool:
        return self._reply_id is not None

    # --- conversations -------------------------------------------------------------------------

    def open(self, conversation_id: int) -> None:
        if self.busy:
            self.stop()
        self.conversation_id = conversation_id
        self.conversationChanged.emit(conversation_id)

    def new_conversation(self) -> int:
        settings = self._settings()
        conversation_id = self.store.create_conversation(model=settings.model_name, system_prompt=settings.system_prompt)
        self.open(conversation_id)
        self.conversationsChanged.emit()
        return conversation_id

    def messages(self) -> list[StoredMessage]:
        return self.store.messages(self.conversation_id) if self.conversation_id is not None else []

    # --- the four actions ----------------------------------------------------------------------

    def send(self, text: str) -> bool:
        """Store the user's message and start a reply. False (nothing sent) while busy."""
        text = text.strip()
        if not text or self.busy or self.bridge.generating:
            return False
        if self.bridge.loaded is None:
            self.error.emit("No model is loaded yet. Pick one in the model panel.")
            return False
        if self.conversation_id is None:
            self.new_conversation()
        first = not self.messages()
        message_id = self.store.add_message(self.conversation_id, "user", text)
        self.messageAdded.emit(self._message(message_id))
        if first:
            self.conversationsChanged.emit()  # it just got its title
        return self._start_reply()

    def stop(self) -> None:
        self.bridge.stop()

    def regenerate(self) -> bool:
        """Replace the last reply with a new one to the same message."""
        if self.busy:
            return False
        messages = self.messages()
        last_user = next((m for m in reversed(messages) if m.role == "user"), None)
        if last_user is None:
            return False
        self.store.truncate_after(self.conversation_id, last_user.id)
        self.conversationChanged.emit(self.conversation_id)
        return self._start_reply()

    def edit(self, message_id: int, text: str) -> bool:
        """Change a user message, forget everything after it, and answer it again."""
        if self.busy or not text.strip():
            return False
        self.store.update_message_content(message_id, text.strip())
        self.store.truncate_after(self.conversation_id, message_id)
        self.conversationChanged.emit(self.conversation_id)
        return self._start_reply()

    # --- the reply ---------------------------------------------------------------------------

    def history(self) -> list[dict]:
        """The conversation as the engine sees it: the current system prompt, then every kept message.

        The system prompt comes from the live settings, so an edit applies to the next reply.
        """
        system = self._settings().system_prompt
        history = [{"role": "system", "content": system}] if system.strip() else []
        for message in self.messages():
            if message.role in ("user", "assistant") and not (message.status == "error" and not message.content):
                history.append({"role": message.role, "content": message.content})
        return history

    def _start_reply(self) -> bool:
        settings = self._settings()
        history = self.history()
        self.store.set_system_prompt(self.conversation_id, settings.system_prompt)  # kept for the record
        self._reply_id = self.store.add_message(
            self.conversation_id, "assistant", "", model=settings.model_name,
            params=settings.params.to_dict(), status="streaming",
        )
        self._reply_text = []
        self._saved_length = 0
        if not self.bridge.generate(history, settings.params):
            self.store.finish_message(self._reply_id, "", {"error": "busy"}, "error")
            self._reply_id = None
            return False
        self._save_timer.start()
        self.replyStarted.emit(self._reply_id)
        self.busyChanged.emit(True)
        return True

    def _on_chunk(self, text: str) -> None:
        if self._reply_id is not None:
            self._reply_text.append(text)
            self.replyChunk.emit(text)

    def _save_partial(self) -> None:
        text = "".join(self._reply_text)
        if self._reply_id is not None and len(text) != self._saved_length:
            self.store.update_partial(self._reply_id, text)
            self._saved_length = len(text)

    def _on_finished(self, text: str, stats: ReplyStats) -> None:
        status = {"cancelled": "cancelled", "error": "error"}.get(stats.stop_reason, "complete")
        self._finish(text, stats.to_dict(), status)

    def _on_failed(self, message: str) -> None:
        self._finish("", {"stop_reason": "error", "error": message}, "error")
        self.error.emit(message)

    def _finish(self, text: str, stats: dict, status: str) -> None:
        if self._reply_id is None:
            return
        self._save_timer.stop()
        reply_id, self._reply_id = self._reply_id, None
        self.store.finish_message(reply_id, text, stats, status)
        self.replyFinished.emit(reply_id, text, stats, status)
        self.busyChanged.emit(False)

    def _message(self, message_id: int) -> StoredMessage:
        return next(m for m in self.messages() if m.id == message_id)
