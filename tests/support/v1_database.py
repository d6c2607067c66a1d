"""Conversation databases at schema version 1, as Hearth wrote them before message trees.

The v1 -> v2 migration must be tested on what v1 actually wrote, and the store's code now writes
v2, so this module keeps a frozen copy of v1's writes: the schema exactly as released
(app/store/schema.py MIGRATIONS[0] at commit df0482f), the full-text index as df0482f's
search.install created it, and the SQL statements of df0482f's ConversationStore (V1Writer).
Nothing here imports app/ (ReleasedStoreWriter imports the released tree), so the store can
change freely.

build_v1_database() writes a few thousand messages of realistic history, deterministic for a
seed, covering what a migration could lose: every status (one reply left 'streaming' as a crash
leaves it), statistics and sampling parameters, models, system prompts, odd titles, the trash,
positions reused by Edit/Regenerate, an empty conversation and a 200 KB message. It returns a
V1Summary of every stored row to compare with after migrating.

As a script: `python tests/support/v1_database.py OUT.sqlite3 [--messages N] [--seed S]`.
With `--released-app DIR` (DIR holding df0482f's app/, from `git archive df0482f app`) the same
history is written through the released ConversationStore itself: test_v1_database compares the
two files to show that the frozen copy writes what v1 wrote.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import sys
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Protocol

RELEASED_COMMIT = "df0482f"  # the last commit whose store wrote schema version 1

# app/store/schema.py MIGRATIONS[0] at df0482f, character for character (SQLite keeps the text
# of each CREATE in sqlite_master, so the indentation is part of the schema).
V1_SCHEMA = """
    CREATE TABLE conversations (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        model TEXT,
        system_prompt TEXT NOT NULL DEFAULT '',
        deleted_at TEXT
    );
    CREATE INDEX conversations_by_activity ON conversations (deleted_at, updated_at);

    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
        content TEXT NOT NULL,
        model TEXT,
        params_json TEXT NOT NULL DEFAULT '{}',
        stats_json TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'complete'
            CHECK (status IN ('complete', 'streaming', 'cancelled', 'error')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (conversation_id, position)
    );
    -- Crash recovery looks for 'streaming' rows on every start; this index holds only those.
    CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming';
    """

# What df0482f's search.install ran on a database without the index: external-content FTS5
# tables kept in step by triggers, then filled with 'rebuild'.
V1_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS conversation_fts USING fts5(title, content='conversations', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS conversation_fts_insert AFTER INSERT ON conversations BEGIN "
    "INSERT INTO conversation_fts (rowid, title) VALUES (new.id, new.title); END",
    "CREATE TRIGGER IF NOT EXISTS conversation_fts_delete AFTER DELETE ON conversations BEGIN "
    "INSERT INTO conversation_fts (conversation_fts, rowid, title) VALUES ('delete', old.id, old.title); END",
    "CREATE TRIGGER IF NOT EXISTS conversation_fts_update AFTER UPDATE OF title ON conversations BEGIN "
    "INSERT INTO conversation_fts (conversation_fts, rowid, title) VALUES ('delete', old.id, old.title); "
    "INSERT INTO conversation_fts (rowid, title) VALUES (new.id, new.title); END",
    "INSERT INTO conversation_fts (conversation_fts) VALUES ('rebuild')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS message_fts USING fts5(content, content='messages', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS message_fts_insert AFTER INSERT ON messages BEGIN "
    "INSERT INTO message_fts (rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER IF NOT EXISTS message_fts_delete AFTER DELETE ON messages BEGIN "
    "INSERT INTO message_fts (message_fts, rowid, content) VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER IF NOT EXISTS message_fts_update AFTER UPDATE OF content ON messages BEGIN "
    "INSERT INTO message_fts (message_fts, rowid, content) VALUES ('delete', old.id, old.content); "
    "INSERT INTO message_fts (rowid, content) VALUES (new.id, new.content); END",
    "INSERT INTO message_fts (message_fts) VALUES ('rebuild')",
)

# ReplyStats.to_dict()'s keys, in its order (asdict follows the fields), and StopReason's words.
STATS_KEYS = ("prompt_tokens", "evaluated_prompt_tokens", "completion_tokens", "ttft_s", "tokens_per_s",
              "stop_reason", "dropped_messages", "seed", "error")
STOP_REASONS = ("end_of_turn", "stop_string", "length", "cancelled", "error", "interrupted")


def auto_title(text: str, limit: int = 40) -> str:
    """df0482f's auto_title: the first user message, whitespace collapsed, cut near limit."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit + 1]
    boundary = cut.rfind(" ")
    cut = cut[:boundary] if boundary > limit // 2 else text[:limit]
    return re.sub(r"[\s.,;:!?-]+$", "", cut) + "…"


def create_v1_database(path: Path) -> sqlite3.Connection:
    """A new, empty v1 database at path, opened as df0482f's schema.connect and search.install
    left it (autocommit, foreign keys, WAL, the index installed). Never overwrites a file."""
    if path.exists():
        raise FileExistsError(f"{path} exists; a v1 database is only built into a new file")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(f"BEGIN IMMEDIATE;\n{V1_SCHEMA}\nPRAGMA user_version = 1;\nCOMMIT;")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("BEGIN IMMEDIATE")
    for statement in V1_FTS:
        conn.execute(statement)
    conn.execute("COMMIT")
    conn.row_factory = sqlite3.Row
    return conn


class Writer(Protocol):
    """The v1 store operations the history is written with: V1Writer, or ReleasedStoreWriter."""

    def create_conversation(self, title: str = "", model: str | None = None, system_prompt: str = "") -> int: ...
    def add_message(self, conversation_id: int, role: str, content: str, model: str | None = None,
                    params: dict | None = None, status: str = "complete") -> int: ...
    def update_partial(self, message_id: int, content: str) -> None: ...
    def finish_message(self, message_id: int, content: str, stats: dict | None, status: str) -> None: ...
    def update_message_content(self, message_id: int, content: str) -> None: ...
    def truncate_after(self, conversation_id: int, message_id: int) -> int: ...
    def set_system_prompt(self, conversation_id: int, system_prompt: str) -> None: ...
    def rename(self, conversation_id: int, title: str) -> None: ...
    def delete(self, conversation_id: int) -> None: ...
    def recover_interrupted(self) -> None: ...


class V1Writer:
    """df0482f's ConversationStore writes, statement for statement, on a v1 connection.

    Statuses are their words and stats are ReplyStats.to_dict() dicts. Transactions are the
    caller's: the released store committed each call, which changes no row, so a build runs in
    one transaction to take milliseconds. `now` gives each timestamp, where the store asked
    utc_now(), in its format.
    """

    def __init__(self, conn: sqlite3.Connection, now: Callable[[], str]):
        self._conn = conn
        self._now = now

    def create_conversation(self, title: str = "", model: str | None = None, system_prompt: str = "") -> int:
        now = self._now()
        return self._conn.execute(
            "INSERT INTO conversations (title, created_at, updated_at, model, system_prompt) VALUES (?, ?, ?, ?, ?)",
            (title, now, now, model, system_prompt),
        ).lastrowid

    def add_message(self, conversation_id: int, role: str, content: str, model: str | None = None,
                    params: dict | None = None, status: str = "complete") -> int:
        """Appended at MAX(position) + 1; the first user message titles an untitled conversation."""
        now = self._now()
        title = self._conn.execute("SELECT title FROM conversations WHERE id = ?", (conversation_id,)).fetchone()[0]
        position = self._conn.execute(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()[0]
        message_id = self._conn.execute(
            "INSERT INTO messages (conversation_id, position, role, content, model, params_json, status,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (conversation_id, position, role, content, model, json.dumps(params or {}), status, now, now),
        ).lastrowid
        if not title and role == "user":
            title = auto_title(content)
        self._conn.execute(
            "UPDATE conversations SET title = ?, model = COALESCE(?, model), updated_at = ? WHERE id = ?",
            (title, model, now, conversation_id),
        )
        return message_id

    def update_partial(self, message_id: int, content: str) -> None:
        self._conn.execute(
            "UPDATE messages SET content = ?, updated_at = ? WHERE id = ? AND status = 'streaming'",
            (content, self._now(), message_id),
        )

    def finish_message(self, message_id: int, content: str, stats: dict | None, status: str) -> None:
        now = self._now()
        self._conn.execute(
            "UPDATE messages SET content = ?, stats_json = ?, status = ?, updated_at = ?"
            " WHERE id = ? AND status = 'streaming'",
            (content, json.dumps(stats or {}), status, now, message_id),
        )
        self._touch_conversation_of(message_id, now)

    def update_message_content(self, message_id: int, content: str) -> None:
        now = self._now()
        self._conn.execute("UPDATE messages SET content = ?, updated_at = ? WHERE id = ?", (content, now, message_id))
        self._touch_conversation_of(message_id, now)

    def truncate_after(self, conversation_id: int, message_id: int) -> int:
        """v1's Edit and Regenerate: every later message deleted, its position free again."""
        position = self._conn.execute(
            "SELECT position FROM messages WHERE id = ? AND conversation_id = ?", (message_id, conversation_id)
        ).fetchone()[0]
        removed = self._conn.execute(
            "DELETE FROM messages WHERE conversation_id = ? AND position > ?", (conversation_id, position)
        ).rowcount
        self._conn.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (self._now(), conversation_id))
        return removed

    def set_system_prompt(self, conversation_id: int, system_prompt: str) -> None:
        self._conn.execute(
            "UPDATE conversations SET system_prompt = ?, updated_at = ? WHERE id = ?",
            (system_prompt, self._now(), conversation_id),
        )

    def rename(self, conversation_id: int, title: str) -> None:
        self._conn.execute("UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id))

    def delete(self, conversation_id: int) -> None:
        """Into the trash: deleted_at set, nothing erased."""
        self._conn.execute(
            "UPDATE conversations SET deleted_at = COALESCE(deleted_at, ?) WHERE id = ?", (self._now(), conversation_id)
        )

    def recover_interrupted(self) -> None:
        """What the next start did to a reply a crash left 'streaming'."""
        rows = self._conn.execute("SELECT id, stats_json FROM messages WHERE status = 'streaming'").fetchall()
        for message_id, stats_json in rows:
            stats = {**json.loads(stats_json), "stop_reason": "interrupted"}
            self._conn.execute(
                "UPDATE messages SET status = 'cancelled', stats_json = ? WHERE id = ?", (json.dumps(stats), message_id)
            )

    def _touch_conversation_of(self, message_id: int, now: str) -> None:
        self._conn.execute(
            "UPDATE conversations SET updated_at = ? WHERE id = (SELECT conversation_id FROM messages WHERE id = ?)",
            (now, message_id),
        )


class ReleasedStoreWriter:
    """The Writer operations through the released ConversationStore itself, imported from
    released_app (df0482f's tree, put first on sys.path, so only in a process of its own): the
    cross-check of V1Writer. Recovery is a reopen, as at Hearth's next start."""

    def __init__(self, path: Path, released_app: Path):
        sys.path.insert(0, str(released_app))
        from app.engine.types import ReplyStats, ReplyStatus
        from app.store import ConversationStore

        if not Path(sys.modules["app.store"].__file__).is_relative_to(released_app.resolve()):
            raise RuntimeError(f"app.store was imported from {sys.modules['app.store'].__file__}, not {released_app}")
        self._path, self._open = path, ConversationStore
        self._stats, self._status = ReplyStats.from_dict, ReplyStatus
        self.store = ConversationStore(path)

    def create_conversation(self, title: str = "", model: str | None = None, system_prompt: str = "") -> int:
        return self.store.create_conversation(title, model, system_prompt)

    def add_message(self, conversation_id: int, role: str, content: str, model: str | None = None,
                    params: dict | None = None, status: str = "complete") -> int:
        return self.store.add_message(conversation_id, role, content, model, params, self._status(status))

    def update_partial(self, message_id: int, content: str) -> None:
        self.store.update_partial(message_id, content)

    def finish_message(self, message_id: int, content: str, stats: dict | None, status: str) -> None:
        self.store.finish_message(message_id, content, self._stats(stats) if stats else None, self._status(status))

    def update_message_content(self, message_id: int, content: str) -> None:
        self.store.update_message_content(message_id, content)

    def truncate_after(self, conversation_id: int, message_id: int) -> int:
        return self.store.truncate_after(conversation_id, message_id)

    def set_system_prompt(self, conversation_id: int, system_prompt: str) -> None:
        self.store.set_system_prompt(conversation_id, system_prompt)

    def rename(self, conversation_id: int, title: str) -> None:
        self.store.rename(conversation_id, title)

    def delete(self, conversation_id: int) -> None:
        self.store.delete(conversation_id)

    def recover_interrupted(self) -> None:
        self.store.close()
        self.store = self._open(self._path)


# What the history is made of.

MODELS = (
    "qwen2.5-0.5b-instruct-q4_k_m.gguf", "Llama-3.2-3B-Instruct-Q4_K_M.gguf", "gemma-2-2b-it-Q5_K_S.gguf",
    "mistral-7b-instruct-v0.3.Q4_0.gguf", "gpt-4o-mini @ Work server", "llama3.1:8b @ Ollama on the NAS",
)
SYSTEM_PROMPTS = (
    "", "", "You are a helpful assistant.", "Réponds toujours en français.",
    "Answer in one sentence.\nNever use lists.", "أنت مساعد مفيد. أجب باختصار.",
)
ODD_TITLES = (
    "🔥 Rust lifetimes 🦀 and 👩‍👩‍👧 families",
    "שלום עולם — مرحبا بالعالم",
    "A very long title " + "that keeps going " * 30 + "and ends here",
    "",
    "100% of 'quotes' \"and\" back\\slash _under_ <b>not bold</b>",
    "Cafe\u0301 nai\u0308ve Ångström 東京 サーバー",
)
_WORDS = (
    "the model context window token prompt reply stream cache layer tensor kernel quantize gguf weight "
    "sampling temperature seed server client socket thread queue lock commit branch merge rebase schema "
    "index query table row column migration backup export import search snippet title message version "
    "lighthouse harbour keeper storm lantern island tide gull rope anchor voyage compass chart map "
    "café naïve résumé façade jalapeño Zürich über déjà vu coöperate "
    "why how what when where which could should would must will can may please thanks "
    "a an of to in on for with from by about over under between after before and or but not"
).split()
_SNIPPETS = (
    "```python\ndef greet(name: str) -> str:\n    return f\"Hello, {name}!\"\n```",
    "| size | speed |\n|---:|:---|\n| 0.5B | 120 tok/s |\n| 7B | 18 tok/s |",
    "<script>alert('not executed')</script> & <img src=x onerror=alert(1)>",
    "مرحبا، كيف حالك اليوم؟ שלום! 你好，世界。こんにちは。",
    "Emoji 😀👍🏽🧑‍💻 and a zero\u200bwidth space, a tab\there, and \"smart quotes\" ‘like’ these.",
    "Windows line ends\r\nsurvive\r\nas they are.",
    "- one\n- two\n  - nested **bold** and `code`\n\n> a quote\n\nhttps://example.com/a?b=c&d=e",
    "Math: ∑ᵢ xᵢ² ≤ ∞, naïve ≠ naive, 1e-308 and 0x7fffffffffffffff.",
)
# How a reply ends: (weight, status, stop_reason). ('error', None) is a reply that never started.
_ENDINGS = (
    (80, "complete", "end_of_turn"), (5, "complete", "length"), (5, "complete", "stop_string"),
    (5, "cancelled", "cancelled"), (3, "error", "error"), (2, "error", None),
)
_HISTORY_WINDOW = 40  # messages before dropped_messages starts counting in a long conversation
_START = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(4, 16))).capitalize() + rng.choice(".?!")


def _text(rng: random.Random, sentences: int, snippet_chance: float) -> str:
    parts = [_sentence(rng) for _ in range(sentences)]
    if rng.random() < snippet_chance:
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(_SNIPPETS))
    return "\n\n".join(parts) if rng.random() < 0.4 else " ".join(parts)


def _params(rng: random.Random) -> dict:
    """SamplingParams.to_dict() as df0482f wrote it: every field, stop strings and logit_bias
    (token ids as text keys) included."""
    return {
        "temperature": rng.choice((0.7, 0.7, 0.0, 1.2, 0.35)), "top_k": rng.choice((40, 40, 0, 100)),
        "top_p": rng.choice((0.95, 0.9, 1.0)), "min_p": rng.choice((0.05, 0.0, 0.1)),
        "repeat_penalty": rng.choice((1.1, 1.0, 1.3)), "repeat_last_n": rng.choice((64, 0, 256)),
        "presence_penalty": rng.choice((0.0, 0.5)), "frequency_penalty": rng.choice((0.0, 0.25)),
        "max_tokens": rng.choice((1024, 1024, 256, 4096)), "seed": rng.choice((None, None, 42, 2**31 - 1)),
        "stop": rng.choice(([], [], ["</s>"], ["\n\nUser:", "###"])),
        "logit_bias": rng.choice(({}, {}, {"15": -100.0}, {"2": 5.0, "13": -1.5})),
    }


@dataclass
class _Chat:
    """A conversation being written: its id, the model and system prompt in use, and a rough
    token count of everything said so far (what a prompt would cost)."""

    id: int
    model: str | None
    system_prompt: str
    messages: int = 0
    tokens: int = 0


class _History:
    """Writes conversations through a Writer as ChatSession did: send, then a streamed reply."""

    def __init__(self, writer: Writer, rng: random.Random):
        self.writer, self.rng = writer, rng

    def new_chat(self, model: str | None = None, system_prompt: str | None = None) -> _Chat:
        """ChatSession.new_conversation: the model loaded (if any) and its system prompt."""
        model = model if model is not None else self.rng.choice((*MODELS, None))
        prompt = system_prompt if system_prompt is not None else self.rng.choice(SYSTEM_PROMPTS)
        return _Chat(self.writer.create_conversation(model=model, system_prompt=prompt), model, prompt)

    def send(self, chat: _Chat, text: str, role: str = "user") -> int:
        chat.messages += 1
        chat.tokens += len(text) // 4 + 4
        return self.writer.add_message(chat.id, role, text)

    def reply(self, chat: _Chat, ending: tuple[str, str | None] | None = None, finish: bool = True) -> int:
        """A reply streamed, saved partially and finished with statistics; finish=False leaves
        it 'streaming', as a crash does."""
        rng, writer = self.rng, self.writer
        if chat.model is None or rng.random() < 0.05:
            chat.model = rng.choice(MODELS)
        if rng.random() < 0.03:
            chat.system_prompt = rng.choice(SYSTEM_PROMPTS)
        status, reason = ending or rng.choices([e[1:] for e in _ENDINGS], [e[0] for e in _ENDINGS])[0]
        params = _params(rng)
        writer.set_system_prompt(chat.id, chat.system_prompt)
        message_id = writer.add_message(chat.id, "assistant", "", chat.model, params, "streaming")
        chat.messages += 1
        text = _text(rng, rng.randint(2, 14), 0.25)
        if status == "cancelled" or reason == "error" or not finish:
            text = text[: rng.randint(1, len(text))]
        saves = 0 if reason is None else rng.randint(0 if finish else 1, 3)  # one every half second
        for saved in sorted(rng.randint(1, len(text)) for _ in range(saves)):
            writer.update_partial(message_id, text[:saved])
        if not finish:
            return message_id
        if reason is None:  # ReplyStats.failed(...): the reply never started
            stats = dict(zip(STATS_KEYS, (0, 0, None, 0.0, 0.0, "error", 0, None, rng.choice(
                ("busy", "No model is loaded.", "The prompt is longer than the context window (8192 tokens).")))))
            writer.finish_message(message_id, "", stats, status)
            return message_id
        prompt = chat.tokens + len(chat.system_prompt) // 4
        stats = dict(zip(STATS_KEYS, (
            prompt, rng.choice((prompt, rng.randint(0, prompt))), len(text) // 4, rng.uniform(0.02, 4.0),
            rng.uniform(3.0, 150.0), reason, max(0, chat.messages - _HISTORY_WINDOW),
            params["seed"] if params["seed"] is not None else rng.randrange(2**31),
            "Connection to the server was lost." if reason == "error" else None,
        )))
        writer.finish_message(message_id, text, stats, status)
        chat.tokens += len(text) // 4
        return message_id

    def exchange(self, chat: _Chat) -> None:
        self.send(chat, _text(self.rng, self.rng.randint(1, 4), 0.1))
        self.reply(chat)


@dataclass(frozen=True)
class V1Conversation:
    """One conversation as stored: `row` has every column of `conversations`, `messages` every
    column of each of its `messages` rows (JSON columns as their text), by position."""

    row: dict
    messages: tuple[dict, ...]


@dataclass(frozen=True)
class V1Summary:
    """What a built database holds, and where its hard cases are."""

    path: Path
    conversations: tuple[V1Conversation, ...]  # by id
    empty_conversation_id: int  # no messages at all
    edited_conversation_id: int  # Edit and Regenerate truncated it: positions reused
    endings_conversation_id: int  # every way a reply ends, a 'system' message, stop_reason null
    trashed_conversation_ids: tuple[int, ...]  # deleted_at set
    huge_message_id: int  # ~200 KB of text
    interrupted_message_id: int  # recovered at a later start: 'cancelled', stop_reason "interrupted"
    streaming_message_id: int  # still 'streaming': Hearth was killed and not started again
    null_stop_reason_message_id: int  # stats with "stop_reason": null, as an import stored them

    @property
    def message_count(self) -> int:
        return sum(len(conversation.messages) for conversation in self.conversations)

    def conversation(self, conversation_id: int) -> V1Conversation:
        return next(c for c in self.conversations if c.row["id"] == conversation_id)


def read_v1(conn: sqlite3.Connection) -> tuple[V1Conversation, ...]:
    """Every conversation and message row of a v1 database, conversations by id."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    messages: dict[int, list[dict]] = {}
    for row in cursor.execute("SELECT * FROM messages ORDER BY conversation_id, position"):
        messages.setdefault(row["conversation_id"], []).append(dict(row))
    return tuple(V1Conversation(dict(row), tuple(messages.get(row["id"], ())))
                 for row in cursor.execute("SELECT * FROM conversations ORDER BY id").fetchall())


def write_v1_history(writer: Writer, rng: random.Random, conversations: int = 60, messages: int = 3000) -> dict:
    """The history build_v1_database writes, through any Writer; returns V1Summary's landmarks.

    About `messages` messages in `conversations` conversations (at least 8), exchanges spread
    over the conversations and interleaved in time as a user moves between them.
    """
    history = _History(writer, rng)
    empty = writer.create_conversation()  # "New chat" before any model was loaded: no title, no model

    bulk = max(3, conversations - 5)
    weights = [rng.random() ** 3 for _ in range(bulk)]
    weights[0] = sum(weights)  # one long conversation, where dropped_messages counts
    exchanges = max(bulk, (messages - 40) // 2)
    schedule = list(range(bulk)) + rng.choices(range(bulk), weights, k=exchanges - bulk)
    rng.shuffle(schedule)
    chats: dict[int, _Chat] = {}
    landmarks: dict = {"empty_conversation_id": empty}

    for step, index in enumerate(schedule):
        if index not in chats:
            chats[index] = history.new_chat()
            history.exchange(chats[index])
            if index < len(ODD_TITLES):
                writer.rename(chats[index].id, ODD_TITLES[index])
        else:
            history.exchange(chats[index])
        if step == len(schedule) // 3:
            landmarks |= _special_conversations(history)
        if step == len(schedule) // 2:
            chat = history.new_chat()
            history.send(chat, "Tell me a story about a lighthouse keeper.")
            landmarks["interrupted_message_id"] = history.reply(chat, finish=False)
            writer.recover_interrupted()  # Hearth was killed, then started again

    trashed = [chats[index].id for index in sorted(chats)[-2:]]
    writer.rename(trashed[0], "Delete me 🗑")
    for conversation_id in trashed:
        writer.delete(conversation_id)
    last = chats[schedule[-1]] if chats[schedule[-1]].id not in trashed else chats[0]
    history.send(last, "One more question before I go: " + _sentence(rng))
    landmarks["streaming_message_id"] = history.reply(last, finish=False)
    landmarks["trashed_conversation_ids"] = tuple(trashed)
    return landmarks


def _special_conversations(history: _History) -> dict:
    """The conversations that hold the hard cases, written mid-history."""
    rng, writer = history.rng, history.writer
    endings = history.new_chat(model=MODELS[1], system_prompt=SYSTEM_PROMPTS[4])
    history.send(endings, "Imported note: the system prompt of the original conversation.", role="system")
    for ending in [e[1:] for e in _ENDINGS]:
        history.send(endings, _text(rng, 1, 0))
        history.reply(endings, ending)
    history.send(endings, "An imported reply follows, without a stop reason.")
    imported = history.reply(endings, ("complete", "end_of_turn"))  # null_stop_reason() rewrites its stats

    edited = history.new_chat(model=MODELS[2])
    users = []
    for _ in range(6):
        users.append(history.send(edited, _text(rng, 2, 0.2)))
        history.reply(edited)
    writer.update_message_content(users[2], "Edited: " + _text(rng, 2, 0))  # ChatSession.edit
    writer.truncate_after(edited.id, users[2])
    edited.messages = 5  # users[2] is at position 4
    history.reply(edited)
    for _ in range(3):
        users.append(history.send(edited, _text(rng, 1, 0)))
        history.reply(edited)
    writer.truncate_after(edited.id, users[-1])  # ChatSession.regenerate
    edited.messages -= 1
    history.reply(edited)
    history.exchange(edited)

    huge = history.new_chat(model=MODELS[3])
    paste = "Please review this log:\n" + "\n".join(
        f"{line:06d} INFO worker-{line % 7} {_sentence(rng)}" for line in range(2600))
    huge_id = history.send(huge, paste[:200_000])
    history.reply(huge, ("complete", "length"))
    return {"endings_conversation_id": endings.id, "edited_conversation_id": edited.id, "huge_message_id": huge_id,
            "null_stop_reason_message_id": imported}


def _clock(rng: random.Random) -> Callable[[], str]:
    """Timestamps as utc_now() wrote them, moving forward by up to a few minutes a call."""
    moment = _START

    def now() -> str:
        nonlocal moment
        moment += timedelta(microseconds=rng.randrange(1, 300_000_000))
        return moment.isoformat(timespec="microseconds")

    return now


def build_v1_database(path: Path, conversations: int = 60, messages: int = 3000, seed: int = 0) -> V1Summary:
    """A new v1 database at path with about `messages` messages; the same seed builds the same
    file, timestamps included. Closed when it returns (no -wal file left beside it)."""
    path = Path(path)
    conn = create_v1_database(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        landmarks = write_v1_history(V1Writer(conn, _clock(random.Random(seed + 1))), random.Random(seed),
                                     conversations, messages)
        null_stop_reason(conn, landmarks["null_stop_reason_message_id"])
        conn.execute("COMMIT")
        return V1Summary(path, read_v1(conn), **landmarks)
    finally:
        conn.close()


def null_stop_reason(conn: sqlite3.Connection, message_id: int) -> None:
    """What an import of a file without a stop reason stored (exchange.parse through
    ReplyStats.from_dict): "stop_reason": null. No store call writes that into a reply it
    finished, so the build sets it on one reply directly."""
    stats_json = conn.execute("SELECT stats_json FROM messages WHERE id = ?", (message_id,)).fetchone()[0]
    conn.execute("UPDATE messages SET stats_json = ? WHERE id = ?",
                 (json.dumps({**json.loads(stats_json), "stop_reason": None}), message_id))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build a Hearth conversation database at schema version 1.")
    parser.add_argument("out", type=Path, help="the new database file (must not exist)")
    parser.add_argument("--messages", type=int, default=3000, help="about how many messages (default 3000)")
    parser.add_argument("--conversations", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--released-app", type=Path, metavar="DIR",
                        help=f"write through the released store in DIR/app ({RELEASED_COMMIT}'s tree) instead")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.released_app is not None:
        writer = ReleasedStoreWriter(args.out, args.released_app.resolve())
        landmarks = write_v1_history(writer, random.Random(args.seed), args.conversations, args.messages)
        writer.store.close()
        with closing(sqlite3.connect(args.out, isolation_level=None)) as conn:
            null_stop_reason(conn, landmarks["null_stop_reason_message_id"])
        print(f"{args.out}: written through the store in {args.released_app}")
        return 0
    summary = build_v1_database(args.out, args.conversations, args.messages, args.seed)
    print(f"{args.out}: {len(summary.conversations)} conversations, {summary.message_count} messages, "
          f"{args.out.stat().st_size / 2**20:.1f} MB, {time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
