"""An embedding GGUF run by llama.cpp: texts in, unit vectors out (the Embedder protocol,
engine/embedding/types.py).

A second, small model beside the chat model, on the CPU (n_gpu_layers=0): the chat model's
memory plan owns the GPU, and a 22M-parameter encoder such as all-MiniLM-L6-v2 embeds a 256-token
chunk in about a tenth of a second on two CPU cores.

Batching: llama-cpp-python 0.3.36's `Llama.embed` packs several sequences into one decode too,
but it cuts a long text at n_batch tokens (dropping its closing [SEP]) and copies every vector
through Python lists. Here texts are packed the same way (whole sequences, one sequence id
each, until the batch's tokens or sequences run out: a non-causal model must see a whole text in
one micro-batch, so n_batch = n_ubatch), and each pooled vector is read straight into numpy.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c

from ..embedding.types import model_name
from ..gguf.modelfile import ModelFileError
from . import log_shim as llama_log
from .devices import cpu_threads

log = logging.getLogger(__name__)

# One decode holds at most the model's context in tokens (512 for BERT): both batch sizes are
# asked large and llama-cpp-python caps them at the context. A larger context would fit more
# texts per decode but costs more than it saves: llama.cpp computes a batch's attention over all
# its tokens (masked between sequences), which grows with the batch squared. Measured with
# all-MiniLM-L6-v2, 256-token texts, 2 cores: 512-token batches (2 texts each) 8.2 texts/s,
# 1024 tokens 4.5, 2048 tokens 2.9.
MAX_BATCH_TOKENS = 1 << 16  # llama-cpp-python caps n_batch and n_ubatch at the context


class LlamaEmbedder:
    """One embedding model loaded by llama.cpp. Not thread-safe: one thread drives it.

    `max_tokens` is the model's context (its position embeddings: 512 for BERT models). A text
    longer than that is truncated: its first max_tokens - 1 tokens and the closing special token
    ([SEP]) are embedded, as a Hugging Face tokenizer truncates; chunking keeps under it.
    """

    def __init__(self, path: Path, n_threads: int | None = None):
        self.path = Path(path)
        self.name = model_name(self.path)
        llama_log.install()
        self._llm = self._load(n_threads)
        self.dims: int = self._llm.n_embd()
        self.max_tokens: int = self._llm.n_ctx()
        self._vocab = self._llm._model.vocab
        self._add_eos = bool(llama_c.llama_vocab_get_add_eos(self._vocab)
                             or llama_c.llama_vocab_get_add_sep(self._vocab))
        self._n_batch = self._llm.n_batch
        self._n_seq_max = int(self._llm.context_params.n_seq_max)

    def _load(self, n_threads: int | None) -> Llama:
        # The context is the model's own (n_ctx=0: its training context); n_batch = n_ubatch so
        # a whole text is one micro-batch, as a non-causal model needs.
        threads = n_threads or cpu_threads().prompt
        # verbose=True, its prints sent to the log: verbose=False makes llama-cpp-python os.dup()
        # stdout, which a windowed app does not have (generator.py does the same).
        chatter = llama_log.LogWriter(logging.getLogger("llama_cpp.python"))
        try:
            with contextlib.redirect_stderr(chatter), contextlib.redirect_stdout(chatter):
                llm = Llama(
                    model_path=str(self.path),
                    embedding=True,
                    n_ctx=0,
                    n_batch=MAX_BATCH_TOKENS,
                    n_ubatch=MAX_BATCH_TOKENS,
                    n_gpu_layers=0,
                    n_threads=threads,
                    n_threads_batch=threads,
                    # UNSPECIFIED: the pooling the GGUF says (MEAN for sentence-transformers models).
                    pooling_type=llama_c.LLAMA_POOLING_TYPE_UNSPECIFIED,
                    verbose=True,
                )
        except ValueError as exc:
            raise ModelFileError(f"llama.cpp could not load {self.path.name}: {exc}. See the log for details.") \
                from None
        if llm.pooling_type() == llama_c.LLAMA_POOLING_TYPE_NONE:
            llm.close()
            raise ModelFileError(f"{self.path.name} does not pool its tokens into one vector: "
                                 "it is not a sentence-embedding model.")
        log.info("loaded embedding model %s: n_ctx=%d n_embd=%d pooling=%d threads=%d", self.path, llm.n_ctx(),
                 llm.n_embd(), llm.pooling_type(), threads)
        return llm

    # --- tokens ----------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _tokens(self, text: str) -> list[int]:
        """The tokens the model reads for `text`, its special tokens ([CLS] … [SEP]) included,
        truncated to max_tokens with the closing special token kept."""
        tokens = self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        if len(tokens) > self.max_tokens:
            tokens = tokens[: self.max_tokens - 1] + tokens[-1:] if self._add_eos else tokens[: self.max_tokens]
        return tokens

    # --- vectors ---------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        group: list[tuple[int, list[int]]] = []
        group_tokens = 0
        for index, text in enumerate(texts):
            tokens = self._tokens(text)
            if group and (group_tokens + len(tokens) > self._n_batch or len(group) >= self._n_seq_max):
                self._decode(group, out)
                group, group_tokens = [], 0
            group.append((index, tokens))
            group_tokens += len(tokens)
        if group:
            self._decode(group, out)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _decode(self, group: list[tuple[int, list[int]]], out: np.ndarray) -> None:
        """One decode of several whole sequences; each pooled vector into its row of `out`."""
        batch, ctx = self._llm._batch, self._llm._ctx
        batch.reset()
        for seq_id, (_, tokens) in enumerate(group):
            batch.add_sequence(tokens, seq_id, True)  # every token an output: llama.cpp pools them
        ctx.kv_cache_clear()
        ctx.decode(batch)
        for seq_id, (index, _) in enumerate(group):
            pointer = llama_c.llama_get_embeddings_seq(ctx.ctx, seq_id)
            if not pointer:
                raise RuntimeError(f"llama.cpp returned no embedding for sequence {seq_id}")
            out[index] = np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)),
                                               shape=(self.dims,))
        batch.reset()

    def close(self) -> None:
        self._llm.close()
