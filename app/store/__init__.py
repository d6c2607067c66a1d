"""Conversation storage: SQLite persistence, search, and Markdown/JSON export and import.

Pure Python and sqlite3, no Qt, so it can be tested and used without a GUI.
"""

from app.store.conversations import ConversationStore, auto_title
from app.store.importing import import_file
from app.store.records import (
    ROLES,
    STATUSES,
    Conversation,
    DatabaseDamaged,
    DeletedVersion,
    MessagePage,
    MissingImage,
    Source,
    StoredMessage,
    StoreError,
    ToolResult,
    shorten,
)

__all__ = [
    "ROLES", "STATUSES", "Conversation", "ConversationStore", "DatabaseDamaged", "DeletedVersion", "MessagePage",
    "MissingImage", "Source", "StoreError",
    "StoredMessage", "ToolResult", "auto_title", "import_file", "shorten",
]
