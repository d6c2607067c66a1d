"""Saved KV state per conversation: the engine saves a conversation's state when the user
leaves it and restores it when they come back, so that their next Send evaluates only the new
turn (engine/kv/cache.py keeps the states, kv_seq.py moves them in and out of llama.cpp).

A state is saved as the conversation's next prompt will begin: its last exchange rendered as a
finished turn. So the keeper remembers, as each reply ends, the messages it answered and its
text, before the reply's ReplyStats is passed on: a consumer stops reading there
(Backend.stream), and code after that yield never runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from llama_cpp import Llama

from ..gguf.fingerprint import NoFingerprint, model_fingerprint
from ..kv import segments as kv_segments
from ..kv.cache import StateCache, StateKey
from ..kv.prefix_reuse import PrefixReuse
from ..templates.chat_template import TemplateError
from ..types import ReplyStats
from . import kv_seq

RenderFinished = Callable[[list[dict]], str]  # messages -> the text of the finished conversation

log = logging.getLogger(__name__)


class StateKeeper:
    """The conversation whose tokens the KV cache holds, whether its state is saved as it is
    now, whether to look for its saved state at the next prompt, and its last reply's fitted
    messages and text (to save the conversation as the next prompt will render it).

    `render_finished(messages)`: the messages rendered by the engine's current template as a
    finished conversation (no generation prompt). `evaluate(tokens, cancel)`: the engine's
    prompt evaluation, which brings the KV cache to `tokens`. `projector`: the model's image
    projector, part of the key, since the images in a state were evaluated through it.
    """

    def __init__(self, llm: Llama, states: StateCache | None, prefix: PrefixReuse, model_path: Path, gpu_layers: int,
                 evaluate: Callable[[list[int], threading.Event], int], projector: Path | None = None):
        self._llm = llm
        self._projector = projector
        self._states = states
        self._prefix = prefix
        self._model_path = model_path
        self._gpu_layers = gpu_layers
        self._evaluate = evaluate
        self._state_key: StateKey | None = None
        self._owner: int | None = None
        self._owner_saved = True
        self._restore = False
        # the last reply's messages, its text, and how its conversation renders finished
        self._last_exchange: tuple[list[dict], str, RenderFinished] | None = None

    def switch_to(self, conversation_id: int | None) -> None:
        """Before a reply in `conversation_id`: keep the state of the conversation the cache
        holds if that is another, and take up the saved segments of this one, to tokenize its
        prompt as its saved tokens were (`restored` then restores the state itself)."""
        if conversation_id == self._owner:
            return
        self.keep_state()
        self._owner, self._owner_saved, self._restore, self._last_exchange = conversation_id, True, False, None
        key = self.key()
        if conversation_id is None or key is None:
            return
        try:
            saved = kv_segments.decode(self._states.meta(key, conversation_id) or b"")
        except ValueError:
            return  # none saved (or not readable): the prompt is evaluated
        self._prefix.segments, self._restore = saved, True

    def prepare(self, conversation_id: int | None) -> None:
        """The user opened `conversation_id`: keep the state of the conversation the cache holds,
        and put this one's saved state into the context now, while the user reads and types,
        so that their next Send evaluates only the new turn. The saved tokens are its segments'
        (kv_segments), so the state is read with them as the prompt it must begin."""
        self.switch_to(conversation_id)
        if not self._restore:
            return
        self._restore = False
        saved = self._states.get(self.key(), conversation_id, self._prefix.tokens)
        if saved is None or not kv_seq.restore(self._llm, saved.tokens, saved.payload):
            self._llm.reset()  # the next prompt is evaluated whole

    def restored(self, prompt: list[int], common: int) -> int:
        """How many of the prompt's tokens the KV cache holds, `common` of them before: once the
        conversation was switched to, its saved state replaces them if it begins the prompt
        with more (0: the restore failed, and the cache holds nothing usable)."""
        if not self._restore:
            return common
        self._restore = False
        saved = self._states.get(self.key(), self._owner, prompt)
        if saved is not None and len(saved.tokens) > common:
            return len(saved.tokens) if kv_seq.restore(self._llm, saved.tokens, saved.payload) else 0
        return common

    def replying(self, messages: list[dict], events: Iterator[str | ReplyStats],
                 render_finished: RenderFinished) -> Iterator[str | ReplyStats]:
        """A reply to `messages` in the conversation switched to begins: its state is no longer
        saved as it is. The events, passed on, keep the exchange for keep_state as it ends;
        `render_finished` writes the conversation as a finished one (with the reply's tools,
        where it has them: the saved state must begin the next prompt exactly)."""
        self._owner_saved, self._last_exchange = False, None
        return self._remembering(messages, events, render_finished)

    def _remembering(self, messages: list[dict], events: Iterator[str | ReplyStats],
                     render_finished: RenderFinished) -> Iterator[str | ReplyStats]:
        """The events, passed on; the exchange kept for keep_state as the reply ends: before its
        ReplyStats is passed on, since a consumer stops there (Backend.stream)."""
        shown: list[str] = []
        for event in events:
            if isinstance(event, ReplyStats):
                self._last_exchange = (messages, "".join(shown), render_finished)
            elif isinstance(event, str):  # not a token's log-probability
                shown.append(event)
            yield event

    def keep_state(self) -> None:
        """Save the KV state of the conversation the cache holds, as its next prompt will begin:
        the last exchange rendered as a finished turn (its closing markers evaluated, the reply
        as the template writes it back). Called when the user leaves the conversation
        (`prepare` for another, closing the model: a load, quitting) and before a reply in
        another conversation, or a served job. Costs tens of milliseconds for a few
        thousand tokens of a small model, on the engine thread."""
        key = self.key()
        if self._owner_saved or self._owner is None or key is None or self._last_exchange is None:
            return
        self._owner_saved = True
        messages, reply, render_finished = self._last_exchange
        try:
            text = render_finished(messages + [{"role": "assistant", "content": reply}])
        except TemplateError:
            return  # a template that will not end on a reply: nothing to save
        tokens, segments = self._prefix.tokens_for(text)
        if not tokens or len(tokens) >= self._llm.n_ctx():
            return
        try:
            self._evaluate(tokens, threading.Event())
            payload = kv_seq.save(self._llm)
        except Exception:  # llama.cpp failed: the state is not saved, the next prompt is evaluated
            log.exception("could not save the KV state of conversation %d", self._owner)
            self._llm.reset()
            return
        self._prefix.segments = segments
        self._states.put(key, self._owner, tokens, payload, kv_segments.encode(segments))

    def forget_state(self, conversation_id: int) -> None:
        """The conversation was deleted: its saved state goes, and the state the cache holds
        now is not saved for it when the user moves on."""
        if conversation_id == self._owner:
            self._owner, self._owner_saved, self._last_exchange = None, True, None
        if self._states is not None:
            self._states.discard(conversation_id)

    def key(self) -> StateKey | None:
        """What the saved states of this engine are keyed by (None: no cache, or the file cannot
        be fingerprinted); computed when first needed (it reads the model's header again)."""
        if self._states is None:
            return None
        if self._state_key is None:
            try:
                fingerprint = model_fingerprint(self._model_path)
                layout = kv_seq.cache_layout(self._llm)
                if self._projector is not None:
                    projector = model_fingerprint(self._projector)
                    layout += f" mmproj={projector.size}:{projector.digest}"
            except NoFingerprint as exc:
                log.warning("saved KV state is off for this model: %s", exc)
                self._states = None
                return None
            self._state_key = StateKey(fingerprint.size, fingerprint.digest, self._llm.n_ctx(),
                                       layout, self._gpu_layers, kv_seq.build_identity())
        return self._state_key
