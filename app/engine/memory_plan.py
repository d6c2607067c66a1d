"""A memory plan before a load: what a model will take in RAM and VRAM, from its header alone.

`plan(model, options, gpu_layers=..., free_ram=..., free_vram=...)` sizes what llama.cpp
(as llama-cpp-python 0.3.36 vendors it) allocates for Hearth's engine, and weighs it against
what is free. No weights are read and llama_cpp is not imported: the picker plans every
listed model and the parameters panel re-plans at every change, so a plan is arithmetic over
a `ModelShape` (gguf/shape.py, one header walk per file version).

What is modelled, and how (llama.cpp source files named as in its src/):

- Weights, by where llama.cpp puts each layer (llama-model.cpp, load_tensors): the input
  layer (token_embd) always on the CPU; with N GPU layers the output layer and the last N-1
  blocks on the GPU; a model without output.weight loads token_embd a second time as the
  output, on the GPU when the output layer is there. With mmap, weights the CPU repacks
  (machine.repacked_types: Q4_0/Q4_K/IQ4_NL on AVX2...) count twice: the interleaved copy
  plus the file's pages, which stay mapped. Tensors on the GPU are counted in VRAM only.
- KV cache (llama-kv-cache.cpp, llama-kv-cache-iswa.cpp): per layer, cells x (n_embd_k_gqa x
  bytes(type_k) + n_embd_v_gqa x bytes(type_v)) with per-layer KV head counts and quantized
  block sizes (gguf's GGML_QUANT_SIZES). Cells: the context padded to 256. Sliding-window
  layers hold min(cells, pad256(window + n_ubatch)) cells (every cell with swa_full, which
  Hearth's engine no longer sets: WHOLE_WINDOW_CACHE). A layer's cache lives with its layer
  (CPU/GPU). The engine's window checkpoints (WINDOW_CHECKPOINTS of them) are copies of the
  sliding layers' last `window` cells, in RAM wherever the layers are.
  Without flash attention a V cache of uneven widths is padded to the widest.
- Compute buffers: on the GPU, the whole of what llama.cpp reserves (its worst case graph: a
  full ubatch asking logits for every row, n_ubatch x n_vocab floats, or the attention),
  because device memory is taken at reservation; where the logits are the worst case (Gemma 3
  and the tiny test models with flash attention) the formula gives, to the byte, the CPU
  reservation llama.cpp logs. On the CPU only what a reply touches: Hearth asks logits for
  one row, or at most a drafted batch's (lookup.py), so most of the reservation stays
  untouched virtual memory. Touched: a full ubatch's activations, the attention masks at a
  full context (n_kv grows with the conversation), the attention scores without flash
  attention (at a full context too), and a drafted batch's 16 rows of logits in the output
  buffer (the graph's copy lands on pages the ubatch touched). These are the peak of a long
  conversation; one short reply stays below them.
- Runtime: llama.cpp's vocabulary (token texts, scores, the token-to-piece cache; BPE merges
  in a map), the CPU backend's threads and work buffer, the library code paged in, and the
  engine's own per-model state. Calibrated on five vocabularies (32k to 262k tokens, SPM and
  BPE); the constants below say from what.

- A vision model's projector (`projector=`: engine/gguf/projector.py's ProjectorInfo, or its
  path), as libmtmd loads it (llama/vision.py), at its peak: while it encodes one image. Its
  weights (the data section, read into a buffer, not mapped) and its compute buffer go on the
  GPU when any layer is offloaded (the engine asks libmtmd for the GPU then), on the CPU
  otherwise. The compute buffer is reserved for an image at the encoder's own size, with flash
  attention (libmtmd's Auto, which the engine leaves: on for the CPU and CUDA); its peak, per
  patch, is the largest of three moments: cutting the image into patches (the f32 image, 3
  values a pixel, and its f16 patch matrix), attention (5 rows of the encoder's width), the
  feed-forward layer (its width and 3 rows of the encoder's). That gives the buffer libmtmd
  logs, to its rounding, for gemma3 projectors of two blocks or more (real ones have a dozen to
  forty) from 576 to 4,096 patches, 256 to 1,152 wide (Gemma 3's shape among them), and up to
  a sixth more for some one-block towers, which can keep 2 rows live instead of 3. On the CPU
  the matrix products also convert each layer's input to f16 (2 bytes x patches x the wider
  of the two widths), and the image's tokens go to the language model as embeddings. Always in
  RAM: the image as libmtmd prepares it (its bytes and an f32 copy at the encoder's size) and
  the library itself (PROJECTOR_BASE). Measured as the resident growth from before the
  projector's load to after one image's encoding, on this machine's CPU, for five such
  projectors (Gemma 3's shape with 2 of its 27 blocks among them): within 4% for the three
  over 50 MiB, and at most 3.3 MiB over for the two small ones.
  The image's tokens take cells of the context, not more memory: the KV cache is sized by the
  context already; `image_tokens` says how many one image takes.

Flash attention Auto is planned as the engine resolves it (load_checks.flash_attention_for:
off on the CPU with an F16 cache, else llama.cpp's own Auto, which turns it on for the CPU
and CUDA). With layers offloaded, the file is still read through the page cache
at load (a transient the OS can reclaim), and tensors between CPU tensors stay mapped.

Not modelled: the transient peak while llama.cpp reads the header (a copy of the metadata,
freed before the KV cache is made: only visible for tiny models with big vocabularies),
recurrent and hybrid models' state (Mamba, RWKV, Qwen3-Next: planned as if every layer were
attention), multi-GPU splits (all GPU layers planned on one device), the CUDA context and
cuBLAS workspace (the VRAM verdict keeps llama.cpp's own 1 GiB margin for them), the pinned
host buffer a CUDA build stages inputs in, and the memory of the Python process and Qt,
which are there before any load.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from ..common.units import GIB, MIB, byte_size
from .gguf.modelfile import ModelInfo
from .gguf.projector import ProjectorInfo, inspect_projector
from .gguf.reading import model_shape
from .gguf.shape import NOT_SLIDING, ModelShape
from .load_checks import flash_attention_for
from .lookup import BATCH_COST
from .options import DEFAULT_CONTEXT, FlashAttention, KvCacheType, LoadOptions, Word, context_for

CELL_PAD = 256  # llama_context pads n_ctx, and the SWA cache, to 256 cells
MAX_UBATCH = 512  # llama-cpp-python's n_batch and n_ubatch: min(n_ctx, 512)
DRAFT_ROWS = max(BATCH_COST)  # the most rows a drafted batch asks logits for
# Sliding-window layers get llama.cpp's window-sized cache (min(cells, pad256(window + n_ubatch))),
# not a whole one (swa_full): with a whole cache every such layer attends over every position
# held, masking all but its window, and Gemma 3 270M decoded 20% slower at 3,000 tokens
# (43.8 vs 54.5 tokens/s, bench/reference_speed.py's deep run). What a whole cache gave, cutting
# back further than the window (a Regenerate after a long reply), checkpoints of each prompt's
# window give instead (llama/window_checkpoints.py): the last WINDOW_CHECKPOINTS, in RAM.
WHOLE_WINDOW_CACHE = False
WINDOW_CHECKPOINTS = 3  # a Regenerate, an edit of the last message, and of the one before it
# The plan's measured accuracy (bench/memory_plan.py): within 15% of the resident growth. A
# plan at most free / ACCURACY fits even if it is 15% short; up to free it is tight.
ACCURACY = 1.15
VRAM_MARGIN = GIB  # llama.cpp's own --fit leaves 1 GiB per device free

# Calibrated on this machine (bench/memory_plan.py; 2 x86-64 cores, AVX2, Linux), each from
# the resident memory of loads that differ in the one thing the constant scales with:
RUNTIME_BASE = 6 * MIB  # backend threads, work buffer, library code paged in, engine state
VOCAB_BYTES_PER_TOKEN = 176  # llama_vocab's token text, score, type, piece cache (32k vs 262k SPM vocabularies)
VOCAB_BYTES_PER_MERGE = 125  # a BPE merge: a pair of strings and its rank (Llama 3 and Qwen 2 vocabularies)
# Floats a full ubatch keeps live per token, per unit of (n_embd, n_ff, n_head x head_dim):
# from two 4-layer models of equal n_embd and n_head x head_dim but n_ff 2.75x and 8x n_embd.
ACTIVATION_FLOATS = (2.0, 3.0, 2.0)
COMPUTE_BASE = 1 * MIB
# A projector's encoding peak, in floats per patch (module docstring): cutting the image into
# patches (3 f32 values a pixel and an f16 copy of the patches: 4.5 x patch_size², in floats),
# attention (ENCODER_ATTENTION_ROWS x its width), the feed-forward layer (its width and
# ENCODER_FFN_ROWS x the encoder's).
PATCHING_FLOATS_PER_PIXEL = 4.5
ENCODER_ATTENTION_ROWS = 5
ENCODER_FFN_ROWS = 3
PROJECTOR_BASE = 10 * MIB  # libmtmd's code paged in and its contexts (the two projectors' load, less their weights)
PREPARED_BYTES_PER_PIXEL = 15  # an image at the encoder's size: RGB bytes and an f32 copy


Projector = ProjectorInfo | str | os.PathLike | None  # a projector as callers have it: read, or its path


class Fit(Word):
    """Whether a plan fits what is free: with room for the plan's error, only just, or not."""

    FITS = "fits"
    TIGHT = "tight"
    DOES_NOT_FIT = "does_not_fit"


@dataclass(frozen=True)
class MemoryPlan:
    """What a load will take, in bytes, and whether it fits. RAM counts what the process
    will hold resident (weights mapped or read, caches, buffers touched); VRAM what llama.cpp
    allocates on the GPU."""

    n_ctx: int  # cells, as llama.cpp pads the context asked for
    n_ubatch: int
    gpu_layers: int  # layers offloaded, of total_layers (the blocks and the output layer)
    total_layers: int
    flash_attn: bool
    weights_ram: int
    weights_vram: int
    kv_ram: int
    kv_vram: int
    compute_ram: int
    compute_vram: int
    runtime_ram: int
    free_ram: int
    free_vram: int | None  # None: no GPU (or not known)
    fit: Fit
    largest_context: int  # the largest context (cells) that fits here; 0 when none does
    projector_ram: int = 0  # a vision model's projector encoding one image: what it holds in RAM
    projector_vram: int = 0  # ...and on the GPU (its weights and buffers, with layers offloaded)
    image_tokens: int = 0  # context cells one image takes (0: no projector)
    checkpoints_ram: int = 0  # the engine's window checkpoints of a sliding-window cache, at most

    @property
    def kv_bytes(self) -> int:
        return self.kv_ram + self.kv_vram

    @property
    def total_ram(self) -> int:
        return (self.weights_ram + self.kv_ram + self.checkpoints_ram + self.compute_ram + self.runtime_ram
                + self.projector_ram)

    @property
    def total_vram(self) -> int:
        return self.weights_vram + self.kv_vram + self.compute_vram + self.projector_vram

    @property
    def summary(self) -> str:
        """One line for a tooltip or the command line."""
        verdict = {Fit.FITS: "Fits", Fit.TIGHT: "Tight", Fit.DOES_NOT_FIT: "Does not fit"}[self.fit]
        checkpoints = f" and {_size(self.checkpoints_ram)} of window checkpoints" if self.checkpoints_ram else ""
        line = (f"{verdict}: {_size(self.total_ram)} of {_size(self.free_ram)} free RAM "
                f"(weights {_size(self.weights_ram)}, KV cache {_size(self.kv_ram)} for {self.n_ctx:,} tokens"
                f"{checkpoints}, "
                f"buffers {_size(self.compute_ram + self.runtime_ram)}{self._projector_words(self.projector_ram)})")
        if self.gpu_layers:
            free = "unknown free" if self.free_vram is None else f"{_size(self.free_vram)} free"
            line += (f"; {_size(self.total_vram)} of {free} VRAM ({self.gpu_layers}/{self.total_layers} layers"
                     f"{self._projector_words(self.projector_vram)})")
        if self.fit is not Fit.FITS and self.largest_context:
            line += f"; up to {self.largest_context:,} tokens fit"
        return line

    def _projector_words(self, nbytes: int) -> str:
        return f", projector {_size(nbytes)} for an image of {self.image_tokens:,} tokens" if self.image_tokens else ""

    def to_json(self) -> dict:
        """The plan for `hearth inspect --plan` and the window's tooltips."""
        return {
            "fit": str(self.fit), "summary": self.summary, "n_ctx": self.n_ctx, "n_ubatch": self.n_ubatch,
            "gpu_layers": self.gpu_layers, "total_layers": self.total_layers, "flash_attn": self.flash_attn,
            "ram": {"weights": self.weights_ram, "kv_cache": self.kv_ram, "window_checkpoints": self.checkpoints_ram,
                    "compute": self.compute_ram, "runtime": self.runtime_ram, "total": self.total_ram,
                    "free": self.free_ram},
            "vram": {"weights": self.weights_vram, "kv_cache": self.kv_vram, "compute": self.compute_vram,
                     "total": self.total_vram, "free": self.free_vram},
            "largest_context": self.largest_context,
            "projector": None if not self.image_tokens else {
                "ram": self.projector_ram, "vram": self.projector_vram, "image_tokens": self.image_tokens},
        }


def plan(model: ModelShape | ModelInfo | str | os.PathLike, options: LoadOptions = LoadOptions(), *,
         gpu_layers: int = 0, free_ram: int, free_vram: int | None = None, swa_full: bool = WHOLE_WINDOW_CACHE,
         projector: Projector = None) -> MemoryPlan:
    """The plan for loading `model` with `options`, `gpu_layers` of its layers offloaded.

    `gpu_layers`: how many llama.cpp offloads, already resolved (0 on a CPU build; the blocks
    and the output layer count, so n_layer + 1 is all); more than that is all of them.
    `swa_full`: whether sliding-window caches are whole (the engine's: WHOLE_WINDOW_CACHE);
    False plans llama.cpp's default window-sized ones, and the engine's checkpoints of them.
    `projector`: the projector loaded with it (a vision model's; library/projectors.py finds and
    checks it), or None.
    """
    shape, projector = _shape(model), _projector(projector)
    n_ctx = context_for(options.n_ctx, shape.context_length)
    one = _sizes(shape, options, n_ctx, gpu_layers, swa_full, projector)
    fit = _fit(one, free_ram, free_vram)
    largest = largest_context(shape, options, gpu_layers=gpu_layers, free_ram=free_ram, free_vram=free_vram,
                              swa_full=swa_full, projector=projector)
    return replace(one, free_ram=free_ram, free_vram=free_vram, fit=fit, largest_context=largest)


def largest_context(model: ModelShape | ModelInfo | str | os.PathLike, options: LoadOptions = LoadOptions(), *,
                    gpu_layers: int = 0, free_ram: int, free_vram: int | None = None,
                    swa_full: bool = WHOLE_WINDOW_CACHE, projector: Projector = None) -> int:
    """The largest context (a multiple of 256 cells, at most the trained one) whose plan fits
    with room for its error (Fit.FITS); 0 when not even 256 does."""
    shape, projector = _shape(model), _projector(projector)
    ceiling = max(CELL_PAD, _pad(shape.context_length or DEFAULT_CONTEXT))
    low, high = 0, ceiling // CELL_PAD  # in units of 256 cells; the plan grows with the context
    while low < high:
        middle = (low + high + 1) // 2
        sizes = _sizes(shape, options, middle * CELL_PAD, gpu_layers, swa_full, projector)
        if _fit(sizes, free_ram, free_vram) is Fit.FITS:
            low = middle
        else:
            high = middle - 1
    return low * CELL_PAD


def auto_gpu_layers(model: ModelShape | ModelInfo | str | os.PathLike, options: LoadOptions = LoadOptions(), *,
                    free_vram: int | None, swa_full: bool = WHOLE_WINDOW_CACHE, projector: Projector = None) -> int:
    """GPU layers: Auto. As many layers as the free VRAM holds with llama.cpp's 1 GiB margin
    (its `llama_params_fit` does the same by trial allocations; llama-cpp-python 0.3.36's
    library does not export it, so this asks the plan). 0 without a GPU."""
    if not free_vram:
        return 0
    shape, projector = _shape(model), _projector(projector)
    n_ctx = context_for(options.n_ctx, shape.context_length)
    budget = free_vram - VRAM_MARGIN
    for layers in range(shape.n_layer + 1, 0, -1):  # VRAM grows with every layer offloaded
        if _sizes(shape, options, n_ctx, layers, swa_full, projector).total_vram <= budget:
            return layers
    return 0


def gpu_layers_for(model: ModelShape | ModelInfo | str | os.PathLike, options: LoadOptions, *, offloads: bool,
                   free_vram: Callable[[], int | None], projector: Projector = None) -> int:
    """The layers a load with `options` puts on the GPU, decided as the engine loads: none on a
    build that cannot offload, Auto (None) as many as free VRAM holds, else the number asked.
    The engine, the window's plan and `hearth inspect --plan` all ask here, so what is planned is
    what loads. `free_vram` is asked only for Auto: on a CUDA build it sets up a CUDA context."""
    if not offloads:
        return 0
    if options.n_gpu_layers is None:
        return auto_gpu_layers(model, options, free_vram=free_vram(), projector=projector)
    return options.n_gpu_layers


# --- the arithmetic -----------------------------------------------------------------------------


def _shape(model: ModelShape | ModelInfo | str | os.PathLike) -> ModelShape:
    if isinstance(model, ModelShape):
        return model
    return model_shape(model.path if isinstance(model, ModelInfo) else model)


def _projector(projector: Projector) -> ProjectorInfo | None:
    if projector is None or isinstance(projector, ProjectorInfo):
        return projector
    return inspect_projector(projector)


def _pad(n: int, to: int = CELL_PAD) -> int:
    return -(-n // to) * to


def _row_bytes(kind: KvCacheType, width: int) -> int:
    """Bytes of one cache row of `width` values (whole quantization blocks)."""
    block, size = GGML_QUANT_SIZES[GGMLQuantizationType[kind.name]]
    return -(-width // block) * size


def window_cells(cells: int, n_swa: int, n_ubatch: int, swa_full: bool) -> int:
    """The cells llama.cpp gives each sliding-window layer (llama-kv-cache-iswa.cpp): the
    window and a ubatch, padded, at most the context's; every cell with swa_full."""
    return cells if swa_full else min(cells, _pad(n_swa + n_ubatch))


def keeps_checkpoints(architecture: str, n_swa: int, cells: int, n_ubatch: int, swa_full: bool) -> bool:
    """Whether the engine keeps window checkpoints (llama/window_checkpoints.py): for a causal
    sliding window (not NOT_SLIDING's) in a cache smaller than the context, which is the only
    kind positions ever leave."""
    return (n_swa > 0 and architecture not in NOT_SLIDING
            and window_cells(cells, n_swa, n_ubatch, swa_full) < cells)


def _sizes(shape: ModelShape, options: LoadOptions, n_ctx: int, gpu_layers: int, swa_full: bool,
           projector: ProjectorInfo | None = None) -> MemoryPlan:
    """Every figure of the plan but the verdict (free memory is the caller's)."""
    from .machine import repacked_types  # host facts, read once per process

    total_layers = shape.n_layer + 1
    gpu_layers = max(0, min(gpu_layers, total_layers))
    first_gpu = total_layers - gpu_layers  # block il is on the GPU when il >= first_gpu
    output_on_gpu = gpu_layers > 0
    cells = _pad(max(1, n_ctx))
    n_ubatch = min(max(1, n_ctx), MAX_UBATCH)
    flash_attn = flash_attention_for(options, gpu_layers) is not FlashAttention.OFF  # Auto left: llama.cpp's, on
    swa_cells = window_cells(cells, shape.n_swa, n_ubatch, swa_full)
    checkpoints = keeps_checkpoints(shape.architecture, shape.n_swa, cells, n_ubatch, swa_full)

    # Weights.
    repack = repacked_types() if options.use_mmap else {}
    output_weights = shape.input.by_type if shape.tied_output else shape.output.by_type
    output_bytes = shape.output.nbytes + (sum(n for *_, n in shape.input.by_type) if shape.tied_output else 0)
    weights_ram = shape.input.nbytes + shape.other.nbytes
    weights_vram = 0
    cpu_groups = []
    for il, block in enumerate(shape.blocks):
        if il >= first_gpu:
            weights_vram += block.nbytes
        else:
            weights_ram += block.nbytes
            cpu_groups.append(block.by_type)
    if output_on_gpu:
        weights_vram += output_bytes
    else:
        weights_ram += shape.output.nbytes
        cpu_groups.append(output_weights)
    weights_ram += sum(nbytes for group in cpu_groups for ggml_type, rows, nbytes in group
                       if ggml_type in repack and rows % repack[ggml_type] == 0)

    # KV cache, per layer, where the layer is.
    widest_v = max((h * shape.head_dim_v for h in shape.n_head_kv), default=0)
    kv_ram = kv_vram = checkpoints_ram = 0
    for il in range(shape.n_layer):
        heads = shape.n_head_kv[il]
        if not heads:
            continue
        v_width = widest_v if not flash_attn else heads * shape.head_dim_v
        row = _row_bytes(options.kv_type_k, heads * shape.head_dim_k)
        row += _row_bytes(options.kv_type_v, v_width) if shape.head_dim_v else 0
        nbytes = (swa_cells if shape.swa_layers[il] else cells) * row
        if shape.swa_layers[il] and checkpoints:  # a checkpoint holds the window's cells, in RAM
            checkpoints_ram += WINDOW_CHECKPOINTS * min(cells, shape.n_swa) * row
        if il >= first_gpu:
            kv_vram += nbytes
        else:
            kv_ram += nbytes

    # Compute buffers.
    n_head = max(shape.n_head, default=0)
    e_embd, e_ff, e_heads = ACTIVATION_FLOATS
    activations = int(n_ubatch * (e_embd * shape.n_embd + e_ff * shape.n_ff + e_heads * n_head * shape.head_dim_k)) * 4
    mask_cells = cells + (swa_cells if shape.uses_swa else 0)  # one mask per cache
    masks = n_ubatch * mask_cells * (2 if flash_attn else 4)
    scores = 0 if flash_attn else n_ubatch * cells * n_head * 4  # KQ (softmax in place), one layer at a time
    drafted_rows = DRAFT_ROWS * shape.n_vocab * 4  # a drafted batch's logits, in the graph and copied out
    if gpu_layers < total_layers:  # some layers run on the CPU; a drafted batch's graph reuses the pages
        compute_ram = COMPUTE_BASE + max(activations + masks + scores, drafted_rows) + drafted_rows
    else:  # only the input layer's row lookup, the inputs, and the logits copied back
        compute_ram = COMPUTE_BASE + n_ubatch * shape.n_embd * 4 + masks + drafted_rows
    compute_vram = 0
    if gpu_layers:
        reserved_logits = n_ubatch * shape.n_vocab * 4 if output_on_gpu else 0
        compute_vram = max(reserved_logits + 2 * n_ubatch * shape.n_embd * 4, activations + masks + scores)

    runtime_ram = RUNTIME_BASE + VOCAB_BYTES_PER_TOKEN * shape.n_vocab + VOCAB_BYTES_PER_MERGE * shape.n_merges
    return MemoryPlan(
        n_ctx=cells, n_ubatch=n_ubatch, gpu_layers=gpu_layers, total_layers=total_layers, flash_attn=flash_attn,
        weights_ram=weights_ram, weights_vram=weights_vram, kv_ram=kv_ram, kv_vram=kv_vram,
        checkpoints_ram=checkpoints_ram,
        compute_ram=compute_ram, compute_vram=compute_vram, runtime_ram=runtime_ram,
        free_ram=0, free_vram=None, fit=Fit.DOES_NOT_FIT, largest_context=0,
        **_projector_sizes(projector, on_gpu=gpu_layers > 0),
    )


def _projector_sizes(projector: ProjectorInfo | None, on_gpu: bool) -> dict[str, int]:
    """The projector's figures while it encodes one image (module docstring): RAM, VRAM, and the
    tokens one image takes."""
    if projector is None:
        return {}
    device = projector.weights_bytes + compute_buffer_bytes(projector)
    host = PROJECTOR_BASE + PREPARED_BYTES_PER_PIXEL * projector.image_size ** 2
    host += projector.image_tokens * projector.output_width * 4  # the image's embeddings
    if not on_gpu:  # the matrix products' f16 copy of each layer's input
        host += 2 * projector.patches * max(projector.embedding_length, projector.feed_forward_length)
    return {"projector_ram": host + (0 if on_gpu else device), "projector_vram": device if on_gpu else 0,
            "image_tokens": projector.image_tokens}


def compute_buffer_bytes(projector: ProjectorInfo) -> int:
    """The compute buffer libmtmd reserves to encode one image at the encoder's own size: the
    peak per patch (module docstring), in floats, over the image's patches."""
    per_patch = max(PATCHING_FLOATS_PER_PIXEL * projector.patch_size ** 2,
                    ENCODER_ATTENTION_ROWS * projector.embedding_length,
                    projector.feed_forward_length + ENCODER_FFN_ROWS * projector.embedding_length)
    return int(per_patch * projector.patches) * 4


def _fit(sizes: MemoryPlan, free_ram: int, free_vram: int | None) -> Fit:
    """The worse of RAM's and VRAM's verdicts. RAM: fits with room for the plan's 15% error,
    tight up to what is free. VRAM (not measured here): fits with llama.cpp's 1 GiB margin."""
    ram = sizes.total_ram
    verdict = Fit.FITS if ram * ACCURACY <= free_ram else Fit.TIGHT if ram <= free_ram else Fit.DOES_NOT_FIT
    if sizes.gpu_layers and free_vram is not None:
        vram = sizes.total_vram
        gpu = Fit.FITS if vram + VRAM_MARGIN <= free_vram else Fit.TIGHT if vram <= free_vram else Fit.DOES_NOT_FIT
        verdict = max(verdict, gpu, key=list(Fit).index)
    return verdict


def _size(nbytes: int | None) -> str:
    return "?" if nbytes is None else byte_size(nbytes, memory=True)
