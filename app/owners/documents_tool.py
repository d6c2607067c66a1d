"""search_documents: the conversation's collections as a tool the model calls, for models that
call tools (Settings → Documents, "the model searches"), as Jan offers its documents.

Instead of each question being searched before its reply (source_lookup.py), the model is
offered one more tool beside the MCP servers' (tool_loop.py puts it in the catalog): it decides
whether to search and with what words, and may search again. It is Hearth's own, read-only,
over collections the user attached to the conversation: it runs without a card asking (the
call's card still shows it running and its result). The search runs on the library's search
thread; the GUI thread never waits.

The passages found are the question's sources as much as a lookup's are: each new one is added
to the question's sources (StoredMessage.sources) and numbered by its place there, so the
reply's [n] citations open them, the Sources block under the reply lists them, and a passage
found twice keeps its number.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from ..conversation.sources import sources_of, where
from ..documents.retrieval import Retrieval
from ..store import ConversationStore, Source, StoreError
from ..tool_servers.types import ListedTool, ServerState, ServerStatus, ToolOutcome
from .conversation_documents import ConversationDocuments

SERVER = "Your documents"  # the built-in "server" of the catalog: no MCP server is called this by Hearth
TOOL = ListedTool(
    SERVER, "search_documents",
    "Search the user's own documents (the collections attached to this conversation) for passages about "
    "something. Returns numbered passages; cite the ones you use as [n].",
    {"type": "object", "properties": {"query": {
        "type": "string", "description": "What to look for, in the words the documents would use."}},
     "required": ["query"]},
    title="Search your documents", read_only=True)
NO_QUERY = "The call needs a query: what to look for in the documents."
NOTHING = "No passages in the documents match that query."
HEADER = "Passages from the user's documents (cite the ones you use as [n]):"


class DocumentsTool(QObject):
    """The search_documents tool of the open conversation's collections.

    Signals:
        storeFailed(StoreError): the passages found could not be added to the question's sources.
        sourcesKept(int, object): the question with this id has these sources now (a tuple of
            Source), as SourceLookup.sourcesKept.
    """

    storeFailed = Signal(object)
    sourcesKept = Signal(int, object)
    _found = Signal(int, object)  # the search thread -> the GUI thread: question id, its sources now

    def __init__(self, documents: ConversationDocuments, store: Callable[[], ConversationStore],
                 parent: QObject | None = None):
        super().__init__(parent)
        self._documents, self._store = documents, store
        self.conversation: Callable[[], int | None] = lambda: None  # the turn's (ToolLoop sets it)
        self.collections: tuple[str, ...] = ()  # the turn's, taken when it began (ToolLoop.hold)
        self._found.connect(self._keep)

    def hold(self) -> None:
        """A turn begins: its collections are those chosen now, whatever is opened meanwhile."""
        self.collections = self._documents.chosen

    @property
    def offered(self) -> bool:
        """The model searches (Settings → Documents) and the turn's conversation has collections."""
        return self._documents.library.settings.as_tool and bool(self.collections)

    def status(self) -> ServerStatus | None:
        """The tool as a ready server of the catalog, None where it is not offered."""
        return ServerStatus(SERVER, ServerState.READY, tools=(TOOL,)) if self.offered else None

    def call(self, arguments: dict) -> concurrent.futures.Future:
        """Search; the future's ToolOutcome (never an exception) comes on the search thread."""
        outcome: concurrent.futures.Future = concurrent.futures.Future()
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            outcome.set_result(ToolOutcome(NO_QUERY, error=True))
            return outcome
        question = self._question()
        searched = self._documents.library.search(self.collections, query.strip())
        already = question.sources if question is not None else ()
        question_id = question.id if question is not None else None
        outcome.set_running_or_notify_cancel()
        searched.add_done_callback(lambda done: self._answer(done, already, question_id, outcome))
        return outcome

    def _question(self):
        """The turn's question: the user message its replies and results follow, up from the
        newest message of its conversation's branch shown."""
        conversation_id = self.conversation()
        try:
            message = self._store().leaf_message(conversation_id) if conversation_id is not None else None
            while message is not None and message.role != "user":
                message = self._store().message(message.parent_id) if message.parent_id is not None else None
        except StoreError:
            return None
        return message

    def _answer(self, searched: concurrent.futures.Future, already: tuple[Source, ...], question_id: int | None,
                outcome: concurrent.futures.Future) -> None:
        try:
            found: Retrieval = searched.result()
        except Exception as exc:  # the index, or an embedding model that did not load: the model is told, nothing raises
            outcome.set_result(ToolOutcome(f"The documents could not be searched: {exc}", error=True))
            return
        sources = list(already)
        numbers = []
        for source in sources_of(found.hits, by_tool=True):
            known = next((n for n, kept in enumerate(sources, start=1)
                          if (kept.path, kept.text) == (source.path, source.text)), None)
            if known is None:
                sources.append(source)
                known = len(sources)
            numbers.append(known)
        if question_id is not None and len(sources) > len(already):
            self._found.emit(question_id, tuple(sources))  # before the outcome: stored before the result is
        if not numbers:
            outcome.set_result(ToolOutcome(NOTHING))
            return
        blocks = [f"[{number}] {where(sources[number - 1])}\n{sources[number - 1].text.strip()}" for number in numbers]
        outcome.set_result(ToolOutcome(HEADER + "\n\n" + "\n\n".join(blocks)))

    def _keep(self, question_id: int, sources: tuple[Source, ...]) -> None:
        try:
            self._store().set_sources(question_id, sources)
            self.sourcesKept.emit(question_id, sources)
        except StoreError as exc:
            self.storeFailed.emit(exc)
