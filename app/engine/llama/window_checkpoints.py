"""Copies of a sliding-window cache's window, taken as each reply begins, so that a prompt which
cuts the cache back further than the window still holds starts from a recent prompt's end, not
from its first token.

Why: the engine gives sliding-window models (Gemma 3) llama.cpp's window-sized cache for their
sliding layers (memory_plan.WHOLE_WINDOW_CACHE says why: a whole one made every such layer attend
over the whole conversation, 20% slower decoding at 3,000 tokens). Such a cache keeps only the
last window + ubatch positions: after a reply longer than that, a Regenerate (the same prompt
again), an edit of the last message, or a template that writes the last reply back differently
cuts the cache back to positions whose window is gone (kv_seq.can_reuse says no). llama-server
keeps "context checkpoints" for this; these are the same thing for one sequence: the sliding
layers' cells of the window at a prompt's end (`llama_state_seq_get_data_ext` with
PARTIAL_ONLY), put back where a later prompt begins with that prompt; the full layers still hold
every position, and only the tokens after the checkpoint are evaluated again.

A checkpoint of a prompt of N tokens holds the sliding layers' positions N - n_swa to N - 1, so
it serves a prompt that keeps N or N - 1 of them (one is evaluated again for fresh logits).
Taken only where positions can leave the cache (memory_plan.keeps_checkpoints): a causal window
smaller than the context. It costs a copy of the window once per reply, between its first token
and its second (about 2 ms for Gemma 3 270M's 7.5 MB).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c

from ..memory_plan import WINDOW_CHECKPOINTS, keeps_checkpoints
from . import kv_seq

_PARTIAL = llama_c.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY  # the sliding-window layers' cells only


@dataclass(frozen=True)
class Checkpoint:
    tokens: tuple[int, ...]  # the prompt the cache held
    payload: ctypes.Array  # its sliding layers' window, as llama.cpp writes it
    size: int  # bytes of it written


class WindowCheckpoints:
    """The last WINDOW_CHECKPOINTS prompts' windows, each a prefix of the latest prompt (a
    checkpoint is only of use while the full layers still hold its tokens). Does nothing for a
    model whose cache nothing leaves (no window, a whole one, a context within the window)."""

    def __init__(self, llm: Llama):
        self._llm = llm
        architecture = llm.metadata.get("general.architecture", "")
        params = llm.context_params
        self.applies = (keeps_checkpoints(architecture, llama_c.llama_model_n_swa(llm._model.model), llm.n_ctx(),
                                          params.n_ubatch, params.swa_full)
                        and not (llm._is_recurrent or llm._is_hybrid))
        self._kept: list[Checkpoint] = []

    def take(self, prompt: list[int]) -> None:
        """The cache holds exactly `prompt`, and a reply is about to be decoded after it."""
        if not self.applies or not prompt:
            return
        tokens = tuple(prompt)
        # Only checkpoints that begin this prompt stay of use; the oldest goes before the new
        # one is made, so no more than WINDOW_CHECKPOINTS are ever held (memory_plan plans them).
        self._kept = [kept for kept in self._kept
                      if len(kept.tokens) < len(tokens) and tokens[:len(kept.tokens)] == kept.tokens]
        del self._kept[:max(0, len(self._kept) - (WINDOW_CHECKPOINTS - 1))]
        ctx = self._llm._ctx.ctx
        size = llama_c.llama_state_seq_get_size_ext(ctx, kv_seq.SEQ, _PARTIAL)
        payload = (ctypes.c_uint8 * size)()
        written = llama_c.llama_state_seq_get_data_ext(ctx, payload, size, kv_seq.SEQ, _PARTIAL)
        if 0 < written <= size:  # else nothing kept: a later cut-back evaluates the prompt again
            self._kept.append(Checkpoint(tokens, payload, written))

    def reusable(self, prompt: list[int], common: int) -> int:
        """How many of the `common` tokens the cache holds of `prompt` it can keep: all of them
        where it still holds what the next position attends to (kv_seq.can_reuse); else as many
        as the latest checkpoint that serves the prompt allows, its window put back; else 0
        (the prompt is evaluated whole). A restored state (kv_seq.restore) holds only its
        window, and a window-sized cache its last window + ubatch positions."""
        if common <= 0 or kv_seq.can_reuse(self._llm, common):
            return common
        for kept in reversed(self._kept):
            n = len(kept.tokens)
            if n - 1 <= common and kept.tokens == tuple(prompt[:n]):
                read = llama_c.llama_state_seq_set_data_ext(self._llm._ctx.ctx, kept.payload, kept.size,
                                                            kv_seq.SEQ, _PARTIAL)
                if read != kept.size:
                    self._kept.clear()
                    return 0  # llama.cpp cleared the window it could not read: evaluate it all
                keep = min(common, n)  # not past the window's end
                return keep if kv_seq.can_reuse(self._llm, keep) else 0
        return 0
