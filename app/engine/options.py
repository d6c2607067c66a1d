"""The load options, declared once: what each is, how the settings file spells it, its
command-line flag, and whether a change needs a reload; and the one rule that merges what the
user stored, what the model's author recommends and what a command line asks for.

`LOAD_OPTIONS` is the table, one `LoadOption` per field of `LoadOptions`. Everything that
handles load options iterates it instead of listing them again: `ModelSettings.load_options()`
and `needs_reload_from`, the settings file's reading and writing (owners/settings.py), the
load flags of `hearth chat` and `hearth serve` (cli/load_options.py) and the parameters
panel's ranges. A default is declared once, as the `LoadOptions` field's, and `ModelSettings`
takes its defaults from there. The sampling options are declared by `SamplingParams` and
`sampling.BOUNDS`; `SAMPLING_FLAGS` names their flags.

`ModelSettings` names three fields as the settings file always has ("gpu_layers" for
`n_gpu_layers`, "cpu_threads" for `n_threads`); the table's `setting` is that name, so the
file stays byte-compatible with the ones users already have.

`resolve(stored, model_defaults, overrides)` is how the window, `hearth chat` (with and without
--conversation) and `hearth serve` all arrive at a model's settings.

Nothing here imports Qt or llama_cpp.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType

from .sampling import BOUNDS, ModelDefaults, SamplingParams, model_params

DEFAULT_CONTEXT = 4096  # a load without a context length gets the model's own, up to this
MIN_CONTEXT = 64  # below this no chat template and reply fit; llama.cpp fails obscurely at 2
MAX_CONTEXT = 1 << 20  # the longest context Hearth offers a model that does not say its own
MAX_GPU_LAYERS = 999  # the most layers Hearth offers to offload for a model that does not say


def context_for(asked: int | None, trained: int) -> int:
    """The context a load gets: the one asked for, else the model's own (`trained`; 0 when
    it does not say) up to DEFAULT_CONTEXT. The engine loads with it and the plan plans it."""
    return asked or min(trained or DEFAULT_CONTEXT, DEFAULT_CONTEXT)


def context_ceiling(trained: int) -> int:
    """The longest context a model may be asked for: its own, or MAX_CONTEXT when it does not say."""
    return trained or MAX_CONTEXT


def context_problem(asked: int, trained: int) -> str | None:
    """Why a context of `asked` tokens cannot be loaded for a model trained on `trained`
    (0: it does not say), worded to follow the setting's name; None when it can."""
    limit = context_ceiling(trained)
    if MIN_CONTEXT <= asked <= limit:
        return None
    whose = "the model's context length" if trained else "Hearth's limit for a model that does not say"
    return f"must be between {MIN_CONTEXT:,} and {limit:,} ({whose}), not {asked:,}"


def gpu_layer_ceiling(block_count: int) -> int:
    """The most layers a model can offload: its blocks and the output layer llama.cpp also
    offloads, or MAX_GPU_LAYERS when it does not say how many blocks it has."""
    return block_count + 1 if block_count else MAX_GPU_LAYERS


class Word(str, Enum):
    """An enum whose str() and format() are its stored word, on every Python version."""

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


class FlashAttention(Word):
    """Flash attention for a load: llama.cpp's own choice per device (AUTO), or forced."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


class KvCacheType(Word):
    """The element type of the K or V cache. A quantized cache takes about half (Q8_0) or a
    quarter (Q4_0) of F16's memory; a quantized V cache needs flash attention."""

    F16 = "f16"
    Q8_0 = "q8_0"
    Q4_0 = "q4_0"


@dataclass(frozen=True)
class LoadOptions:
    """How to load a model; None always means "let Hearth choose"."""

    n_ctx: int | None = None  # None: the model's own window, capped at DEFAULT_CONTEXT (context_for)
    n_gpu_layers: int | None = None  # None: Auto (memory_plan.auto_gpu_layers; 0 on a CPU build)
    template_override: str | None = None  # None: the model's own template (or its fallback)
    n_threads: int | None = None  # None: one per physical core
    flash_attn: FlashAttention = FlashAttention.AUTO
    kv_type_k: KvCacheType = KvCacheType.F16
    kv_type_v: KvCacheType = KvCacheType.F16
    use_mmap: bool = True  # map the file rather than read it into memory
    use_mlock: bool = False  # lock the weights in RAM (the OS may refuse: a per-user limit)
    # The projector (an mmproj GGUF) that lets the model read images; None: the one found beside
    # the model file (library/projectors.py), if any.
    mmproj: str | None = None


@dataclass(frozen=True)
class LoadOption:
    """One load option: its `LoadOptions` field, its `ModelSettings` field (also its key in
    the settings file), what its value is when set (int, bool, str or a Word enum), its flag
    on `hearth chat` and `hearth serve`, and whether a loaded model must be loaded again for a
    change to apply (a template applies to the next reply).

    A whole number that may be None keeps None in the settings file as `unset` (0, or -1 for
    GPU layers), and a stored number below `least` is not a setting Hearth can load with."""

    name: str
    setting: str
    kind: type
    flag: str | None = None
    help: str = ""
    reloads: bool = True
    least: int | None = None
    unset: int | None = None

    @property
    def default(self):
        """Hearth's choice: the `LoadOptions` field's default."""
        return getattr(LoadOptions(), self.name)

    @property
    def flag_name(self) -> str | None:
        """The flag as a message names it: a switch by both its spellings (--mmap/--no-mmap)."""
        if self.flag is None:
            return None
        return f"{self.flag}/--no-{self.flag.removeprefix('--')}" if self.kind is bool else self.flag

    @property
    def flag_dest(self) -> str | None:
        """The attribute argparse keeps the flag's value in."""
        return self.flag.removeprefix("--").replace("-", "_") if self.flag is not None else None


LOAD_OPTIONS: tuple[LoadOption, ...] = (
    LoadOption("n_ctx", "n_ctx", int, "--ctx", "context length in tokens", least=MIN_CONTEXT, unset=0),
    LoadOption("n_gpu_layers", "gpu_layers", int, "--gpu-layers", "layers to offload (default: all when possible)",
               least=0, unset=-1),
    LoadOption("n_threads", "cpu_threads", int, "--threads", "CPU threads for the model (default: one per physical core)",
               least=1, unset=0),
    LoadOption("flash_attn", "flash_attn", FlashAttention, "--flash-attn",
               "flash attention: auto (llama.cpp decides per device; the default), on or off"),
    LoadOption("kv_type_k", "kv_type_k", KvCacheType, "--kv-type-k", "the K cache type alone (wins over --kv-type)"),
    LoadOption("kv_type_v", "kv_type_v", KvCacheType, "--kv-type-v", "the V cache type alone (wins over --kv-type)"),
    LoadOption("use_mmap", "use_mmap", bool, "--mmap",
               "map the model file (the default) or, with --no-mmap, read it into memory"),
    LoadOption("use_mlock", "use_mlock", bool, "--mlock",
               "lock the weights in RAM so the system cannot page them out (default: off)"),
    LoadOption("mmproj", "mmproj", str, "--mmproj",
               "the projector (mmproj GGUF) that lets the model read images (default: one beside the model file)"),
    LoadOption("template_override", "template_override", str, reloads=False),
)
LOAD_OPTION = {option.name: option for option in LOAD_OPTIONS}

# The sampling flags of `hearth chat`, by SamplingParams field: one per bounded value.
SAMPLING_FLAGS: dict[str, str] = {name: "--" + name.replace("_", "-") for name in BOUNDS}


def sampling_kind(name: str) -> type:
    """What a sampling value is: a count (int) or a fraction (float), as its bounds say."""
    return int if BOUNDS[name].whole else float


@dataclass(frozen=True)
class ModelSettings:
    """Everything a user sets for one model, remembered per model (a temperature or a system
    prompt that suits one model rarely suits another). The load options are `LoadOptions`',
    under the names the settings file uses (LOAD_OPTIONS' `setting`)."""

    sampling: SamplingParams = SamplingParams()
    system_prompt: str = ""
    n_ctx: int | None = LoadOptions.n_ctx
    gpu_layers: int | None = LoadOptions.n_gpu_layers
    cpu_threads: int | None = LoadOptions.n_threads
    template_override: str | None = LoadOptions.template_override
    flash_attn: FlashAttention = LoadOptions.flash_attn
    kv_type_k: KvCacheType = LoadOptions.kv_type_k
    kv_type_v: KvCacheType = LoadOptions.kv_type_v
    use_mmap: bool = LoadOptions.use_mmap
    use_mlock: bool = LoadOptions.use_mlock
    mmproj: str | None = LoadOptions.mmproj

    def load_options(self) -> LoadOptions:
        return LoadOptions(**{option.name: getattr(self, option.setting) for option in LOAD_OPTIONS})

    def needs_reload_from(self, loaded_with: "ModelSettings") -> bool:
        """Whether a model loaded with `loaded_with` must be loaded again for these settings
        to apply (the template and everything else apply to the next reply)."""
        return any(getattr(self, option.setting) != getattr(loaded_with, option.setting)
                   for option in LOAD_OPTIONS if option.reloads)

    def with_changes(self, **changes) -> "ModelSettings":
        return replace(self, **changes)


@dataclass(frozen=True)
class StoredSettings:
    """One model's entry in the settings file, as read: its settings, and whether the user
    ever saved sampling for it (until then it samples with its author's defaults)."""

    settings: ModelSettings = ModelSettings()
    sampling_saved: bool = False


NOTHING_STORED = StoredSettings()  # `hearth chat MODEL` and `hearth serve`: no window's settings


@dataclass(frozen=True)
class Overrides:
    """What a command line asks for over the stored settings: load options by `LoadOptions`
    field, a preset in place of the stored or starting sampling, and sampling values by
    `SamplingParams` field over either."""

    load: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    preset: SamplingParams | None = None
    sampling: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))


def resolve(stored: StoredSettings, model_defaults: ModelDefaults, overrides: Overrides = Overrides()) -> ModelSettings:
    """The settings a model runs with: what the user stored for it; sampling, until the user
    saved some, as the model's author recommends over Hearth's defaults (`model_params`);
    and over both what a command line asks for. Raises SamplingError for a sampling value
    out of range."""
    settings = stored.settings
    starting = settings.sampling if stored.sampling_saved else model_params(model_defaults)
    sampling = (overrides.preset or starting).with_changes(**overrides.sampling)
    load = {LOAD_OPTION[name].setting: value for name, value in overrides.load.items()}
    return replace(settings, sampling=sampling, **load)
