"""A model's projector (mmproj GGUF), loaded through llama.cpp's multimodal library (libmtmd):
it turns an image into the positions it takes in the prompt, and evaluates them into the KV cache.

Hearth keeps its own decode loop rather than llama-cpp-python's MTMDChatHandler, which clears the
KV cache on every call: here an image is part of the prompt's token list, so prefix reuse, saved
states and drafting work for an image conversation as for any other (an image already in the
cache is not encoded again).

How an image sits in the token list: libmtmd tokenizes it (the projector's own wrapping text, such
as Gemma 3's `<start_of_image>` … `<end_of_image>`, and one or more image chunks); the wrapping
text is ordinary tokens, and each image chunk is a run of one negative id (`position_id`), as long
as the chunk's positions, that no token has. The ids are made from the image's digest, so the same
image in the same place matches the KV cache's list, within this process and in a state saved by
another; a different image, or the same image elsewhere, differs at its first position. The
engine's evaluation sends runs of real tokens to llama_decode and each image run to libmtmd
(`evaluate`).

M-RoPE projectors (Qwen2-VL, Qwen2.5-VL) place an image's tokens on fewer positions than it has
tokens, so the list's length would no longer be the positions used: they are refused at load with
a message saying so, rather than decoded wrong.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path

from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c
from llama_cpp import mtmd_cpp as mtmd

from ...images.image import Image, ImageError
from ...images.pixels import rgb_pixels
from ..gguf.modelfile import ModelFileError
from . import log_shim
from .kv_seq import SEQ

log = logging.getLogger(__name__)

KEPT_ENTRIES = 256  # images whose entries are remembered between prompts (a few ints each)
MAX_CHUNKS = 64  # image chunks one image may become (a tiling projector's slices and overview)


def is_image_position(token: int) -> bool:
    """Whether an entry of the engine's token list is an image's position rather than a token."""
    return token < 0


def evaluation_runs(prompt: list[int], start: int, n_batch: int) -> Iterator[tuple[int, int]]:
    """The prompt from `start` as it is evaluated: each image run whole, text in batches of at most
    `n_batch` that never cross an image."""
    while start < len(prompt):
        end = start + 1
        if is_image_position(prompt[start]):
            while end < len(prompt) and prompt[end] == prompt[start]:
                end += 1
        else:
            while end < len(prompt) and end - start < n_batch and not is_image_position(prompt[end]):
                end += 1
        yield start, end
        start = end


def position_id(digest: str, chunk: int) -> int:
    """The id of every position of an image's `chunk`-th chunk: negative, 30 bits of a hash of
    the image and the chunk, never -1 (llama.cpp's "no token")."""
    mixed = hashlib.sha256(f"{digest}:{chunk}".encode()).digest()
    return -2 - (int.from_bytes(mixed[:4], "little") & 0x3FFF_FFFF)


class Vision:
    """The projector beside a loaded model. Not thread-safe: the engine's thread drives it.

    What it keeps: each recent image's entries (cheap: a list of ints), and, for the prompt being
    made, the chunks of the images it had to tokenize (libmtmd's preprocessed pixels, megabytes
    each), freed once evaluated or when the next prompt begins. An image whose entries came from
    elsewhere (the last prompt's reused tokens, a saved state's) and must be evaluated after all
    (the cache no longer holds it) is tokenized again then, from the prompt's own images
    (`begin`), so a run id is always evaluable while its image is in the request.
    """

    def __init__(self, llm: Llama, projector: Path, use_gpu: bool, threads: int):
        log_shim.install_multimodal()
        params = mtmd.mtmd_context_params_default()
        params.use_gpu = use_gpu
        params.n_threads = threads
        params.print_timings = False
        self._llm = llm
        self.path = projector
        self._ctx = mtmd.mtmd_init_from_file(str(projector).encode(), llm._model.model, params)
        if not self._ctx:
            raise ModelFileError(f"llama.cpp could not load the projector {projector.name}. See the log for details.")
        if not mtmd.mtmd_support_vision(self._ctx):
            self.close()
            raise ModelFileError(f"{projector.name} is not an image projector (it reads no images).")
        if mtmd.mtmd_decode_use_mrope(self._ctx):
            self.close()
            raise ModelFileError(
                f"{projector.name} places images with M-RoPE positions (Qwen2-VL's kind), which Hearth's "
                "decode loop does not handle yet. Load the model without it to chat in text.")
        self._marker = mtmd.mtmd_default_marker()
        self._entries: OrderedDict[str, list[int]] = OrderedDict()
        self._pending: dict[int, int] = {}  # run id -> an mtmd_input_chunk (owned: a copy), not yet evaluated
        self._images: tuple[Image, ...] = ()  # the prompt's images
        self.encode_seconds: list[float] = []  # each image evaluated for the prompt being made

    def begin(self, images: Iterable[Image]) -> None:
        """A new prompt is being made, with these images: chunks left from the last are freed."""
        self._free_pending()
        self._images = tuple(images)
        self.encode_seconds = []

    def entries(self, image: Image) -> list[int]:
        """The token list's entries for `image`: its wrapping tokens and its image runs."""
        known = self._entries.get(image.digest)
        if known is None:
            known = self._entries[image.digest] = self._tokenize(image)
            while len(self._entries) > KEPT_ENTRIES:
                self._entries.popitem(last=False)
        self._entries.move_to_end(image.digest)
        return known

    def _tokenize(self, image: Image) -> list[int]:
        """libmtmd's tokens for the image alone: its entries; its chunks become pending. Raises
        ImageError for an image the model cannot take (before any reply begins: the engine
        tokenizes while it fits the prompt)."""
        width, height, rgb = rgb_pixels(image)
        data = (ctypes.c_uint8 * len(rgb)).from_buffer_copy(rgb)
        bitmap = mtmd.mtmd_bitmap_init(width, height, data)
        if not bitmap:
            raise ImageError(f"llama.cpp could not take the image ({width} × {height}).")
        chunks = mtmd.mtmd_input_chunks_init()
        try:
            mtmd.mtmd_bitmap_set_id(bitmap, image.digest.encode())
            text = mtmd.mtmd_input_text(self._marker, len(self._marker), False, True)
            bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
            result = mtmd.mtmd_tokenize(self._ctx, chunks, ctypes.byref(text), bitmaps, 1)
            if result != 0:
                raise ImageError(f"The model's projector could not prepare the image ({width} × {height}; "
                                 f"llama.cpp said {result}).")
            entries: list[int] = []
            runs = 0
            for index in range(mtmd.mtmd_input_chunks_size(chunks)):
                chunk = mtmd.mtmd_input_chunks_get(chunks, index)
                kind = mtmd.mtmd_input_chunk_get_type(chunk)
                if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                    count = ctypes.c_size_t()
                    tokens = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(count))
                    entries += tokens[:count.value]
                elif kind == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE and runs < MAX_CHUNKS:
                    self._check_room(chunk)
                    run = position_id(image.digest, runs)
                    runs += 1
                    if run not in self._pending:
                        self._pending[run] = mtmd.mtmd_input_chunk_copy(chunk)
                    entries += [run] * mtmd.mtmd_input_chunk_get_n_pos(chunk)
                else:
                    raise ImageError("The model's projector made more of the image than Hearth takes "
                                     f"({MAX_CHUNKS} pieces at most), or made audio of it.")
            return entries
        finally:
            mtmd.mtmd_input_chunks_free(chunks)
            mtmd.mtmd_bitmap_free(bitmap)

    def _check_room(self, chunk) -> None:
        """An image the model decodes with non-causal attention attends to itself whole, so it
        must go in one batch: llama.cpp aborts where the micro-batch is smaller, and a smaller
        batch would split it silently."""
        if not mtmd.mtmd_decode_use_non_causal(self._ctx, chunk):
            return
        tokens = mtmd.mtmd_input_chunk_get_n_tokens(chunk)
        room = min(self._llm.n_batch, self._llm.context_params.n_ubatch)
        if tokens > room:
            raise ImageError(f"An image takes {tokens} tokens with this projector, more than the batch of {room} "
                             "the model was loaded with.")

    def evaluate(self, run: int, n_past: int) -> int:
        """Encode the image chunk of `run` and decode it into the KV cache at `n_past`; the
        position after it. Raises RuntimeError where llama.cpp fails."""
        if run not in self._pending:  # rare: its entries were reused, its chunk long freed
            owner = next((image for image in self._images
                          if any(position_id(image.digest, chunk) == run for chunk in range(MAX_CHUNKS))), None)
            if owner is not None:
                self._tokenize(owner)
        chunk = self._pending.pop(run, None)
        if chunk is None:
            raise RuntimeError("an image in the prompt is not among the request's images")  # the engine's mistake
        try:
            started = time.perf_counter()
            after = llama_c.llama_pos(n_past)
            result = mtmd.mtmd_helper_eval_chunk_single(self._ctx, self._llm._ctx.ctx, chunk, n_past, SEQ,
                                                        self._llm.n_batch, False, ctypes.byref(after))
        finally:
            mtmd.mtmd_input_chunk_free(chunk)
        if result != 0:
            raise RuntimeError(f"llama.cpp could not evaluate the image (error {result}; see the log)")
        self.encode_seconds.append(time.perf_counter() - started)
        return after.value

    def _free_pending(self) -> None:
        for chunk in self._pending.values():
            mtmd.mtmd_input_chunk_free(chunk)
        self._pending.clear()

    def close(self) -> None:
        self._free_pending()
        if self._ctx:
            mtmd.mtmd_free(self._ctx)
            self._ctx = None
