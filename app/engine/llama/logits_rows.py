"""A context's logits rows as numpy arrays, each made once per row address rather than once per
token.

`np.ctypeslib.as_array` builds a ctypes array type and a numpy array at every call: about 50 µs
right after a forward pass, when the interpreter's caches are cold (#31 measured the decode
loop's gap between forward passes, where every microsecond is the model's time). A row's address
stays the same while llama.cpp keeps its output buffer, so the view made for an address serves
every token that reads it. The view for an address is handed out only when `llama_get_logits_ith`
has just returned that address, and a row is never kept across a decode (the sampler and the
logprob reader read theirs before the next one), so a view never reads memory llama.cpp has let
go: a buffer it grows gives new addresses, or the same one with a whole row behind it again.
"""

from __future__ import annotations

import ctypes

import numpy as np
from llama_cpp import llama_cpp as llama_c

MAX_VIEWS = 1024  # addresses kept (a drafted batch has a row each); all forgotten at once past it


class LogitsRows:
    """The logits rows of one context's batches, as writable float32 arrays of the vocabulary's
    length (the sampler biases a row in place and puts it back)."""

    def __init__(self, ctx, n_vocab: int):
        """`ctx`: a llama_cpp LlamaContext."""
        self._ctx = ctx
        self._row_type = ctypes.c_float * n_vocab
        self._views: dict[int, np.ndarray] = {}

    def row(self, index: int) -> np.ndarray:
        """Batch row `index`'s logits (-1: the last row), as llama.cpp holds them now."""
        address = ctypes.cast(llama_c.llama_get_logits_ith(self._ctx.ctx, index), ctypes.c_void_p).value
        if not address:
            raise RuntimeError(f"llama.cpp holds no logits for batch row {index}")
        view = self._views.get(address)
        if view is None:
            if len(self._views) >= MAX_VIEWS:
                self._views.clear()
            view = self._views[address] = np.frombuffer(self._row_type.from_address(address), dtype=np.float32)
        return view
