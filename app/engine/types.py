"""The values that cross the house: what to load, how, what got loaded, and how a reply went.

Nothing here imports llama_cpp or Qt, so the UI, the store, the command line and any backend
(llama.cpp today, a remote server next) can all speak in these types. Enums are `str`
subclasses whose values are the words the database and JSON exports have always used, so
serializing one is writing its value and nothing else changes on disk.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..common.text import printable
from .gguf.modelfile import ModelInfo

# Load options and a model's settings are declared in options.py; every room names them from here.
from .options import FlashAttention as FlashAttention
from .options import KvCacheType as KvCacheType
from .options import LoadOptions as LoadOptions
from .options import ModelSettings as ModelSettings
from .options import Word
from .sampling import ModelDefaults, SamplingParams, model_params


class StopReason(Word):
    """Why a reply ended."""

    END_OF_TURN = "end_of_turn"
    STOP_STRING = "stop_string"
    TOOL_CALLS = "tool_calls"  # the reply ended with calls for the caller to run
    LENGTH = "length"
    CANCELLED = "cancelled"
    ERROR = "error"
    INTERRUPTED = "interrupted"  # Hearth, or the engine's process, was killed mid-reply

    @property
    def words(self) -> str:
        """How a reply's footer says it."""
        return _STOP_WORDS[self]


_STOP_WORDS = {
    StopReason.END_OF_TURN: "end of turn",
    StopReason.STOP_STRING: "stop string",
    StopReason.TOOL_CALLS: "tool calls",
    StopReason.LENGTH: "length limit",
    StopReason.CANCELLED: "stopped",
    StopReason.ERROR: "error",
    StopReason.INTERRUPTED: "interrupted",
}


class ReplyStatus(Word):
    """Where a stored message stands. A reply is saved as STREAMING while it grows."""

    COMPLETE = "complete"
    STREAMING = "streaming"
    CANCELLED = "cancelled"  # stopped by the user, or cut short by a crash (then INTERRUPTED)
    ERROR = "error"

    @classmethod
    def after(cls, reason: StopReason | None) -> "ReplyStatus":
        """The status a reply is kept with once it ended for `reason`."""
        if reason in (StopReason.CANCELLED, StopReason.INTERRUPTED):
            return cls.CANCELLED
        return cls.ERROR if reason is StopReason.ERROR else cls.COMPLETE


@dataclass(frozen=True)
class OffloadSupport:
    """Which GPU backend this build has, whether it can use it here, and if not, why."""

    backend: str  # "CUDA" (or another GPU backend's name), or "CPU" for a CPU-only build
    gpu: bool  # layers can go to a GPU now
    reason: str | None = None  # why a GPU build runs on the CPU; None when it does not

    def describe(self) -> str:
        if self.gpu:
            return f"{self.backend} build; GPU in use"
        return self.reason or "CPU build"


@dataclass(frozen=True)
class DeviceReport:
    """What llama.cpp sees of this machine's GPUs, asked of the engine's process (the window's
    and the server's processes never load llama.cpp): whether it can offload, and the GPUs'
    memory in bytes (None where it cannot, or sees none)."""

    offload: OffloadSupport
    gpu_total: int | None = None
    gpu_free: int | None = None  # free when asked: after the asking process's own model and context


@dataclass(frozen=True)
class DeviceInfo:
    backend: str  # "CUDA" (or another GPU backend), "CPU", or "remote"
    gpu_layers: int
    total_layers: int
    cpu_threads: int  # generating on the CPU; llama.cpp uses them for layers not offloaded
    server: str | None = None  # the server's name, for a model that runs on a remote server
    reason: str | None = None  # why a GPU build runs on the CPU (devices.offload_support())

    @classmethod
    def remote(cls, server: "ServerConfig") -> "DeviceInfo":
        """A model on a server: what it runs on is the server's business, not Hearth's."""
        return cls("remote", 0, 0, 0, server=server.name)

    def describe(self) -> str:
        if self.server is not None:
            return f"{self.server} (remote)"
        if self.gpu_layers == 0:
            threads = f"{self.cpu_threads} thread{'s' if self.cpu_threads != 1 else ''}"
            return f"CPU ({threads}; {self.reason})" if self.reason else f"CPU ({threads})"
        return f"{self.backend} ({self.gpu_layers}/{self.total_layers} layers)"


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file on this machine: the one kind of model source so far.

    Settings are kept per file name, so a model moved to another folder keeps them.
    """

    path: Path

    @property
    def settings_key(self) -> str:
        return self.path.name

    @property
    def record_name(self) -> str:
        """What a conversation records as the model that wrote a reply: the file name."""
        return self.path.name


def api_key_problem(key: str) -> str | None:
    """Why `key` cannot be an API key, or None. A key travels in an HTTP header, which takes
    visible ASCII only: a pasted newline made the HTTP library refuse the header and quote it,
    key and all, in its error; a non-ASCII key could never match on either side."""
    if any(not "!" <= character <= "~" for character in key):
        return "An API key is letters, digits and punctuation only: no spaces, line breaks or accented letters."
    return None


@dataclass(frozen=True)
class ServerConfig:
    """An OpenAI-compatible server the user added: its address (`http://host:port/v1`, the
    part before `/chat/completions`), the name Hearth shows for it, and its API key if it needs
    one. The key is left out of repr() so it never reaches a log line or a traceback.

    The address is checked and normalised here (spacing and a trailing "/" dropped), so every
    room compares and stores one spelling of it. An empty name becomes the host and port.
    """

    base_url: str
    name: str = ""
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self):
        url = self.base_url.strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"A server address looks like http://host:port/v1, not {printable(self.base_url)!r}")
        if parts.query or parts.fragment:
            raise ValueError(f"A server address has no ?query or #fragment: {printable(self.base_url)!r}")
        if parts.username is not None:
            raise ValueError("A server address carries no user name or password; give the API key separately")
        try:
            parts.port
        except ValueError:
            raise ValueError(f"The port in {printable(self.base_url)!r} is not a port number") from None
        object.__setattr__(self, "base_url", url)
        object.__setattr__(self, "name", self.name.strip() or self.host)
        key = (self.api_key or "").strip() or None
        if key is not None and (problem := api_key_problem(key)):
            raise ValueError(problem)
        object.__setattr__(self, "api_key", key)

    @property
    def host(self) -> str:
        """The host and port ("gpu.lab:8000"): the name of a server the user did not name."""
        return urlsplit(self.base_url).netloc


@dataclass(frozen=True)
class RemoteModel:
    """A model served by an OpenAI-compatible server: the server, and the model's id there
    (as `GET /models` lists it; the server's text, so shown through `printable`).

    Settings are kept per server address and model id, so renaming the server keeps them.
    """

    server: ServerConfig
    model_id: str

    @property
    def settings_key(self) -> str:
        return f"remote:{self.server.base_url}#{self.model_id}"

    @property
    def record_name(self) -> str:
        """What a conversation records as the model that wrote a reply: its id and server."""
        return f"{printable(self.model_id, limit=200)} @ {printable(self.server.name, limit=80)}"


ModelSource = LocalModel | RemoteModel  # what a model is loaded from; opening.open_backend picks by type

# A remote model's template name: the server renders the messages with its own chat template,
# so Hearth's template override does not apply to it.
SERVER_TEMPLATE = "server"


@dataclass(frozen=True)
class ModelDescription:
    """A loaded model, as everything above the engine sees it."""

    source: ModelSource
    info: ModelInfo | None  # the GGUF header; None for a remote model (a server sends none)
    device: DeviceInfo
    n_ctx: int | None  # None: not known (a remote server that does not say)
    template_name: str  # "model", "custom", "fallback:<name>", or SERVER_TEMPLATE
    # SamplingParams fields this model does not apply: never sent to a remote server, or sent
    # once and refused by it (remote/request.py says which and why); () for a local model.
    unsent_fields: tuple[str, ...] = ()
    # What the load could not do as the options asked, for the user (the status bar): the OS
    # refused to lock the weights in RAM (mlock), say. The model loaded all the same.
    load_notes: tuple[str, ...] = ()
    # The projector (mmproj GGUF) loaded with a local model, which lets it read images; None: it reads none.
    projector: Path | None = None

    @property
    def reads_images(self) -> bool:
        """Whether images may be sent to this model: a local model with a projector, or a remote
        one (whether its server reads them is the server's to say, and its refusal is shown)."""
        return self.projector is not None or self.is_remote

    @property
    def is_remote(self) -> bool:
        return isinstance(self.source, RemoteModel)

    @property
    def path(self) -> Path | None:
        """The model file; None for a remote model."""
        return self.source.path if isinstance(self.source, LocalModel) else None

    @property
    def model_defaults(self) -> ModelDefaults:
        """The sampling values the model's author recommends (general.sampling.*); none for a
        server's model (a server sends no file)."""
        return self.info.sampling_defaults if self.info is not None else ModelDefaults()

    @property
    def starting_sampling(self) -> SamplingParams:
        """What this model samples with until someone says otherwise: its author's defaults
        over Hearth's, or Hearth's alone where the file gives none or there is no file."""
        return model_params(self.model_defaults)

    @property
    def location(self) -> str:
        """Where the model is, for a tooltip: the file's path, or the model id at the server."""
        if isinstance(self.source, LocalModel):
            return str(self.source.path)
        return f"{printable(self.source.model_id, limit=200)} at {printable(self.source.server.base_url, limit=200)}"

    @property
    def name(self) -> str:
        """The name the model gives itself ("Gemma 3 270m"), or a remote model's id."""
        if isinstance(self.source, RemoteModel):
            return printable(self.source.model_id, limit=120)
        return self.info.name

    @property
    def record_name(self) -> str:
        """What a conversation records as the model that wrote a reply: the file name, or the
        remote model's id and server."""
        return self.source.record_name


@dataclass
class ReplyStats:
    """What one reply cost and why it ended."""

    prompt_tokens: int = 0
    evaluated_prompt_tokens: int = 0  # prompt tokens not already in the KV cache
    completion_tokens: int | None = 0  # None: not counted (a reply that never started, an old record)
    ttft_s: float = 0.0
    tokens_per_s: float = 0.0
    stop_reason: StopReason | None = StopReason.ERROR  # None: unknown (an imported record)
    dropped_messages: int = 0  # oldest messages left out to fit the context window
    seed: int | None = None
    error: str | None = None

    @classmethod
    def failed(cls, message: str) -> "ReplyStats":
        """A reply that could not start (no model, a template error, a full context…)."""
        return cls(completion_tokens=None, stop_reason=StopReason.ERROR, error=message)

    @classmethod
    def interrupted(cls, message: str) -> "ReplyStats":
        """A reply cut short because what ran the model died: `message` says how (the engine's
        process killed, llama.cpp aborting). Its text so far is kept, as a stopped reply's is."""
        return cls(completion_tokens=None, stop_reason=StopReason.INTERRUPTED, error=message)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["stop_reason"] = self.stop_reason.value if self.stop_reason is not None else None
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "ReplyStats":
        """Read stored statistics, tolerating older records and hand-made imports: a value of
        the wrong type, or a key this version does not know, is left at its default."""
        values = {"completion_tokens": None}
        for name, kind in _STORED_TYPES.items():
            value = _stored_value(data.get(name), kind)
            if value is not None:
                values[name] = value
        reason = data.get("stop_reason")
        values["stop_reason"] = StopReason(reason) if isinstance(reason, str) and reason in StopReason._value2member_map_ else None
        return cls(**values)


def _stored_value(value, kind: type):
    """`value` if it is a sane `kind` (finite, in range, a short text), else None: a huge
    number or a NaN in a hand-made file must not reach the footer's arithmetic."""
    if isinstance(value, bool):
        return None
    if kind is float and isinstance(value, int) and 0 <= value <= MAX_STORED_INT:
        value = float(value)
    if kind is int and isinstance(value, int) and 0 <= value <= MAX_STORED_INT:
        return value
    if kind is float and isinstance(value, float) and math.isfinite(value) and value >= 0:
        return value
    if kind is str and isinstance(value, str):
        return value[:_MAX_STORED_TEXT]
    return None


MAX_STORED_INT = 2**63 - 1  # SQLite's largest integer; counts, times and seeds are never negative
_MAX_STORED_TEXT = 2_000  # an error message, never a novel
_STORED_TYPES = {
    "prompt_tokens": int, "evaluated_prompt_tokens": int, "completion_tokens": int, "ttft_s": float,
    "tokens_per_s": float, "dropped_messages": int, "seed": int, "error": str,
}
