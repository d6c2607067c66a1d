"""Refuse the hyperparameters llama.cpp aborts on, before it sees them.

A model file is untrusted input. llama.cpp trusts its hyperparameters and stops the whole
process (a failed `GGML_ASSERT`, SIGABRT) on some it cannot use: no layers, a NaN epsilon,
an unknown RoPE scaling type, more experts than it supports. So the limits llama.cpp
asserts on are checked here, through `Metadata`'s typed accessors (metadata.py), and
llama.cpp never sees a file that fails: it is reported like any other corrupt file, in a
line that names it.
"""

from __future__ import annotations

from .metadata import Invalid, Metadata, shown_key
from .values import U32_MAX, quote

# What the bundled llama.cpp asserts on. Each was checked by loading a file with a value just
# past it (tests/engine/test_hostile_models.py builds them); revisit when llama-cpp-python
# is upgraded.
LLAMA_MAX_LAYERS = 512
LLAMA_MAX_EXPERTS = 1024
ROPE_SCALING_TYPES = frozenset({"none", "linear", "yarn", "longrope"})
MAX_CONTEXT = 2**31 - 1  # llama-cpp-python reads the training context as a C int
MAX_WIDTH = 1 << 20  # embedding, feed-forward, head sizes and head counts: real ones are < 65536
_ATTENTION_WEIGHTS = ("attn_q", "attn_k", "attn_v", "attn_qkv")  # blk.N.<name>.weight


def check_hyperparameters(meta: Metadata, arch: str, tensor_names: set[bytes]) -> None:
    """Refuse the values llama.cpp aborts on (and their obvious neighbours) before it sees them.

    Absent keys are llama.cpp's to refuse (it says which, without aborting); these are the
    present ones that would get past it to an assertion, at load or at the first reply.
    """
    def key(suffix: str) -> str:
        return f"{arch}.{suffix}"

    meta.integer(key("context_length"), 1, MAX_CONTEXT)
    n_embd = meta.integer(key("embedding_length"), 1, MAX_WIDTH)
    n_layer = meta.integer(key("block_count"), 1, LLAMA_MAX_LAYERS, what=f"1 to {LLAMA_MAX_LAYERS} layers")
    meta.integer(key("vocab_size"), 0, U32_MAX)
    for epsilon in ("attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "attention.group_norm_epsilon"):
        meta.number(key(epsilon), 0.0, above=True)  # NaN or negative: GGML_ASSERT(eps >= 0)
    for base in ("rope.freq_base", "rope.freq_base_swa"):
        meta.number(key(base), 0.0, above=True)
    for factor in ("rope.scaling.factor", "rope.scale_linear", "rope.scaling.attn_factor"):
        meta.number(key(factor), 0.0)
    scaling = meta.text(key("rope.scaling.type"))
    if scaling is not None and scaling not in ROPE_SCALING_TYPES:
        raise Invalid(f"its {shown_key(key('rope.scaling.type'))} is {quote(scaling)} "
                       f"(expected one of {', '.join(sorted(ROPE_SCALING_TYPES))})")
    _check_experts(meta, key)
    if n_layer is not None:
        _check_attention(meta, key, n_layer, n_embd, tensor_names)


def _check_experts(meta: Metadata, key) -> None:
    """llama.cpp's mixture-of-experts assertions, in the order it makes them."""
    n_expert = meta.integer(key("expert_count"), 0, LLAMA_MAX_EXPERTS,
                            what=f"at most {LLAMA_MAX_EXPERTS:,} experts") or 0
    used = meta.integer(key("expert_used_count")) or 0
    groups = meta.integer(key("expert_group_count")) or 0
    groups_used = meta.integer(key("expert_group_used_count")) or 0
    if n_expert == 0:
        for suffix, value in (("expert_used_count", used), ("expert_group_count", groups)):
            if value:
                raise meta.invalid(key(suffix), "expected 0: the model has no experts")
        return
    if not 1 <= used <= n_expert:
        raise meta.invalid(key("expert_used_count"), f"expected 1 to {n_expert:,}, its expert count")
    if groups >= n_expert:
        raise meta.invalid(key("expert_group_count"), f"expected fewer than its {n_expert:,} experts")
    if groups > 1:
        if n_expert % groups:
            raise meta.invalid(key("expert_group_count"), f"expected a divisor of its {n_expert:,} experts")
        if not 0 < groups_used < groups:
            raise meta.invalid(key("expert_group_used_count"), f"expected 1 to {groups - 1:,}")


def _check_attention(meta: Metadata, key, n_layer: int, n_embd: int | None, tensor_names: set[bytes]) -> None:
    """Head counts and sizes, per layer where the file gives them per layer."""
    meta.per_layer(key("feed_forward_length"), n_layer, MAX_WIDTH)
    heads = meta.per_layer(key("attention.head_count"), n_layer, MAX_WIDTH)
    kv_heads = meta.per_layer(key("attention.head_count_kv"), n_layer, MAX_WIDTH) or heads
    for layer, (n_head, n_kv) in enumerate(zip(heads or (), kv_heads or ())):
        if n_head and (n_kv == 0 or n_head % n_kv):  # grouped-query attention shares K/V heads evenly
            raise Invalid(f"its {shown_key(key('attention.head_count_kv'))} is {n_kv:,} in layer {layer}, "
                           f"which does not divide its {n_head:,} attention heads")
        if not n_head and any(f"blk.{layer}.{w}.weight".encode() in tensor_names for w in _ATTENTION_WEIGHTS):
            # llama.cpp shapes the weights by layer 0 and the graph by each layer: a failed assert
            raise Invalid(f"its {shown_key(key('attention.head_count'))} gives layer {layer} no attention heads, "
                           "but the layer holds attention weights")
    key_length = meta.integer(key("attention.key_length"), 1, MAX_WIDTH)
    meta.integer(key("attention.value_length"), 1, MAX_WIDTH)
    key_length_swa = meta.integer(key("attention.key_length_swa"), 1, MAX_WIDTH)
    meta.integer(key("attention.value_length_swa"), 1, MAX_WIDTH)
    # llama.cpp sizes heads by the first layer's head count; with none it uses no RoPE at all.
    if not heads or heads[0] == 0:
        return
    head_size = key_length or (n_embd // heads[0] if n_embd else None)
    _check_rope_dimensions(meta, key("rope.dimension_count"), head_size, rotates_whole_head=True)
    _check_rope_dimensions(meta, key("rope.dimension_count_swa"), key_length_swa or head_size, rotates_whole_head=False)


def _check_rope_dimensions(meta: Metadata, key: str, head_size: int | None, rotates_whole_head: bool) -> None:
    """RoPE rotates pairs of values within a head: an odd count, or more than the head holds,
    fails a GGML_ASSERT at the first reply, and 0 makes it never return. Without the key,
    llama.cpp rotates the whole head, so then the head size itself must be even."""
    rotated = meta.integer(key, 0, U32_MAX)
    if rotated is None:
        if rotates_whole_head and head_size is not None and (head_size == 0 or head_size % 2):
            raise Invalid(f"its attention heads are {head_size:,} values wide, which RoPE cannot rotate "
                           "(expected an even size)")
        return
    if rotated == 0 or rotated % 2 or (head_size is not None and rotated > head_size):
        limit = f" up to the head size, {head_size:,}" if head_size else ""
        raise meta.invalid(key, f"expected an even number{limit}")
