"""Which document collections the open conversation's questions are answered from.

A conversation keeps its choice in the store (Conversation.collections); one never chosen starts
with the choice made last (conversation_choice.py). With collections chosen, each message sent
is first looked up in them (DocumentLibrary.retrieve, on its search thread): the passages found
are kept with the message (StoredMessage.sources) and given to the model with it
(conversation/sources.py), and the reply's citations open them.
"""

from __future__ import annotations

from PySide6.QtCore import QObject

from ..store import Conversation, ConversationStore
from .conversation_choice import ConversationChoice
from .documents import DocumentLibrary


class ConversationDocuments(ConversationChoice):
    """The open conversation's collections (choiceChanged: a tuple of collection names)."""

    def __init__(self, library: DocumentLibrary, parent: QObject | None = None):
        self.library = library
        super().__init__(library.settings, parent)
        library.collectionsChanged.connect(lambda _summaries: self.choiceChanged.emit(self.chosen))

    def _kept(self, conversation: Conversation) -> tuple[str, ...] | None:
        return conversation.collections

    def _keep(self, store: ConversationStore, conversation_id: int, names: tuple[str, ...]) -> None:
        store.set_collections(conversation_id, names)

    def _exists(self, name: str) -> bool:
        return name in self.library.names()
