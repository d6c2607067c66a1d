"""Copy the KV state of the engine's one sequence out of a llama.cpp context and back.

The primitive is llama.cpp's sequence state (`llama_state_seq_get_data` / `set_data`): the
cache cells of one sequence, without the logits. Measured on Gemma 3 270M with 1,520 tokens
(bench/kv_state.py): 8.3 MB per 1,000 tokens, copied out in 16 ms and back in 2 ms.
`Llama.save_state` is the wrong tool: it copies the whole context state (all cells, 2.3x
larger here) and a numpy copy of the logits buffer (n_batch x vocabulary: 537 MB for Gemma's
262k vocabulary), over a second.

Sliding-window models (Gemma 3, and any model llama.cpp gives an iSWA cache): llama.cpp saves
only the cells of the SWA layers inside the window (the last n_swa positions), and the
engine's window-sized cache (memory_plan.WHOLE_WINDOW_CACHE) holds only the last window +
ubatch. A restored state therefore extends exactly (greedy output byte-identical to a cold
evaluation, measured) but cannot be cut back by more than one token: the re-evaluated tokens
would miss the positions the window needs. Hence `can_reuse`, llama.cpp's own server check:
where the cache no longer holds what the first new position attends to, the caller puts back
a checkpoint's window (window_checkpoints.py) or evaluates everything again. Recurrent and
hybrid models (llama.cpp's other memories) save their state the same way and fall back the
same way.
"""

from __future__ import annotations

import ctypes

import llama_cpp
from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c

SEQ = 0  # the engine's only sequence

# A ggml_type's name by number; llama_flash_attn_type's by number.
_GGML_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 30: "bf16"}
_FLASH_ATTN = {llama_c.LLAMA_FLASH_ATTN_TYPE_AUTO: "auto", llama_c.LLAMA_FLASH_ATTN_TYPE_DISABLED: "off",
               llama_c.LLAMA_FLASH_ATTN_TYPE_ENABLED: "on"}


def build_identity() -> str:
    """The llama.cpp build, for StateKey.llama_version: a state is only read by the build that
    wrote it (llama.cpp also checks the layout as it reads, and refuses a mismatch)."""
    return (f"llama-cpp-python {llama_cpp.__version__}; llama.cpp {llama_c.llama_version().decode(errors='replace')}; "
            f"state {llama_c.LLAMA_STATE_SEQ_VERSION}/{llama_c.LLAMA_SESSION_VERSION}")


def cache_layout(llm: Llama) -> str:
    """How the context lays out its KV cache, for StateKey.kv_type: the K and V element types,
    whether flash attention is on (without it llama.cpp stores V transposed) and whether the
    sliding-window cache is whole. The Engine writes the flash attention llama.cpp applied into
    `context_params` (load_params.record_applied); "fa=auto" is left only where llama.cpp did
    not say what Auto chose."""
    params = llm.context_params
    k_type = _GGML_TYPES.get(params.type_k, str(params.type_k))
    v_type = _GGML_TYPES.get(params.type_v, str(params.type_v))
    flash_attn = _FLASH_ATTN.get(params.flash_attn_type, str(params.flash_attn_type))
    return f"k={k_type} v={v_type} fa={flash_attn} swa_full={int(params.swa_full)}"


def save(llm: Llama) -> bytes:
    """The sequence's KV state as bytes (its cells; not the logits)."""
    ctx = llm._ctx.ctx
    size = llama_c.llama_state_seq_get_size(ctx, SEQ)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_c.llama_state_seq_get_data(ctx, buffer, size, SEQ)
    if written == 0 or written > size:
        raise RuntimeError(f"llama.cpp wrote {written} bytes of sequence state into {size}")
    return bytes(memoryview(buffer)[:written])


def restore(llm: Llama, tokens: list[int], payload: bytes) -> bool:
    """Put a saved state into the context as its whole KV cache, the tokens it holds as the
    context's; False (and an empty cache) where llama.cpp refuses the payload."""
    llm.reset()
    llm._ctx.kv_cache_seq_rm(-1, 0, -1)
    if not tokens or len(tokens) > llm.n_ctx():
        return False
    source = ctypes.cast(ctypes.c_char_p(payload), ctypes.POINTER(ctypes.c_uint8))  # read in place, not copied
    if llama_c.llama_state_seq_set_data(llm._ctx.ctx, source, len(payload), SEQ) != len(payload):
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)  # llama.cpp clears what it read on failure; be sure
        return False
    llm.input_ids[: len(tokens)] = tokens
    llm.n_tokens = len(tokens)
    return True


def can_reuse(llm: Llama, n_past: int) -> bool:
    """Whether the cache still holds every position that position `n_past` attends to, so the
    first `n_past` cached tokens can be kept and evaluation can start there.

    Without a sliding window that is every earlier position; with one of n_swa, those after
    n_past - n_swa (llama.cpp masks positions n_swa or more behind). A restored SWA state starts
    at its last position - n_swa + 1, and a checkpoint's window ends at its prompt's end. The
    positions held are one run (llama.cpp's apply_ubatch keeps [pos_min, pos_max] whole).
    """
    if n_past <= 0:
        return True
    memory = llama_c.llama_get_memory(llm._ctx.ctx)
    pos_min = llama_c.llama_memory_seq_pos_min(memory, SEQ)
    if pos_min < 0 or llama_c.llama_memory_seq_pos_max(memory, SEQ) < n_past - 1:
        return False  # the sequence is empty, or ends before the positions kept
    n_swa = llama_c.llama_model_n_swa(llm._model.model)
    return pos_min <= (max(0, n_past - n_swa + 1) if n_swa > 0 else 0)
