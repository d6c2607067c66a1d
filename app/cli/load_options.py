"""The load flags of `hearth chat` and `hearth serve`: flash attention, the K and V cache types,
mmap and mlock.

    --flash-attn auto|on|off   llama.cpp's own choice per device (auto), or forced
    --kv-type f16|q8_0|q4_0    both caches; --kv-type-k / --kv-type-v set one (and win over it)
    --mmap / --no-mmap         map the file (the default) or read it into memory
    --mlock / --no-mlock       lock the weights in RAM (the OS may refuse: then a note on stderr)

A flag not given leaves the option as it was: Hearth's default, or with `chat --conversation`
the window's setting for the model. A quantized V cache with flash attention off is refused
before anything loads (exit status 2), as llama.cpp cannot build it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ..engine.llama.load_checks import needs_flash_attention
from ..engine.types import FlashAttention, KvCacheType, LoadOptions, ModelDescription
from .args import UsageError

_KV_TYPES = [kind.value for kind in KvCacheType]
_FLAGS = ("--flash-attn", "--kv-type", "--kv-type-k", "--kv-type-v", "--mmap/--no-mmap", "--mlock/--no-mlock")


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--flash-attn", choices=[choice.value for choice in FlashAttention],
                        help="flash attention: auto (llama.cpp decides per device; the default), on or off")
    parser.add_argument("--kv-type", choices=_KV_TYPES,
                        help="the K and V cache type: f16 (the default), q8_0 (about half the memory) or q4_0 "
                             "(about a quarter); a quantized V cache needs flash attention auto or on")
    parser.add_argument("--kv-type-k", choices=_KV_TYPES, help="the K cache type alone (wins over --kv-type)")
    parser.add_argument("--kv-type-v", choices=_KV_TYPES, help="the V cache type alone (wins over --kv-type)")
    parser.add_argument("--mmap", action=argparse.BooleanOptionalAction,
                        help="map the model file (the default) or, with --no-mmap, read it into memory")
    parser.add_argument("--mlock", action=argparse.BooleanOptionalAction,
                        help="lock the weights in RAM so the system cannot page them out (default: off)")


def given_load_flags(args) -> list[str]:
    """The load flags given on this command line, by name."""
    values = (args.flash_attn, args.kv_type, args.kv_type_k, args.kv_type_v, args.mmap, args.mlock)
    return [flag for flag, value in zip(_FLAGS, values) if value is not None]


def load_options_from_args(args, base: LoadOptions) -> LoadOptions:
    """`base` with the load flags given; refuses a quantized V cache with flash attention off."""
    changes: dict = {}
    if args.flash_attn is not None:
        changes["flash_attn"] = FlashAttention(args.flash_attn)
    for field, value in (("kv_type_k", args.kv_type_k or args.kv_type), ("kv_type_v", args.kv_type_v or args.kv_type)):
        if value is not None:
            changes[field] = KvCacheType(value)
    if args.mmap is not None:
        changes["use_mmap"] = args.mmap
    if args.mlock is not None:
        changes["use_mlock"] = args.mlock
    options = dataclasses.replace(base, **changes)
    if needs_flash_attention(options):
        raise UsageError(f"a quantized V cache ({options.kv_type_v}) needs flash attention: "
                         "give --flash-attn auto or on (or --kv-type-v f16)")
    return options


def print_load_notes(description: ModelDescription) -> None:
    """What the load could not do as asked (the OS refused mlock), on stderr."""
    for note in description.load_notes:
        print(f"hearth: note: {note}", file=sys.stderr)


def refuse_load_flags_for_server(args, *others: tuple[str, object]) -> None:
    """A model on a server takes no load options (and none of `others`, flag and value, given)."""
    given = [flag for flag, value in (("--ctx", args.ctx), ("--gpu-layers", args.gpu_layers), *others)
             if value is not None] + given_load_flags(args)
    if given:
        raise UsageError(f"{given[0]} does not apply to a model on a server: the server chose it")
