"""What the user chose for the open conversation from a list of named things (its tool servers,
its document collections): kept with the conversation in the store, and, for a conversation that
never chose, the choice made last (the settings' default), so a user who always works with the
same ones picks them once. The two owners that use it (conversation_tools.py,
conversation_documents.py) say where the choice is kept and which names still exist."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from ..store import Conversation, ConversationStore, StoreError


class ConversationChoice(QObject):
    """The open conversation's choice.

    Signals:
        choiceChanged(object): the names chosen for the open conversation (a tuple).
    """

    choiceChanged = Signal(object)

    def __init__(self, settings, parent: QObject | None = None):
        """`settings`: where the default lives (its `default_choice`, a tuple of names)."""
        super().__init__(parent)
        self._settings = settings
        self._chosen: tuple[str, ...] = settings.default_choice
        self.open_id: int | None = None  # the conversation the choice is of (None: a new one)

    # -- what each kind says -------------------------------------------------------------------

    def _kept(self, conversation: Conversation) -> tuple[str, ...] | None:
        """The choice kept with the conversation (None: never chosen)."""
        raise NotImplementedError

    def _keep(self, store: ConversationStore, conversation_id: int, names: tuple[str, ...]) -> None:
        raise NotImplementedError

    def _exists(self, name: str) -> bool:
        """The name is still there to be used (a server configured, a collection not removed)."""
        raise NotImplementedError

    def _chose(self, names: tuple[str, ...]) -> None:
        """Called with the names in use after every change (tool servers start then)."""

    # -- the API -------------------------------------------------------------------------------

    @property
    def chosen(self) -> tuple[str, ...]:
        """The names chosen that still exist."""
        return tuple(name for name in self._chosen if self._exists(name))

    def open(self, store: ConversationStore, conversation_id: int | None) -> None:
        """Another conversation is open: its choice (or the default) applies."""
        self.open_id = conversation_id
        chosen = None
        if conversation_id is not None:
            try:
                chosen = self._kept(store.get_conversation(conversation_id))
            except StoreError:
                chosen = None
        self._set(chosen if chosen is not None else self._settings.default_choice)

    def choose(self, store: ConversationStore, conversation_id: int | None, names: tuple[str, ...]) -> None:
        """The user's choice for this conversation (None: none open yet; then it applies to the
        next one), kept as the default for new ones."""
        if conversation_id is not None:
            self._keep(store, conversation_id, names)
        self.open_id = conversation_id
        self._settings.default_choice = names
        self._set(names)

    def keep_for(self, store: ConversationStore, conversation_id: int) -> None:
        """A conversation was just created with the choice shown: keep it with it."""
        self.open_id = conversation_id
        if self._chosen:
            self._keep(store, conversation_id, self._chosen)

    def _set(self, names: tuple[str, ...]) -> None:
        self._chosen = tuple(names)
        self._chose(self.chosen)
        self.choiceChanged.emit(self.chosen)
