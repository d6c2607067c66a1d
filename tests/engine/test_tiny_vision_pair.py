"""The tiny vision pair (support/model_files/tiny_vision.py) through real llama.cpp and libmtmd,
called directly as the engine calls them: the model loads with llama_cpp.Llama, the projector
with `mtmd_init_from_file`, a prompt with the media marker and an RGB bitmap tokenizes into
text, image, text chunks, `mtmd_helper_eval_chunks` evaluates them, and what the image holds
changes what the model predicts. A projector that does not match the model is refused by
libmtmd itself, with a message, without aborting; an image larger than the context's micro-batch
aborts the process (llama.cpp asserts), so the engine must never let that happen.

This is test-only code calling llama_cpp (in the app only app/engine/llama may); it pins down
the sequence and the numbers the engine builds on."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from pathlib import Path

import llama_cpp.llama_cpp as llama_c
import llama_cpp.mtmd_cpp as mtmd
import numpy as np
import pytest
from llama_cpp import Llama
from support.model_files import tiny_models as tiny
from support.model_files.tiny_vision import PROJECTOR_NAME, ensure_tiny_vision_pair, write_tiny_projector

N_CTX = 256
PREFIX = "<|user|>\nWhat is in this picture? "
SUFFIX = "</s>\n<|assistant|>\n"


def mtmd_params() -> mtmd.mtmd_context_params:
    params = mtmd.mtmd_context_params_default()
    params.use_gpu = False
    params.n_threads = 1
    params.print_timings = False
    return params


@pytest.fixture(scope="module")
def pair():
    return ensure_tiny_vision_pair()


@pytest.fixture(scope="module")
def llm(pair):
    return Llama(str(pair.model), n_ctx=N_CTX, n_threads=1, verbose=False)


@pytest.fixture(scope="module")
def vision(pair, llm):
    ctx = mtmd.mtmd_init_from_file(str(pair.projector).encode(), llm.model, mtmd_params())
    assert ctx, "libmtmd refused the tiny projector"
    yield ctx
    mtmd.mtmd_free(ctx)


class Chunks:
    """mtmd_tokenize's output for one text and its bitmaps, freed on exit."""

    def __init__(self, vision, text: str, images: list[np.ndarray | tuple[int, int]], image_ids: list[str] | None = None):
        self._bitmaps = [bitmap(image) for image in images]
        for handle, image_id in zip(self._bitmaps, image_ids or [], strict=False):
            mtmd.mtmd_bitmap_set_id(handle, image_id.encode())
        self.handle = mtmd.mtmd_input_chunks_init()
        data = text.encode()
        text_in = mtmd.mtmd_input_text(data, len(data), True, True)  # add_special, parse_special
        array = (mtmd.mtmd_bitmap_p_ctypes * len(self._bitmaps))(*self._bitmaps)
        self.status = mtmd.mtmd_tokenize(vision, self.handle, ctypes.byref(text_in), array, len(self._bitmaps))

    def __enter__(self):
        return self

    def __exit__(self, *_):
        mtmd.mtmd_input_chunks_free(self.handle)
        for handle in self._bitmaps:
            mtmd.mtmd_bitmap_free(handle)

    def __iter__(self):
        return (mtmd.mtmd_input_chunks_get(self.handle, i) for i in range(mtmd.mtmd_input_chunks_size(self.handle)))

    def kinds(self) -> list[tuple[int, int]]:
        return [(mtmd.mtmd_input_chunk_get_type(c), mtmd.mtmd_input_chunk_get_n_tokens(c)) for c in self]


def bitmap(image: np.ndarray | tuple[int, int]):
    """An mtmd bitmap of an (height, width, 3) uint8 RGB array, or for a (width, height) pair
    a placeholder without pixels (what libmtmd offers for counting an image's tokens)."""
    if isinstance(image, tuple):
        handle = mtmd.mtmd_bitmap_init(*image, None)
    else:
        height, width, _ = image.shape
        data = np.ascontiguousarray(image, dtype=np.uint8).tobytes()
        handle = mtmd.mtmd_bitmap_init(width, height, (ctypes.c_uint8 * len(data)).from_buffer_copy(data))
    assert handle
    return handle


def text_tokens(chunk) -> list[int]:
    count = ctypes.c_size_t()
    pointer = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(count))
    return pointer[:count.value]


def picture(seed: int, width: int = 40, height: int = 30) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def evaluate(vision, llm, chunks: Chunks) -> tuple[int, np.ndarray]:
    """Evaluate the chunks from position 0 in a cleared cache: (positions after, last logits)."""
    llama_c.llama_memory_clear(llama_c.llama_get_memory(llm.ctx), True)
    n_past = llama_c.llama_pos(0)
    assert mtmd.mtmd_helper_eval_chunks(vision, llm.ctx, chunks.handle, 0, 0, llm.n_batch, True,
                                        ctypes.byref(n_past)) == 0
    logits = np.ctypeslib.as_array(llama_c.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)).copy()
    return n_past.value, logits


# --- the files ------------------------------------------------------------------------------------


def test_the_pair_is_small_and_its_projector_matches_the_model(pair):
    model = tiny.read_metadata(pair.model, frozenset({"llama.embedding_length", "tokenizer.chat_template"}))
    projector = tiny.read_metadata(pair.projector)
    assert model["llama.embedding_length"] == pair.n_embd == projector["clip.vision.projection_dim"]
    assert model["tokenizer.chat_template"]
    assert projector["general.architecture"] == "clip" and projector["general.type"] == "mmproj"
    assert projector["clip.projector_type"] == pair.projector_type == "gemma3"
    assert projector["clip.vision.image_size"] == pair.image_size
    assert pair.projector.name == PROJECTOR_NAME and pair.projector.parent == pair.model.parent
    assert pair.model.stat().st_size < 6_000_000 and pair.projector.stat().st_size < 100_000
    assert ensure_tiny_vision_pair() == pair  # cached


# --- libmtmd reads it -----------------------------------------------------------------------------


def test_libmtmd_loads_the_projector_for_the_model_as_a_plain_position_vision_model(vision):
    assert mtmd.mtmd_support_vision(vision)
    assert not mtmd.mtmd_support_audio(vision)
    assert not mtmd.mtmd_decode_use_mrope(vision)  # one position per image token
    assert mtmd.mtmd_get_marker(vision) == mtmd.mtmd_default_marker()


def test_an_image_becomes_its_image_tokens_between_two_text_chunks(vision, llm, pair):
    marker = mtmd.mtmd_default_marker().decode()
    with Chunks(vision, PREFIX + marker + SUFFIX, [picture(1)], ["sha256-of-the-image"]) as chunks:
        assert chunks.status == 0
        kinds = chunks.kinds()
        assert [kind for kind, _ in kinds] == [mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT, mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE,
                                               mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT]
        before, image, after = list(chunks)
        assert kinds[1][1] == pair.image_tokens == mtmd.mtmd_input_chunk_get_n_pos(image)
        assert mtmd.mtmd_input_chunk_get_id(image) == b"sha256-of-the-image"
        assert mtmd.mtmd_decode_use_non_causal(vision, image)  # gemma3: the image attends both ways
        # The text around the image is the prompt's, the projector's image delimiters added as
        # text: <start_of_image> ends the first chunk, <end_of_image> begins the last.
        assert text_tokens(before)[0] == llm.token_bos()
        assert llm.detokenize(text_tokens(before)).decode().rstrip().endswith("<start_of_image>")
        assert llm.detokenize(text_tokens(after)).decode().lstrip().startswith("<end_of_image>")
        total = mtmd.mtmd_helper_get_n_tokens(chunks.handle)
        assert total == sum(n for _, n in kinds) == mtmd.mtmd_helper_get_n_pos(chunks.handle)


def test_every_image_becomes_the_same_number_of_tokens_whatever_its_shape(vision, pair):
    marker = mtmd.mtmd_default_marker().decode()
    shapes = ((1, 1), (17, 9), (640, 480), (64, 64), (30, 500))
    images = [picture(2, width, height) for width, height in shapes] + [(3000, 2000)]  # and one counted only
    for image in images:
        with Chunks(vision, marker, [image]) as chunks:
            assert chunks.status == 0
            assert [n for kind, n in chunks.kinds() if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE] == [pair.image_tokens]


def test_a_marker_without_its_image_is_refused(vision):
    marker = mtmd.mtmd_default_marker().decode()
    with Chunks(vision, PREFIX + marker + marker + SUFFIX, [picture(1)]) as chunks:
        assert chunks.status != 0


# --- evaluating it --------------------------------------------------------------------------------


def test_the_chunks_evaluate_in_place_and_the_image_changes_what_comes_next(vision, llm):
    marker = mtmd.mtmd_default_marker().decode()
    with Chunks(vision, PREFIX + marker + SUFFIX, [picture(1)]) as first:
        total = mtmd.mtmd_helper_get_n_pos(first.handle)
        n_past, logits_first = evaluate(vision, llm, first)
        assert n_past == total
        assert llama_c.llama_memory_seq_pos_max(llama_c.llama_get_memory(llm.ctx), 0) == total - 1
        assert evaluate(vision, llm, first)[1] == pytest.approx(logits_first)  # the same image: the same logits
    with Chunks(vision, PREFIX + marker + SUFFIX, [picture(2)]) as second:
        n_past, logits_second = evaluate(vision, llm, second)
    assert n_past == total
    assert np.abs(logits_second - logits_first).max() > 1e-3


# --- a projector that does not match ------------------------------------------------------------


def test_libmtmd_refuses_a_projector_for_another_embedding_length_and_says_why(llm, pair, tmp_path):
    other = write_tiny_projector(tmp_path / "mmproj-other.gguf", projection_dim=pair.n_embd + 16)
    assert tiny.read_metadata(other)["clip.vision.projection_dim"] == pair.n_embd + 16
    said: list[str] = []

    @llama_c.llama_log_callback
    def listen(_level, text, _user_data):
        said.append(text.decode("utf-8", errors="replace"))

    mtmd.mtmd_log_set(listen, None)
    try:
        ctx = mtmd.mtmd_init_from_file(str(other).encode(), llm.model, mtmd_params())
    finally:
        mtmd.mtmd_log_set(llama_c.llama_log_callback(), None)  # NULL: back to libmtmd's own
    assert not ctx
    assert f"mismatch between text model (n_embd = {pair.n_embd}) and mmproj (n_embd = {pair.n_embd + 16})" in "".join(said)


# --- the micro-batch must hold the whole image ----------------------------------------------------

_CHILD = """
import sys
sys.path[:0] = sys.argv[1:3]
import test_tiny_vision_pair
print(test_tiny_vision_pair.evaluate_in_micro_batches(int(sys.argv[3])))
"""


def evaluate_in_micro_batches(n_ubatch: int) -> int:
    """In a child process: the pair's prompt with one image, evaluated in one batch of N_CTX
    tokens by a context whose micro-batches hold `n_ubatch` tokens; the positions after it."""
    pair = ensure_tiny_vision_pair()
    llm = Llama(str(pair.model), n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=n_ubatch, n_threads=1, verbose=False)
    vision = mtmd.mtmd_init_from_file(str(pair.projector).encode(), llm.model, mtmd_params())
    with Chunks(vision, PREFIX + mtmd.mtmd_default_marker().decode() + SUFFIX, [picture(1)]) as chunks:
        return evaluate(vision, llm, chunks)[0]


def test_an_image_larger_than_the_micro_batch_aborts_the_process_so_the_engine_must_prevent_it(pair, vision):
    """gemma3 images are decoded with non-causal attention, and llama.cpp asserts (an abort, not
    an error code) that one micro-batch (n_ubatch) holds the whole decode call: an engine
    must keep n_ubatch at least the image's token count. (An n_batch given to
    mtmd_helper_eval_chunks below it does not abort: the helper splits the image into decode
    calls that each attend only within themselves, and the logits come out different.) Run in
    child processes, since the failing one dies."""

    def run(n_ubatch: int) -> subprocess.CompletedProcess:
        here = Path(__file__).resolve().parent
        return subprocess.run([sys.executable, "-c", _CHILD, str(here.parent), str(here), str(n_ubatch)],
                              check=False, capture_output=True, text=True, timeout=120)

    with Chunks(vision, PREFIX + mtmd.mtmd_default_marker().decode() + SUFFIX, [picture(1)]) as chunks:
        total = mtmd.mtmd_helper_get_n_pos(chunks.handle)
    whole = run(pair.image_tokens)
    assert whole.returncode == 0, whole.stderr[-2000:]
    assert whole.stdout.split() == [str(total)]
    split = run(pair.image_tokens // 2)
    assert split.returncode == -signal.SIGABRT
    assert "non-causal attention requires n_ubatch >= n_tokens" in split.stderr
