"""The load flags of `hearth chat` and `hearth serve`, made from engine/options.py's table:

    --ctx N                    the context length (checked against the model's: check_context)
    --gpu-layers N             layers to offload
    --threads N                CPU threads (`hearth serve` only)
    --flash-attn auto|on|off   llama.cpp's own choice per device (auto), or forced
    --kv-type f16|q8_0|q4_0    both caches; --kv-type-k / --kv-type-v set one (and win over it)
    --mmap / --no-mmap         map the file (the default) or read it into memory
    --mlock / --no-mlock       lock the weights in RAM (the OS may refuse: then a note on stderr)
    --mmproj FILE              the projector that lets the model read images (default: one beside it)

A flag not given leaves the option as it was: Hearth's default, or with `chat --conversation`
the window's setting for the model (options.resolve merges them). A quantized V cache with
flash attention off is refused before anything loads (exit status 2), as llama.cpp cannot
build it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from ..engine.load_checks import needs_flash_attention
from ..engine.options import LOAD_OPTIONS, KvCacheType, LoadOption, Overrides
from ..engine.types import LoadOptions, ModelDescription
from .args import UsageError, sampling_overrides

# One flag for both caches, before the two that set one each (and win over it).
BOTH_CACHES = "--kv-type"
BOTH_CACHES_HELP = ("the K and V cache type: f16 (the default), q8_0 (about half the memory) or q4_0 "
                    "(about a quarter); a quantized V cache needs flash attention auto or on")
BOTH_CACHES_SET = ("kv_type_k", "kv_type_v")


def _flagged(args) -> list[LoadOption]:
    """The table's options whose flag this command has."""
    return [option for option in LOAD_OPTIONS if option.flag is not None and hasattr(args, option.flag_dest)]


def add_load_arguments(parser: argparse.ArgumentParser, leave_out: tuple[str, ...] = ()) -> None:
    """Every load option's flag, but those of the `LoadOptions` fields in `leave_out`."""
    for option in LOAD_OPTIONS:
        if option.flag is None or option.name in leave_out:
            continue
        if option.name == BOTH_CACHES_SET[0]:
            parser.add_argument(BOTH_CACHES, choices=[kind.value for kind in KvCacheType], help=BOTH_CACHES_HELP)
        if option.kind is bool:
            parser.add_argument(option.flag, action=argparse.BooleanOptionalAction, help=option.help)
        elif option.kind is int:
            parser.add_argument(option.flag, type=int, help=option.help)
        elif option.kind is str:
            parser.add_argument(option.flag, metavar="FILE", help=option.help)
        else:
            parser.add_argument(option.flag, choices=[word.value for word in option.kind], help=option.help)


def given_load_flags(args) -> list[str]:
    """The load flags given on this command line, by name, in the order --help lists them."""
    given: list[str] = []
    for option in _flagged(args):
        if option.name == BOTH_CACHES_SET[0] and args.kv_type is not None:
            given.append(BOTH_CACHES)
        if getattr(args, option.flag_dest) is not None:
            given.append(option.flag_name)
    return given


def load_changes(args) -> dict[str, object]:
    """The load options the flags given ask for, by `LoadOptions` field."""
    changes: dict[str, object] = {}
    for option in _flagged(args):
        value = getattr(args, option.flag_dest)
        if value is None and option.name in BOTH_CACHES_SET:
            value = args.kv_type
        if value is not None:
            changes[option.name] = value if option.kind in (int, bool, str) else option.kind(value)
    return changes


def chat_overrides(args) -> Overrides:
    """What `hearth chat`'s flags ask for over the stored settings: --preset, the sampling
    flags and the load flags."""
    return replace(sampling_overrides(args), load=load_changes(args))


def check_loadable(options: LoadOptions) -> None:
    """Refuse a quantized V cache with flash attention off, before anything loads."""
    if needs_flash_attention(options):
        raise UsageError(f"a quantized V cache ({options.kv_type_v}) needs flash attention: "
                         "give --flash-attn auto or on (or --kv-type-v f16)")


def print_load_notes(description: ModelDescription) -> None:
    """What the load could not do as asked (the OS refused mlock), on stderr."""
    for note in description.load_notes:
        print(f"hearth: note: {note}", file=sys.stderr)


def refuse_load_flags_for_server(args, *others: tuple[str, object]) -> None:
    """A model on a server takes no load options (and none of `others`, flag and value, given)."""
    given = given_load_flags(args) + [flag for flag, value in others if value is not None]
    if given:
        raise UsageError(f"{given[0]} does not apply to a model on a server: the server chose it")
