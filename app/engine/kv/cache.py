"""Saved KV state per conversation: reading a conversation back into the model only once.

On a CPU the slowest thing Hearth does is evaluate a long conversation's prompt (seconds for
a few thousand tokens), and every switch to another conversation, restart or model reload
used to pay it again. The engine saves the model's KV state for a conversation when the user
leaves it, and `StateCache` keeps those states: in memory for the most recently used
conversations, and on disk in a cache folder, each tier within a byte budget, least recently
used out first. Qt-free: the caller passes the folder (the app's is paths.cache_dir()).

A saved state is used only where it provably matches: the same `StateKey` (model file,
context length, cache type, offload, llama.cpp build) and tokens that begin the new prompt
exactly, so the caller need evaluate only the rest. A state for another key, or a damaged,
truncated or foreign file, is deleted the moment it is met, never trusted (kv/file.py).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from . import file as kv_file
from .file import DamagedState, KeyMismatch, Limits

log = logging.getLogger(__name__)

DEFAULT_MEMORY_BUDGET = 512 * 1024**2
DEFAULT_DISK_BUDGET = 4 * 1024**3
STALE_TEMP_SECONDS = 60.0  # a temporary file this old belongs to a writer that died
_SUFFIX = ".kvstate"
_STATE_NAME = re.compile(r"^conversation-(\d{1,19})\.kvstate$")
_TEMP_NAME = re.compile(r"^\.conversation-\d{1,19}\.kvstate\..*\.tmp$")


@dataclass(frozen=True)
class StateKey:
    """Everything besides the tokens that a KV state depends on; a state saved under one key
    is never used under another.

    `model_size` and `model_digest`: gguf/fingerprint.model_fingerprint of the GGUF file (not its
    path). `kv_type`: the cache's element types and layout as the engine set them (the K and V
    types, flash attention: it changes how V is laid out), e.g. "k=f16 v=f16 fa=off swa_full=0".
    `offloaded_layers`: layers computed on a GPU compute slightly different numbers than on
    the CPU, so a state is reused only with the same offload. `llama_version`: the llama.cpp
    and llama-cpp-python builds and llama.cpp's state format version.
    """

    model_size: int
    model_digest: str
    n_ctx: int
    kv_type: str
    offloaded_layers: int
    llama_version: str

    def encoded(self) -> bytes:
        """The key as stored in a file: compared byte for byte, never parsed."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True)
class SavedState:
    """A state that begins the prompt it was asked for: restore `payload`, then evaluate
    the prompt from `len(tokens)` on. `meta` is what the engine saved with it."""

    tokens: list[int]
    payload: bytes
    meta: bytes


@dataclass
class _Entry:
    key: bytes
    tokens: array
    meta: bytes
    payload: bytes

    @property
    def size(self) -> int:
        return len(self.payload) + len(self.meta) + self.tokens.itemsize * len(self.tokens)


@dataclass(frozen=True)
class SavedStates:
    """Where, and within what budgets, a StateCache keeps states: what the engine's process (#29)
    is told, to open a cache of its own on the same folder (files are replaced whole, so two
    processes share one folder safely)."""

    folder: Path
    memory_budget: int
    disk_budget: int

    def open(self) -> StateCache:
        return StateCache(self.folder, self.memory_budget, self.disk_budget)


class StateCache:
    """Saved KV states by conversation id, in memory and in `folder`, each within a budget.

    One state per conversation: saving replaces the one before. Every method takes a lock,
    so the engine thread that saves and restores and a GUI that clears or asks for the size
    can share one cache; another process (`hearth chat`) may use the same folder at once,
    since files are replaced whole and whatever fails on disk is logged and skipped.
    """

    def __init__(self, folder: Path, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                 disk_budget: int = DEFAULT_DISK_BUDGET):
        """Budgets in bytes (0: that tier keeps nothing). Raises OSError where the folder cannot
        be made; the engine then runs without saved states."""
        self.folder = Path(folder)
        self.memory_budget = memory_budget
        self._disk_budget = disk_budget
        self._memory: OrderedDict[int, _Entry] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._remove_stale_temporaries()

    # --- the engine's calls ------------------------------------------------------------------

    def get(self, key: StateKey, conversation_id: int, prompt_tokens: Sequence[int]) -> SavedState | None:
        """The conversation's saved state if it was saved under `key` and its tokens begin
        `prompt_tokens`; else None. A state under another key, or a damaged file, is deleted."""
        encoded = key.encoded()
        with self._lock:
            entry = self._memory.get(conversation_id)
            if entry is not None:
                if entry.key != encoded:
                    self._forget(conversation_id)
                    return None
                if not kv_file.is_prefix(entry.tokens, prompt_tokens):
                    return None
                self._memory.move_to_end(conversation_id)
                self._touch(self._path(conversation_id))
                return SavedState(entry.tokens.tolist(), entry.payload, entry.meta)
            return self._read_from_disk(encoded, key.n_ctx, conversation_id, prompt_tokens)

    def meta(self, key: StateKey, conversation_id: int) -> bytes | None:
        """The meta saved with the conversation's state under `key`, read and checked without
        the payload; None if there is none. The engine saves its token segments there, to
        tokenize the next prompt as the saved tokens were before it asks `get` for the state."""
        encoded = key.encoded()
        with self._lock:
            entry = self._memory.get(conversation_id)
            if entry is not None:
                if entry.key == encoded:
                    return entry.meta
                self._forget(conversation_id)
                return None
            state = self._read_file(encoded, key.n_ctx, conversation_id, with_payload=False)
            return None if state is None else state.meta

    def put(self, key: StateKey, conversation_id: int, tokens: Sequence[int], payload: bytes,
            meta: bytes = b"") -> None:
        """Keep `payload`, the KV state after evaluating exactly `tokens`, as the conversation's
        state, with `meta` (anything the engine needs to reuse it): in memory and on disk
        where it fits each budget. Never raises for the disk."""
        entry = _Entry(key.encoded(), array("i", tokens), bytes(meta), bytes(payload))
        with self._lock:
            self._memory.pop(conversation_id, None)
            if entry.size <= self.memory_budget:
                self._memory[conversation_id] = entry
                self._evict_memory()
            path = self._path(conversation_id)
            if kv_file.HEADER_BYTES + len(entry.key) + entry.size > self.disk_budget:
                self._delete(path)  # it holds an older state of this conversation
                return
            try:
                kv_file.write(path, entry.key, entry.tokens, entry.meta, entry.payload)
            except OSError as exc:
                log.warning("could not save the KV state of conversation %d: %s", conversation_id, exc)
                self._delete(path)
                return
            self._evict_disk(keep=path)
            self._remove_stale_temporaries()

    def discard(self, conversation_id: int) -> None:
        """Forget the conversation's state (the conversation was deleted)."""
        with self._lock:
            self._forget(conversation_id)

    # --- the settings' calls -----------------------------------------------------------------

    def place(self) -> SavedStates:
        return SavedStates(self.folder, self.memory_budget, self.disk_budget)

    def follow(self, place: SavedStates, cleared: bool) -> None:
        """Take the budgets of another cache over the same folder (the window's, when the user
        changed them), and forget what is held in memory if it was cleared."""
        self.memory_budget = place.memory_budget
        self.disk_budget = place.disk_budget
        if cleared:
            self.clear()

    def clear(self) -> None:
        """Forget every state, in memory and on disk (temporary files included)."""
        with self._lock:
            self._memory.clear()
            for path, _ in self._files(include_temporary=True):
                self._delete(path)

    @property
    def disk_budget(self) -> int:
        return self._disk_budget

    @disk_budget.setter
    def disk_budget(self, budget: int) -> None:
        """A new budget holds at once: the least recently used files beyond it are deleted."""
        with self._lock:
            self._disk_budget = budget
            self._evict_disk(keep=None)

    def usage(self) -> tuple[int, int]:
        """Bytes the saved states take on disk, and how many conversations they are for
        (temporary files are counted in the bytes only). Reads only the folder."""
        files = self._files(include_temporary=True)
        return sum(status.st_size for _, status in files), sum(bool(_STATE_NAME.match(path.name)) for path, _ in files)

    def size_on_disk(self) -> int:
        """Bytes the cache folder's state files take (temporary files included)."""
        return self.usage()[0]

    def memory_size(self) -> int:
        """Bytes the memory tier holds (payloads, metas and tokens)."""
        with self._lock:
            return sum(entry.size for entry in self._memory.values())

    # --- inside the lock ---------------------------------------------------------------------

    def _read_from_disk(self, key: bytes, n_ctx: int, conversation_id: int,
                        prompt_tokens: Sequence[int]) -> SavedState | None:
        state = self._read_file(key, n_ctx, conversation_id, with_payload=True)
        if state is None or not kv_file.is_prefix(state.tokens, prompt_tokens):
            return None  # an intact state that does not begin this prompt may suit the next
        entry = _Entry(state.key, state.tokens, state.meta, state.payload)
        if entry.size <= self.memory_budget:
            self._memory[conversation_id] = entry
            self._evict_memory()
        self._touch(self._path(conversation_id))
        return SavedState(state.tokens.tolist(), state.payload, state.meta)

    def _read_file(self, key: bytes, n_ctx: int, conversation_id: int, with_payload: bool) -> kv_file.StateFile | None:
        """The conversation's file, checked; None (the file deleted) if it is another key's or damaged."""
        path = self._path(conversation_id)
        limits = Limits(max_tokens=n_ctx, max_bytes=self.disk_budget)
        try:
            return kv_file.read(path, limits, expected_key=key, with_payload=with_payload)
        except FileNotFoundError:
            return None
        except KeyMismatch:
            self._delete(path)
            return None
        except (DamagedState, OSError) as exc:
            log.warning("deleting the saved KV state of conversation %d: %s", conversation_id, exc)
            self._delete(path)
            return None

    def _forget(self, conversation_id: int) -> None:
        self._memory.pop(conversation_id, None)
        self._delete(self._path(conversation_id))

    def _evict_memory(self) -> None:
        total = sum(entry.size for entry in self._memory.values())
        while total > self.memory_budget and self._memory:
            _, evicted = self._memory.popitem(last=False)  # it is on disk already, where it fits
            total -= evicted.size

    def _evict_disk(self, keep: Path | None) -> None:
        """Delete the least recently used files until the folder is within its budget (`keep`,
        the one just written, last of all: it is within the budget by itself)."""
        files = sorted(self._files(include_temporary=False), key=lambda item: (item[0] == keep, item[1].st_mtime))
        total = sum(status.st_size for _, status in files)
        for path, status in files:
            if total <= self.disk_budget or path == keep:
                break
            self._delete(path)
            total -= status.st_size

    def _remove_stale_temporaries(self) -> None:
        now = time.time()
        for path, status in self._files(include_temporary=True):
            if _TEMP_NAME.match(path.name) and now - status.st_mtime > STALE_TEMP_SECONDS:
                self._delete(path)

    def _files(self, include_temporary: bool) -> list[tuple[Path, os.stat_result]]:
        """The cache's own files in the folder (by name; anything else there is left alone)."""
        found = []
        try:
            names = os.listdir(self.folder)
        except OSError as exc:
            log.warning("could not list the KV state folder %s: %s", self.folder, exc)
            return []
        for name in names:
            if not (_STATE_NAME.match(name) or (include_temporary and _TEMP_NAME.match(name))):
                continue
            path = self.folder / name
            try:
                found.append((path, path.lstat()))
            except OSError:
                continue  # removed meanwhile by another process
        return found

    def _path(self, conversation_id: int) -> Path:
        return self.folder / f"conversation-{int(conversation_id)}{_SUFFIX}"

    @staticmethod
    def _touch(path: Path) -> None:
        """Mark a file used now: the disk tier evicts by this time (atime is often not kept)."""
        try:
            os.utime(path)
        except OSError:
            pass  # not on disk (over the budget, or a failed write): nothing to mark

    @staticmethod
    def _delete(path: Path) -> None:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:  # Windows refuses while another process reads it
            log.warning("could not delete %s: %s", path, exc)
