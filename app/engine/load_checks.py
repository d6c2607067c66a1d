"""What a load's options may not ask for, and what to tell the user when the OS refuses one.

Qt-free and llama_cpp-free, so the window can check a combination as the user picks it, the
command line before it loads, and the engine before llama.cpp sees it. llama.cpp itself fails
a quantized V cache with flash attention off with "Failed to create llama_context", after the
weights are read: that is the one combination refused here, with a message that says what to
change. With flash attention on Auto, llama.cpp turns it on for a quantized V cache before it
looks at the devices ("enabling flash_attn since it is required for quantized V cache"), so
Auto loads (measured on the CPU build; a GPU without the kernel has the operation scheduled on
the CPU, as any operation a backend lacks).
"""

from __future__ import annotations

from ..common.units import byte_size
from .gguf.modelfile import ModelFileError
from .types import FlashAttention, KvCacheType, LoadOptions


class LoadOptionsError(ModelFileError):
    """A combination of load options llama.cpp cannot load; the message says what to change.
    A ModelFileError, so every place that shows a failed load shows it as written."""


def needs_flash_attention(options: LoadOptions) -> bool:
    """Whether the options ask for a quantized V cache with flash attention off, which llama.cpp
    refuses to build ("quantized V cache requires flash_attn to be enabled")."""
    return options.kv_type_v is not KvCacheType.F16 and options.flash_attn is FlashAttention.OFF


def load_options_problem(options: LoadOptions) -> str | None:
    """Why these options cannot load, in the window's words; None when they can."""
    if needs_flash_attention(options):
        return (f"A quantized V cache ({options.kv_type_v}) needs flash attention: "
                "set Flash attention to Auto or On")
    return None


def check_load_options(options: LoadOptions) -> None:
    """Raise LoadOptionsError, before anything is read, for options that cannot load."""
    problem = load_options_problem(options)
    if problem is not None:
        raise LoadOptionsError(problem)


def mlock_refused_note(model_bytes: int, limit_bytes: int | None) -> str:
    """What the user is told when the OS refused to lock the weights in RAM. The model still
    loads (llama.cpp only warns): it may be paged out under memory pressure, as without mlock.

    `limit_bytes`: how much this user may lock (RLIMIT_MEMLOCK), None where unknown or unlimited.
    """
    allowed = (f"this user may lock {byte_size(limit_bytes, memory=True)} (RLIMIT_MEMLOCK) and the model takes {byte_size(model_bytes, memory=True)}"
               if limit_bytes is not None else "the system refused to lock it")
    return (f"Could not lock the model in RAM (mlock): {allowed}. It is loaded without the lock, so the system "
            "may page it out. To lock it, raise the limit (ulimit -l, or memlock in /etc/security/limits.conf).")


def memlock_limit() -> int | None:
    """How many bytes this process may lock in RAM (RLIMIT_MEMLOCK's soft limit); None where the
    limit is unknown (no POSIX resource module: Windows) or unlimited. A process with
    CAP_IPC_LOCK (root) locks past it: llama.cpp's warning, not this, says whether mlock failed."""
    try:
        import resource
    except ImportError:
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return None if soft == resource.RLIM_INFINITY else soft


def flash_attention_for(options: LoadOptions, offloaded_layers: int) -> FlashAttention:
    """What Auto asks llama.cpp for. Where layers run on a GPU, or a quantized V cache needs
    it, llama.cpp's own Auto; on the CPU with an F16 cache, Off. Measured on this CPU (Gemma 3
    270M, one thread): flash attention is no faster there (149 vs 150 prompt tokens/s, 31.8
    vs 33.5 decode), and the logits of a prompt evaluated again after a reply was cut from the
    cache moved by up to 1.02 with it (0.07 without), so a Regenerate with a fixed seed would
    not give the same reply. On and Off are passed on as they are."""
    if (options.flash_attn is FlashAttention.AUTO and offloaded_layers == 0
            and options.kv_type_v is KvCacheType.F16):
        return FlashAttention.OFF
    return options.flash_attn
