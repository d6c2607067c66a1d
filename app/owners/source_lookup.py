"""Before a reply to a question asked of the user's documents: its sources found and kept with it.

With collections chosen for the conversation (ConversationDocuments), a Send, an edit or a
Regenerate of a question that has no sources yet asks the DocumentLibrary's search thread
first; the best of the passages found, as many as fill at most half the model's context
(sources.fitting), are stored with the question (ConversationStore.set_sources) and
the reply begins, reading them with it (conversation/history.py). A question that has its
sources (Regenerate, or a reply asked again after a stop) keeps them: the reply reads what the
one before it read. The wait is short (embedding one question and two searches: tens of
milliseconds once the model is loaded) and Stop ends it.

If the search fails (a collection removed meanwhile, an embedding model that does not load) the
user is told and the reply goes on without sources rather than not at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from ..conversation.sources import fitting, sources_of
from ..store import ConversationStore, StoredMessage, StoreError
from .conversation_documents import ConversationDocuments
from .documents import Asked
from .model_session import ModelSession

WORDS_ONLY = ("{names} was indexed with another embedding model than the one chosen in Settings → Documents, so it "
              "was searched by its words only. Update it there to search it by meaning too.")


@dataclass
class _Pending:
    ticket: int
    conversation_id: int
    question_id: int
    then: Callable[[], None]
    found_by_tool: tuple  # what the model's own searches found for the question before: kept, numbered first


class SourceLookup(QObject):
    """One question's sources, looked up before its reply.

    Signals:
        notice(str): something the user should read (the documents could not be searched, or
            only by their words); the reply goes on.
        storeFailed(StoreError): the sources could not be kept with the question.
        sourcesKept(int, object): the question with this id has these sources now (a tuple of
            Source): the window's view of it, shown before they were found, takes them.
    """

    notice = Signal(str)
    storeFailed = Signal(object)
    sourcesKept = Signal(int, object)

    def __init__(self, documents: ConversationDocuments, store: Callable[[], ConversationStore],
                 models: ModelSession, parent: QObject | None = None):
        """`models`: whose loaded context the sources may fill half of at most (sources.fitting)."""
        super().__init__(parent)
        self._documents, self._store, self._models = documents, store, models
        self._pending: _Pending | None = None
        documents.library.retrieved.connect(self._on_retrieved)

    @property
    def conversation_id(self) -> int | None:
        """The conversation whose question is being looked up, if one is."""
        return self._pending.conversation_id if self._pending is not None else None

    def begin(self, conversation_id: int, replacing: StoredMessage | None, then: Callable[[], None]) -> bool:
        """Look up the sources of the question the reply answers (the leaf, or the question
        `replacing` answered), then call `then`. False (nothing to do, `then` not called): no
        collections are chosen, the model searches them itself, or a lookup found the question's
        sources already. Sources the model's own search found (an earlier turn in "the model
        searches") are kept, and the lookup's follow them."""
        names = self._documents.chosen
        if not names or conversation_id is None or self._documents.library.settings.as_tool:
            return False  # none chosen, or the model searches them itself (documents_tool.py)
        store = self._store()
        question = store.message(replacing.parent_id) if replacing is not None else store.leaf_message(conversation_id)
        if question is None or question.role != "user" or any(not source.by_tool for source in question.sources):
            return False
        ticket = self._documents.library.retrieve(names, question.content)
        self._pending = _Pending(ticket, conversation_id, question.id, then, question.sources)
        return True

    def stop(self) -> int | None:
        """Stop waiting (the answer, when it comes, is dropped): the conversation it was for."""
        pending, self._pending = self._pending, None
        return pending.conversation_id if pending is not None else None

    def _on_retrieved(self, asked: Asked) -> None:
        pending = self._pending
        if pending is None or asked.ticket != pending.ticket:
            return
        self._pending = None
        if asked.retrieval is None:
            self.notice.emit(f"Your documents could not be searched, so the reply has no sources: {asked.error}")
        else:
            if asked.retrieval.words_only:
                self.notice.emit(WORDS_ONLY.format(names=", ".join(asked.retrieval.words_only)))
            try:
                current = self._models.current
                kept = pending.found_by_tool + fitting(sources_of(asked.retrieval.hits),
                                                       current.n_ctx if current is not None else None)
                self._store().set_sources(pending.question_id, kept)
                self.sourcesKept.emit(pending.question_id, kept)
            except StoreError as exc:
                self.storeFailed.emit(exc)
        pending.then()
