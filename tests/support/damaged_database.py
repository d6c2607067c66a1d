"""Damaged conversation databases for the tests: a real SQLite file written by the store, with
some of its pages overwritten, as a disk that lost a few sectors leaves it."""

from __future__ import annotations

from pathlib import Path

from app.store import ConversationStore

PAGE = 4096


def build_conversations(path: Path, count: int = 12, messages: int = 20) -> list[int]:
    """A database of `count` conversations with long messages, spread over a few hundred pages."""
    with ConversationStore(path) as store:
        ids = []
        for number in range(count):
            conversation = store.create_conversation(title=f"Chat {number}")
            for index in range(messages):
                store.add_message(conversation, "user", f"message {index} of chat {number} " + "lorem ipsum " * 150)
            ids.append(conversation)
    return ids


def damage(path: Path, first_page: int, pages: int) -> None:
    """Overwrite pages with a pattern no SQLite page holds. Page 0 (the header) is the file's
    identity: damaging it makes a file SQLite refuses to open at all."""
    with open(path, "r+b") as file:
        file.seek(first_page * PAGE)
        file.write(b"\xde\xad\xbe\xef" * (PAGE // 4) * pages)


def damaged_database(path: Path) -> list[int]:
    """build_conversations, then three pages in the middle overwritten: the file opens and
    lists its conversations, but some of them (and searches) hit the damage."""
    ids = build_conversations(path)
    damage(path, path.stat().st_size // PAGE // 2, 3)
    return ids
