"""Conversation storage: SQLite persistence, search, and Markdown/JSON export and import.

Pure Python and sqlite3, no Qt, so it can be tested and used without a GUI.
"""

from app.store.conversations import ConversationStore, auto_title
from app.store.records import ROLES, STATUSES, Conversation, StoredMessage, StoreError

__all__ = ["ROLES", "STATUSES", "Conversation", "ConversationStore", "StoreError", "StoredMessage", "auto_title"]
