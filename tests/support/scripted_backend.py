"""A Backend that answers from a script, at once: for the owner objects and the window's wiring.

It stands in for llama.cpp only where the engine's behaviour is not what is being tested
(ChatSession's saving and signals, ModelSession's load bookkeeping), so those tests run in
milliseconds with no model and no waits. Everything about generation itself is tested on the
real llama.cpp with the real Gemma model (tests/engine, tests/test_bridge.py, tests/ui).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from app.engine.backend import Backend, LoadCancelled, paced
from app.engine.gguf.modelfile import ModelFileError, ModelInfo
from app.engine.kv.cache import SavedStates
from app.engine.sampling import SamplingParams
from app.engine.templates.chat_template import TemplateError
from app.engine.types import DeviceInfo, LoadOptions, LocalModel, ModelDescription, ReplyStats, StopReason

HOLD_TIMEOUT_S = 10


@dataclass
class Script:
    """What the scripted backends say. `replies` are taken in turn (the last one repeats).

    `hold`: after the first piece, a reply waits for its cancel flag (a reply that streams until
    the user stops it). `fail_start`: the next reply raises this TemplateError message before
    its first piece. `broken`: file names that fail to load. `slow`: file names whose load
    waits for its cancel flag and then reports it cancelled. `dropped_messages`: what each
    reply says it left out to fit the context window (ReplyStats.dropped_messages).
    """

    info: ModelInfo
    replies: list[str] = field(default_factory=lambda: ["Hello there."])
    hold: bool = False
    fail_start: str | None = None
    broken: set[str] = field(default_factory=set)
    slow: set[str] = field(default_factory=set)
    dropped_messages: int = 0
    first_words: threading.Event = field(default_factory=threading.Event)
    requests: list[tuple[list[dict], SamplingParams]] = field(default_factory=list)
    loads: list[tuple[LocalModel, LoadOptions]] = field(default_factory=list)
    templates: list[str | None] = field(default_factory=list)
    conversations: list[int | None] = field(default_factory=list)  # each reply's conversation_id
    prepared: list[int | None] = field(default_factory=list)  # prepare calls: conversations opened
    forgotten: list[int] = field(default_factory=list)  # forget_state calls: conversations deleted
    states_changes: list[tuple[SavedStates, bool]] = field(default_factory=list)  # Settings' budget or Clear

    def open(self, source: LocalModel, options: LoadOptions, progress=None, cancel=None) -> Backend:
        """A BackendOpener."""
        self.loads.append((source, options))
        if source.path.name in self.broken:
            raise ModelFileError(f"{source.path.name} is truncated or corrupt")
        if source.path.name in self.slow:
            cancel.wait(HOLD_TIMEOUT_S)
            raise LoadCancelled(f"Loading {source.path.name} was cancelled.")
        device = DeviceInfo("CPU", 0, self.info.block_count + 1, options.n_threads or 2)
        return ScriptedBackend(self, ModelDescription(source, self.info, device, options.n_ctx or 4096, "fallback:gemma"))


class ScriptedBackend(Backend):
    def __init__(self, script: Script, description: ModelDescription):
        self._script = script
        self._description = description

    def describe(self) -> ModelDescription:
        return self._description

    def stream(self, messages, params, cancel: threading.Event, prompt_progress=None, conversation_id=None,
               tools=None, logprobs=None, text_interval_s=0.0):
        script = self._script
        script.requests.append((messages, params))
        script.conversations.append(conversation_id)
        if script.fail_start is not None:
            message, script.fail_start = script.fail_start, None
            raise TemplateError(message)
        reply = self._reply(script.replies.pop(0) if len(script.replies) > 1 else script.replies[0], cancel)
        return paced(reply, text_interval_s)  # as a Backend must

    def _reply(self, text: str, cancel: threading.Event):
        pieces = text.split(" ")
        stats = ReplyStats(prompt_tokens=10, stop_reason=StopReason.END_OF_TURN,
                           dropped_messages=self._script.dropped_messages)
        for index, piece in enumerate(pieces):
            if cancel.is_set():
                stats.stop_reason = StopReason.CANCELLED
                break
            yield piece if index == 0 else " " + piece
            self._script.first_words.set()
            stats.completion_tokens += 1
            if self._script.hold:
                cancel.wait(HOLD_TIMEOUT_S)
        yield stats

    def prepare(self, conversation_id: int | None) -> None:
        self._script.prepared.append(conversation_id)

    def forget_state(self, conversation_id: int) -> None:
        self._script.forgotten.append(conversation_id)

    def saved_states_changed(self, states: SavedStates, cleared: bool) -> None:
        self._script.states_changes.append((states, cleared))

    def set_template_override(self, source: str | None) -> str:
        self._script.templates.append(source)
        return "custom" if source else "fallback:gemma"

    def close(self) -> None:
        pass
