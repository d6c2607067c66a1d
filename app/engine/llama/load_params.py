"""llama.cpp's load parameters from LoadOptions, and what llama.cpp made of them.

`Llama.__init__` builds its model and context parameters and loads at once, with no hook in
between, and it says flash attention only on or off: its `flash_attn=False` default turns
llama.cpp's own Auto off. So for the duration of a load `loading()` wraps two llama.cpp entry
points: `llama_model_default_params`, to give the model loader a progress callback that can
abort, and `llama_init_from_model`, to create the context with the flash attention asked for
(Auto included). The K and V cache types, mmap and mlock are `Llama` arguments
(`llama_arguments`).

What llama.cpp applied is read from its log, the only place it says it: whether flash
attention ended up on ("flash_attn = enabled" as the context is made, or, for Auto, "Flash
Attention enabled" / "not supported, set to disabled" once it has looked at the devices), and
whether the OS refused mlock ("failed to mlock ...": llama.cpp warns and loads on).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from llama_cpp import Llama
from llama_cpp import llama_cpp as llama_c

from ..types import FlashAttention, KvCacheType, LoadOptions
from . import log_shim as llama_log

_GGML_TYPES = {
    KvCacheType.F16: llama_c.GGML_TYPE_F16,
    KvCacheType.Q8_0: llama_c.GGML_TYPE_Q8_0,
    KvCacheType.Q4_0: llama_c.GGML_TYPE_Q4_0,
}
_FLASH_ATTN_TYPES = {
    FlashAttention.AUTO: llama_c.LLAMA_FLASH_ATTN_TYPE_AUTO,
    FlashAttention.ON: llama_c.LLAMA_FLASH_ATTN_TYPE_ENABLED,
    FlashAttention.OFF: llama_c.LLAMA_FLASH_ATTN_TYPE_DISABLED,
}
# llama.cpp's log lines that say what it applied (llama-context.cpp, llama-mmap.cpp).
_FLASH_ATTN_SET = re.compile(r"\bflash_attn\s*=\s*(enabled|disabled)\b")
_FLASH_ATTN_RESOLVED = re.compile(r"\bFlash Attention (enabled|not supported)")
_MLOCK_REFUSED = re.compile(r"\bfailed to (?:mlock|VirtualLock)\b")

_patch_lock = threading.Lock()  # one load at a time patches llama.cpp's entry points


@dataclass
class LoadReport:
    """What llama.cpp said it applied during one load."""

    flash_attn: bool | None = None  # None: it did not say (then the options tell, unless Auto)
    mlock_refused: bool = False


def llama_arguments(options: LoadOptions) -> dict:
    """`Llama` keyword arguments for the cache types, mmap and mlock."""
    return {
        "type_k": _GGML_TYPES[options.kv_type_k],
        "type_v": _GGML_TYPES[options.kv_type_v],
        "use_mmap": options.use_mmap,
        "use_mlock": options.use_mlock,
    }


@contextlib.contextmanager
def loading(options: LoadOptions, on_progress: Callable[[float], bool]) -> Iterator[LoadReport]:
    """Around `Llama(...)`: the loader reports progress to `on_progress` (False aborts the
    load), the context gets the flash attention asked for, and the report that is yielded is
    filled from llama.cpp's log as it loads."""

    @llama_c.llama_progress_callback
    def progress(fraction: float, _user_data) -> bool:
        try:
            return bool(on_progress(fraction))
        except Exception:  # an exception must never cross back into C: abort instead
            return False

    report = LoadReport()
    default_params = llama_c.llama_model_default_params
    init_from_model = llama_c.llama_init_from_model
    flash_attn_type = _FLASH_ATTN_TYPES[options.flash_attn]

    def params_with_progress():
        params = default_params()
        params.progress_callback = progress
        return params

    def init_with_flash_attn(model, params):
        params.flash_attn_type = flash_attn_type
        return init_from_model(model, params)

    with _patch_lock, _reading_log(report):
        llama_c.llama_model_default_params = params_with_progress
        llama_c.llama_init_from_model = init_with_flash_attn
        try:
            yield report
        finally:
            llama_c.llama_model_default_params = default_params
            llama_c.llama_init_from_model = init_from_model
    if report.flash_attn is None and options.flash_attn is not FlashAttention.AUTO:
        report.flash_attn = options.flash_attn is FlashAttention.ON


def record_applied(llm: Llama, report: LoadReport) -> None:
    """Write the flash attention llama.cpp applied into `llm.context_params`, the record of how
    the context was made (kv_seq.cache_layout reads it): Auto there would not say whether V is
    stored transposed, and a state saved one way must never be restored into the other."""
    if report.flash_attn is not None:
        llm.context_params.flash_attn_type = _FLASH_ATTN_TYPES[FlashAttention.ON if report.flash_attn
                                                               else FlashAttention.OFF]


@contextlib.contextmanager
def _reading_log(report: LoadReport) -> Iterator[None]:
    """Read every llama.cpp log line while the block runs, into `report`. Lines below the level
    the log was at are read too (lowered to INFO for the block), then dropped as before."""
    logger = llama_log.logger
    passing = logger.getEffectiveLevel()
    saved_level = logger.level

    def read(record: logging.LogRecord) -> bool:
        line = record.getMessage()
        if match := _FLASH_ATTN_SET.search(line):
            report.flash_attn = match.group(1) == "enabled"
        elif match := _FLASH_ATTN_RESOLVED.search(line):
            report.flash_attn = match.group(1) == "enabled"
        elif _MLOCK_REFUSED.search(line):
            report.mlock_refused = True
        return record.levelno >= passing

    logger.addFilter(read)
    if passing > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(saved_level)
        logger.removeFilter(read)
