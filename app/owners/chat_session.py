"""One open conversation: what Send, Stop, Regenerate, Edit and the versions of a message do,
and what gets saved when.

Nothing is deleted by Edit or Regenerate: an edited message and a regenerated reply are new
versions (siblings in the store's tree); the window shows one branch, the one last viewed.
Delete version hides a version and all after it, until Undo.

`ChatSession` keeps the open conversation in the store and asks the bridge for replies, with
the settings the `ModelSession` holds. Widgets call its methods and listen to its signals; it
never calls back into them. Nothing is lost (as on the command line: conversation/exchange.py):
the user's message is stored before generation starts, the reply is stored as 'streaming' at
once and rewritten every PARTIAL_SAVE_MS while it grows.

A reply belongs to the conversation it was asked in: opening another does not stop it, and
`reply_so_far()` shows it again, as far as it got. One reply runs at a time; while Hearth
serves the model, a Send waits behind the served requests (`waitingChanged` says so).
"""

from __future__ import annotations

from PySide6.QtCore import QEventLoop, QObject, QTimer, Signal

from ..conversation.context_use import ContextUse, estimate_prompt, estimate_tokens
from ..conversation.exchange import PARTIAL_SAVE_MS, begin_reply
from ..conversation.history import ContextBoundary, context_boundary, history, last_measured, settled_use
from ..engine.tools.types import PLAIN, ToolCall
from ..engine.types import ReplyStats, ReplyStatus
from ..images.image import Image
from ..store import Conversation, ConversationStore, DeletedVersion, StoredMessage, StoreError
from .bridge import EngineBridge
from .conversation_documents import ConversationDocuments
from .conversation_tools import ConversationTools
from .model_session import ModelSession
from .replies import FinishedReply, ReplyInProgress, ReplySoFar
from .source_lookup import SourceLookup
from .tool_loop import ToolLoop

QUIT_WAIT_MS = 2_000  # how long quitting waits for a stopped reply to come back from the engine
NO_MODEL_MESSAGE = "No model is loaded. Choose one above the chat, or get one with Get models (Ctrl+Shift+G)."
SERVED_WAIT_MESSAGE = "The reply will start when the served request has finished (Esc cancels it)."
TOOLS_WAIT_MESSAGE = "The reply will start when its tool servers are ready (Esc cancels it)."
SOURCES_WAIT_MESSAGE = "Searching your documents… (Esc cancels the reply)"


class ChatSession(QObject):
    """Send / stop / regenerate / edit for the current conversation.

    Signals:
        conversationChanged(object): a conversation (its id) was opened or created, or its
            branch shown changed (an edit, a regenerated reply, another version shown or one
            deleted), or None when the open one was deleted; show it afresh (with the reply
            being written in it, as far as it got: `reply_so_far`).
        messageAdded(StoredMessage): a finished message to append to the view.
        replyStarted(StoredMessage): the (empty) assistant reply that begins streaming at the
            end of the branch shown (a regenerated one comes with conversationChanged instead).
        waitingChanged(str): why the reply waits to begin (requests served to other programs
            are ahead of it), or "" once it begins or ends.
        promptProgress(int, int): prompt tokens read so far, and of how many, before a reply
            to a long prompt starts.
        replyChunk(str): more text of the streaming reply (in whichever conversation it is:
            `reply_conversation_id`).
        replyFinished(FinishedReply): the reply ended and was stored.
        busyChanged(bool): a reply started (True) or ended (False).
        contextChanged(ContextUse): how much of the context window the open conversation fills
            changed: another conversation was opened, its reply grew (estimated) or ended
            (the engine's count).
        error(str): something the user should read (the reply could not start, …).
        conversationsChanged(): titles or the list changed (a new or renamed conversation).
        storeFailed(StoreError): saving the streaming reply failed (a damaged or full
            database). The methods the window calls raise StoreError instead.

    With `tools` (the open conversation's servers), a reply that ends in calls goes on to `loop`
    (a ToolLoop; its `turn`, a ToolTurn, has the cards' signals); each result is stored as it
    comes (messageAdded) and the model goes on: one turn of the agent loop, busy until its last
    reply; Stop ends it anywhere.
    """

    conversationChanged = Signal(object)
    messageAdded = Signal(object)
    replyStarted = Signal(object)
    waitingChanged = Signal(str)
    promptProgress = Signal(int, int)
    replyChunk = Signal(str)
    replyFinished = Signal(object)
    busyChanged = Signal(bool)
    contextChanged = Signal(object)
    error = Signal(str)
    conversationsChanged = Signal()
    storeFailed = Signal(object)

    def __init__(self, store: ConversationStore, bridge: EngineBridge, models: ModelSession,
                 tools: ConversationTools | None = None, parent=None, documents: ConversationDocuments | None = None):
        super().__init__(parent)
        self.store = store
        self._bridge = bridge
        self._models = models
        self.tools = tools
        self.documents = documents
        self.lookup = SourceLookup(documents, lambda: self.store, models, self) if documents is not None else None
        self.loop = ToolLoop(tools, lambda: self.store, self, documents) if tools is not None else None
        self.turn = self.loop.turn if self.loop is not None else None
        self._conversation_id: int | None = None
        self._reply: ReplyInProgress | None = None
        self._waiting = False  # the reply is in line behind served requests
        self._save_timer = QTimer(self)
        self._save_timer.setInterval(PARTIAL_SAVE_MS)
        self._save_timer.timeout.connect(self._save_partial)
        bridge.promptProgress.connect(self.promptProgress)
        bridge.replyBegan.connect(lambda: self._set_waiting(False))
        bridge.chunk.connect(self._on_chunk)
        bridge.replyFinished.connect(self._on_finished)
        bridge.toolCall.connect(self._on_tool_call)
        if self.loop is not None:
            self.loop.resultStored.connect(
                lambda message: message.conversation_id == self._conversation_id and self.messageAdded.emit(message))
            self.loop.nextReply.connect(lambda conversation_id, step: self._go_on(conversation_id, None, step))
            self.loop.ended.connect(self._end_turn)
            self.loop.notice.connect(self.error)
            self.loop.storeFailed.connect(self.storeFailed)
        if self.lookup is not None:
            self.lookup.notice.connect(self.error)
            self.lookup.storeFailed.connect(self.storeFailed)
        bridge.failed.connect(self._on_failed)
        bridge.modelLoaded.connect(lambda _description: self._bridge.prepare(self._conversation_id))

    @property
    def bridge(self) -> EngineBridge:
        """The engine this session's replies come from: an owner object that serves the same
        model to other programs (app.owners.local_server) shares it."""
        return self._bridge

    @property
    def conversation_id(self) -> int | None:
        """The open conversation, or None before the first message of a new one."""
        return self._conversation_id

    @property
    def busy(self) -> bool:
        """A reply is being written (in any conversation), or its turn runs tools or waits for
        their servers: another cannot start until it ends."""
        return self.reply_conversation_id is not None

    @property
    def waiting(self) -> bool:
        """The reply asked for waits for requests served to other programs before it begins."""
        return self._waiting

    @property
    def reply_conversation_id(self) -> int | None:
        """The conversation whose reply is being written (or whose turn waits for its tool
        servers or runs tools), if one is."""
        if self._reply is not None:
            return self._reply.conversation_id
        if self.lookup is not None and self.lookup.conversation_id is not None:
            return self.lookup.conversation_id
        return self.loop.conversation_id if self.loop is not None else None

    def reply_so_far(self) -> ReplySoFar | None:
        """The reply being written, with all its text so far, or None."""
        reply = self._reply
        if reply is None:
            return None
        return ReplySoFar(reply.stored.message_id, reply.conversation_id, reply.model, reply.text)

    def context_use(self) -> ContextUse:
        """How much of the context window the open conversation fills: while its reply is
        written, estimated from the prompt and the text so far; else conversation.context_use's
        settled_use (the engine's count after the last reply, or an estimate)."""
        reply = self._reply
        if reply is not None and reply.conversation_id == self._conversation_id:
            return ContextUse(reply.prompt_estimate + estimate_tokens(reply.length), estimated=True)
        return settled_use(self.store, self._conversation_id,
                           self.history() if self._conversation_id is not None else [])

    def context_boundary(self) -> ContextBoundary | None:
        """Where the model's view of the open conversation's branch began in its last counted
        reply (the window draws a line there), or None when it saw all of it."""
        return context_boundary(self.store, self._conversation_id) if self._conversation_id is not None else None

    def _emit_context(self) -> None:
        """contextChanged for the open conversation; a store that fails to say is said once,
        as for saving (the meter is not worth a second message)."""
        try:
            use = self.context_use()
        except StoreError as exc:
            self.storeFailed.emit(exc)
            return
        self.contextChanged.emit(use)

    # --- conversations -------------------------------------------------------------------------

    def open(self, conversation_id: int, at: int | None = None) -> None:
        """Show another conversation; a reply being written in this one goes on (and is saved).
        With `at` (a search hit), on the branch through that message, unless that
        conversation's reply is being written: its branch stays shown (is_shown says which)."""
        if at is not None and conversation_id != self.reply_conversation_id and not self.store.is_shown(at):
            self.store.show_version(at)
        if conversation_id != self._conversation_id:
            self._bridge.prepare(conversation_id)  # the KV state read while the user reads, not on Send
        self._conversation_id = conversation_id
        for choice in (self.tools, self.documents):
            if choice is not None:
                choice.open(self.store, conversation_id)
        self.conversationChanged.emit(conversation_id)
        self._emit_context()

    def choose_tool_servers(self, names: tuple[str, ...]) -> None:
        """The servers whose tools the open conversation's model may call from its next reply."""
        if self.tools is not None:
            self.tools.choose(self.store, self._conversation_id, names)

    def choose_collections(self, names: tuple[str, ...]) -> None:
        """The document collections the open conversation's next questions are answered from."""
        if self.documents is not None:
            self.documents.choose(self.store, self._conversation_id, names)

    def new_conversation(self) -> int:
        """Open a new conversation, or stay in the open one if nothing was said in it yet: each
        "New chat" does not leave another empty conversation in the list."""
        open_id = self._conversation_id
        if open_id is not None and self._is_empty(open_id):
            return open_id
        current = self._models.current
        conversation_id = self.store.create_conversation(
            model=current.record_name if current else None, system_prompt=self._models.settings.system_prompt)
        for choice in (self.tools, self.documents):
            if choice is not None:
                choice.keep_for(self.store, conversation_id)
        self.open(conversation_id)
        self.conversationsChanged.emit()
        return conversation_id

    def delete_conversation(self, conversation_id: int) -> Conversation:
        """Move a conversation to the trash (the store can restore it): a reply being written in
        it stops (kept as stopped, in the trash with it); if it is the open one, nothing is
        open any more."""
        deleted = self.store.delete(conversation_id)
        if conversation_id == self.reply_conversation_id:
            self.stop()
        self._bridge.forget_state(conversation_id)
        if conversation_id == self._conversation_id:
            self._conversation_id = None
            self.conversationChanged.emit(None)
            self._emit_context()
        self.conversationsChanged.emit()
        return deleted

    def _is_empty(self, conversation_id: int) -> bool:
        return not self.store.recent_messages(conversation_id, 1).messages

    def messages(self) -> list[StoredMessage]:
        """Every message of the open conversation (the window shows pages of recent_messages)."""
        return self.store.messages(self._conversation_id) if self._conversation_id is not None else []

    def replace_store(self, store: ConversationStore) -> None:
        """Carry on with another database (the damaged one was moved aside): a streaming reply
        is stopped and forgotten, since its message is in the old file, and nothing is open."""
        self.stop()
        self._save_timer.stop()
        was_busy, self._reply = self.busy, None
        self._set_waiting(False)
        self.store = store
        self._conversation_id = None
        if was_busy:
            self.busyChanged.emit(False)
        self.conversationChanged.emit(None)
        self._emit_context()
        self.conversationsChanged.emit()

    # --- the four actions ----------------------------------------------------------------------

    def send(self, text: str, images: tuple[Image, ...] = ()) -> bool:
        """Store the user's message (its text, its images or both) and start a reply in the open
        conversation. False (nothing sent) while a reply is being written, here or in another
        conversation. A model that cannot read images refuses them as the reply's error."""
        text = text.strip()
        if not (text or images) or self.busy or self._bridge.generating:
            return False
        if self._models.current is None:
            self.error.emit(NO_MODEL_MESSAGE)
            return False
        if self._conversation_id is None:
            self.new_conversation()
        first = self._is_empty(self._conversation_id)
        message_id = self.store.add_message(self._conversation_id, "user", text, images=tuple(images))
        self.messageAdded.emit(self.store.message(message_id))
        if first:
            self.conversationsChanged.emit()  # it just got its title
        return self._start_reply()

    def stop(self) -> None:
        """Stop the reply, the tool call in flight, or the wait for tool servers or sources: the turn ends."""
        if self.lookup is not None and (looked_up := self.lookup.stop()) is not None:
            self._end_turn(looked_up)
        if self.loop is not None:
            self.loop.stop()
        self._bridge.stop()

    def close(self, timeout_ms: int = QUIT_WAIT_MS) -> None:
        """Before Hearth quits: stop the reply and wait, bounded, for the engine to hand it back,
        so it is stored as stopped with its statistics instead of being found 'interrupted' (as
        after a crash) at the next start. Runs an event loop of its own: the application's has
        ended by then."""
        if not self.busy:
            return
        self.stop()
        ended = QEventLoop()
        self.busyChanged.connect(ended.quit)
        QTimer.singleShot(timeout_ms, ended.quit)
        if self.busy:
            ended.exec()
        self.busyChanged.disconnect(ended.quit)

    def regenerate(self) -> bool:
        """Answer the last message again: the last reply stays, as the version before."""
        if self.busy or self._conversation_id is None:
            return False
        leaf = self.store.leaf_message(self._conversation_id)
        if leaf is None:
            return False
        return self._start_reply(replacing=leaf if leaf.role == "assistant" else None)

    def edit(self, message_id: int, text: str) -> bool:
        """Answer a changed user message: it becomes a new version of that message, and the
        old version keeps everything that followed it."""
        if self.busy or self._conversation_id is None or not text.strip():
            return False
        self.store.add_version(message_id, text.strip())
        self.conversationChanged.emit(self._conversation_id)
        return self._start_reply()

    # --- versions ------------------------------------------------------------------------------

    def _reply_runs_here(self) -> bool:
        return self.reply_conversation_id is not None and self.reply_conversation_id == self._conversation_id

    def show_version(self, message_id: int) -> bool:
        """Show the branch through another version of a message. Not while the open
        conversation's reply is written: it belongs to the branch shown."""
        if self._reply_runs_here():
            return False
        self.store.show_version(message_id)
        self.open(self._conversation_id)
        return True

    def delete_version(self, message_id: int) -> DeletedVersion | None:
        """Delete a version and all that follows it (restore_version undoes it); None while the
        open conversation's reply is written."""
        if self._reply_runs_here():
            return None
        deleted = self.store.delete_version(message_id)
        self.open(self._conversation_id)
        self.conversationsChanged.emit()
        return deleted

    def restore_version(self, deleted: DeletedVersion) -> bool:
        """Undo delete_version: the version comes back, with the branch that was shown. False
        (nothing restored yet) while a reply is written in that conversation: bringing back
        the branch shown then would take it away from the reply."""
        if deleted.conversation_id == self.reply_conversation_id:
            return False
        self.store.restore_version(deleted)
        if deleted.conversation_id == self._conversation_id:
            self.open(self._conversation_id)
        self.conversationsChanged.emit()
        return True

    def branch_from(self, message_id: int) -> int:
        """Open a new conversation holding a copy of the branch up to this message."""
        conversation_id = self.store.branch_from(message_id)
        self.open(conversation_id)
        self.conversationsChanged.emit()
        return conversation_id

    # --- the reply ---------------------------------------------------------------------------

    def history(self, before: int | None = None) -> list[dict]:
        """The branch shown as the engine reads it (app.conversation.history), with the current
        system prompt: the model's live settings, so an edit applies to the next reply."""
        return history(self.store, self._conversation_id, self._models.settings.system_prompt, before)

    def _start_reply(self, replacing: StoredMessage | None = None) -> bool:
        """Start a reply at the end of the branch shown, or as a new version of `replacing`
        (Regenerate): then the branch shown changes, and conversationChanged says so instead
        of replyStarted. A question asked of documents has its sources found first (SourceLookup);
        a reply whose tool servers are still starting waits for them."""
        conversation_id = self._conversation_id
        if self.loop is not None:
            self.loop.hold(conversation_id)  # its servers and collections: those chosen now, whatever opens next
        if self.lookup is not None and self.lookup.begin(conversation_id, replacing,
                                                         lambda: self._after_lookup(conversation_id, replacing)):
            self._set_waiting(True, SOURCES_WAIT_MESSAGE)
            self.busyChanged.emit(True)
            return True
        if self.loop is not None and self.loop.begin(conversation_id, lambda: self._go_on(conversation_id, replacing, 0)):
            self._set_waiting(True, TOOLS_WAIT_MESSAGE)
            self.busyChanged.emit(True)
            return True
        return self._begin(conversation_id, replacing, 0)

    def _after_lookup(self, conversation_id: int, replacing: StoredMessage | None) -> None:
        self._set_waiting(False)
        if self.loop is None or not self.loop.begin(conversation_id, lambda: self._go_on(conversation_id, replacing, 0)):
            self._go_on(conversation_id, replacing, 0)
        else:
            self._set_waiting(True, TOOLS_WAIT_MESSAGE)

    def _go_on(self, conversation_id: int, replacing: StoredMessage | None, step: int) -> None:
        """Begin the reply a turn waited for (its servers, or its calls' results); a failure to
        begin it ends the turn (a store that fails is said, never left busy)."""
        self._set_waiting(False)
        try:
            begun = self._begin(conversation_id, replacing, step)
        except StoreError as exc:
            self.storeFailed.emit(exc)
            begun = False
        if not begun:
            self._end_turn(conversation_id)

    def _begin(self, conversation_id: int, replacing: StoredMessage | None, step: int) -> bool:
        """Store the reply begun and ask the engine for it (step > 0: after tool results)."""
        settings, current = self._models.settings, self._models.current
        last_measured_now = last_measured(self.store, conversation_id)  # before the reply is stored
        model = current.record_name if current else None
        stored = begin_reply(self.store, conversation_id, settings.system_prompt, model, settings.sampling,
                             replacing)
        tools, catalog = self.loop.use(step) if self.loop is not None else (PLAIN, None)
        if not self._bridge.generate(stored.messages, settings.sampling, conversation_id, tools):
            stored.finish("", ReplyStats.failed("busy"))
            if replacing is not None:
                self.conversationChanged.emit(self._conversation_id)
            return False
        prompt_estimate = estimate_prompt(stored.messages, last_measured_now)
        self._reply = ReplyInProgress(stored, conversation_id, model, prompt_estimate, [], catalog=catalog, step=step)
        self._save_timer.start()
        if replacing is not None:
            self.conversationChanged.emit(conversation_id)
        elif conversation_id == self._conversation_id:
            self.replyStarted.emit(self.store.message(stored.message_id))
        if step == 0:
            self.busyChanged.emit(True)
        self._emit_context()
        if self._bridge.served_pending:
            self._set_waiting(True)
        return True

    def _set_waiting(self, waiting: bool, message: str = SERVED_WAIT_MESSAGE) -> None:
        if waiting != self._waiting:
            self._waiting = waiting
            self.waitingChanged.emit(message if waiting else "")

    def _on_chunk(self, text: str) -> None:
        reply = self._reply
        if reply is not None:
            reply.add(text)
            self.replyChunk.emit(text)
            if reply.conversation_id == self._conversation_id:
                self.contextChanged.emit(self.context_use())

    def _on_tool_call(self, call: ToolCall) -> None:
        if self._reply is not None:
            self._reply.calls.append(self.loop.written(call) if self.loop is not None else call)

    def _save_partial(self) -> None:
        reply = self._reply
        if reply is None:
            return
        try:
            reply.stored.save_partial(reply.text)
        except StoreError as exc:
            self._save_timer.stop()  # said once; the reply still streams and is shown
            self.storeFailed.emit(exc)

    def _on_finished(self, text: str, stats: ReplyStats) -> None:
        self._finish(text, stats, ReplyStatus.after(stats.stop_reason))

    def _on_failed(self, message: str) -> None:
        self._finish("", ReplyStats.failed(message), ReplyStatus.ERROR)
        self.error.emit(message)

    def _finish(self, text: str, stats: ReplyStats, status: ReplyStatus) -> None:
        reply, self._reply = self._reply, None
        if reply is None:
            return
        self._set_waiting(False)
        self._save_timer.stop()
        try:
            reply.stored.finish(text, stats, status, tuple(reply.calls))
        except StoreError as exc:  # the reply is still shown, and the chat is not left busy
            self.storeFailed.emit(exc)
            reply.calls.clear()
        self.replyFinished.emit(FinishedReply(reply.stored.message_id, reply.conversation_id, text, stats, status))
        if self.loop is None or not self.loop.reply_ended(reply.step, tuple(reply.calls), stats, reply.catalog):
            self._end_turn(reply.conversation_id)

    def _end_turn(self, conversation_id: int | None) -> None:
        self._set_waiting(False)
        self.busyChanged.emit(False)
        if conversation_id == self._conversation_id:
            self._emit_context()
