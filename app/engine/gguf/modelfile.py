"""Read and validate a GGUF file's metadata without loading its weights: what Hearth sees of a model.

`reading.inspect_model` is the way in. `model_info` takes the file's walked header
(header.py), refuses the values llama.cpp aborts on (checks.py), and reads what Hearth itself
uses — the chat templates, the special tokens, the author's sampling defaults
(sampling_defaults.py) — into a `ModelInfo`. Any file that fails becomes a `ModelFileError`
whose message is written for the user and names the file (`model_file_errors`).
"""

from __future__ import annotations

import errno
import logging
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gguf.constants import MODEL_ARCH_NAMES, LlamaFileType

from ...common.text import printable
from ..sampling import ModelDefaults
from .checks import LLAMA_MAX_LAYERS, MAX_CONTEXT, check_hyperparameters
from .header import Corrupt, FileVersion, Header, Refused, Truncated
from .metadata import Invalid, Metadata, shown_key
from .sampling_defaults import read_sampling_defaults
from .values import F32, I32, U32_MAX, U64_MAX, VOCABULARY, quote

log = logging.getLogger(__name__)

KNOWN_ARCHITECTURES = frozenset(MODEL_ARCH_NAMES.values())
MAX_TEMPLATE_BYTES = 1 << 20  # real chat templates are a few KB, the largest tens of KB
MAX_TOKEN_BYTES = 256  # a special token's text (real ones are a few characters)

# Token texts that end an assistant turn in the families Hearth supports (their generation
# configs). They count only where the model's own vocabulary marks them as control tokens:
# Gemma and Phi-3 carry "</s>" as an ordinary user-defined token (an HTML tag), and it must
# not end a reply there. The ids always come from the file, never from a table.
END_OF_TURN_TEXTS = (
    "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|end|>", "<|im_end|>",
    "<end_of_turn>", "</s>", "<|endoftext|>", "<eos>", "<|assistant|>",
)

_TOKEN_TYPE_CONTROL, _TOKEN_TYPE_BYTE = 3, 6
_BYTE_TOKENS = frozenset(f"<0x{byte:02X}>" for byte in range(256))  # SentencePiece's byte fallback
_CHAT_TEMPLATE = "tokenizer.chat_template"


class ModelFileError(Exception):
    """A model file that Hearth cannot use; the message is written for the user."""


@dataclass(frozen=True)
class Token:
    id: int
    text: str


@dataclass(frozen=True)
class ModelInfo:
    """What a GGUF file says about itself, read from its header alone."""

    path: Path
    file_size: int
    gguf_version: int
    architecture: str
    name: str
    size_label: str | None
    parameter_count: int
    quantization: str
    context_length: int | None
    block_count: int | None
    chat_template: str | None
    named_chat_templates: dict[str, str]
    tokenizer_model: str | None
    tokenizer_pre: str | None
    add_bos_token: bool | None
    add_space_prefix: bool  # SentencePiece writes a "▁" before the first word of a text
    bos: Token | None
    eos: Token | None
    special_tokens: dict[str, int] = field(repr=False)  # control tokens: text -> id
    end_of_turn: tuple[Token, ...] = ()
    sampling_defaults: ModelDefaults = ModelDefaults()  # its author's, from general.sampling.*
    sampling_ignored: dict[str, str] = field(default_factory=dict)  # general.sampling.* key -> why unused

    @property
    def has_chat_template(self) -> bool:
        return bool(self.chat_template)

    def to_json(self) -> dict:
        """A plain dict for `hearth inspect` and the model picker."""
        return {
            "path": printable(str(self.path), limit=None),
            "file_size": self.file_size,
            "gguf_version": self.gguf_version,
            "architecture": self.architecture,
            "name": self.name,
            "size_label": self.size_label,
            "parameter_count": self.parameter_count,
            "quantization": self.quantization,
            "context_length": self.context_length,
            "block_count": self.block_count,
            "tokenizer_model": self.tokenizer_model,
            "tokenizer_pre": self.tokenizer_pre,
            "add_bos_token": self.add_bos_token,
            "add_space_prefix": self.add_space_prefix,
            "bos_token": _token_json(self.bos),
            "eos_token": _token_json(self.eos),
            "end_of_turn_tokens": [_token_json(t) for t in self.end_of_turn],
            "has_chat_template": self.has_chat_template,
            "chat_template": self.chat_template,
            "named_chat_templates": self.named_chat_templates,
            "sampling_defaults": self.sampling_defaults.values(),
            "sampling_keys_ignored": self.sampling_ignored,
        }


def _token_json(token: Token | None) -> dict | None:
    return None if token is None else {"id": token.id, "text": token.text}



@contextmanager
def model_file_errors(path: Path) -> Iterator[None]:
    """Turn every way reading the file at `path` fails into a ModelFileError that names it."""
    name = printable(path.name)
    try:
        yield
    except Refused as exc:
        raise ModelFileError(f"{name} {exc}") from None
    except Truncated:
        raise ModelFileError(
            f"{name} is truncated: the file ends inside its header. "
            "It was probably not downloaded completely; download it again."
        ) from None
    except Corrupt as exc:
        raise ModelFileError(
            f"{name} is truncated or corrupt: {exc}. If it was downloaded, download it again."
        ) from None
    except Invalid as exc:
        raise ModelFileError(
            f"{name} is corrupt: {exc}. Hearth will not load it; if it was downloaded, download it again."
        ) from None
    except OSError as exc:
        raise ModelFileError(f"Could not read {name}: {exc.strerror or type(exc).__name__}") from None
    except ModelFileError:
        raise
    except Exception:  # a reader bug on one odd file must not become a traceback or a crash report
        log.exception("inspecting %s failed", path)
        raise ModelFileError(f"Hearth could not read {name}: it is damaged in a way Hearth did not expect "
                             "(the log has the details).") from None


def regular_file_size(path: Path, name: str) -> int:
    """The file's size, or a ModelFileError saying why there is no file to read."""
    try:
        status = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise ModelFileError(f"{name} is a link to a file that is not there.") from None
        raise ModelFileError(f"Model file not found: {printable(str(path), limit=200)}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ModelFileError(f"{name} is a symbolic link that leads back to itself (a link loop).") from None
        if exc.errno == errno.EACCES:
            raise ModelFileError(f"Hearth may not read {name} (permission denied).") from None
        raise ModelFileError(f"Could not read {name}: {exc.strerror or type(exc).__name__}") from None
    if not stat.S_ISREG(status.st_mode):
        raise ModelFileError(f"Not a file: {printable(str(path), limit=200)}")
    return status.st_size


def model_info(version: FileVersion, header: Header) -> ModelInfo:
    """What the file at `version`, whose header is `header`, says about itself; raises
    ModelFileError or metadata.Invalid (model_file_errors words the latter)."""
    path, file_size = version.path, version.size
    name = printable(path.name)
    if header.data_size and header.data_start + header.data_size > file_size:
        raise ModelFileError(
            f"{name} is truncated: its weights end at byte {header.data_start + header.data_size:,}, past the end of "
            f"the file ({file_size:,} bytes). Download it again."
        )
    meta = header.metadata
    arch = meta.text("general.architecture")
    if arch is None:
        raise ModelFileError(f"{name} does not say which architecture it is (no general.architecture).")
    if arch not in KNOWN_ARCHITECTURES:
        raise ModelFileError(f"{name} is a {quote(arch)} model, an architecture this version of llama.cpp does not know.")
    if not header.tensors:
        raise ModelFileError(f"{name} holds no weights (it is a vocabulary-only file).")
    if arch != "clip":  # llama.cpp reads no hyperparameters from a vision projector
        check_hyperparameters(meta, arch, {tensor.name for tensor in header.tensors})
    return _what_hearth_reads(path, file_size, header.gguf_version, arch, meta, header.parameter_count)


# --- what Hearth itself reads -------------------------------------------------------------------


def _what_hearth_reads(path: Path, file_size: int, version: int, arch: str, meta: Metadata,
                       parameter_count: int) -> ModelInfo:
    n_tokens = meta.vocabulary_size()
    if n_tokens == 0:  # llama.cpp asserts n_vocab > 0 at the first reply
        raise Invalid(f"its {VOCABULARY} lists no tokens")
    token_types = meta.numbers("tokenizer.ggml.token_type", I32, n_tokens, "32-bit token types")
    meta.numbers("tokenizer.ggml.scores", F32, n_tokens, "32-bit scores")
    meta.strings("tokenizer.ggml.merges")
    tokenizer_model = meta.text("tokenizer.ggml.model")
    vocabulary = meta.vocabulary if n_tokens else None

    special: dict[str, int] = {}
    byte_tokens: set[str] = set()
    if vocabulary is not None and token_types is not None:
        for token_id, token_type in enumerate(token_types):
            if token_type == _TOKEN_TYPE_CONTROL and vocabulary.byte_length(token_id) <= MAX_TOKEN_BYTES:
                special.setdefault(vocabulary[token_id], token_id)
            elif token_type == _TOKEN_TYPE_BYTE and vocabulary.byte_length(token_id) == 6:
                byte_tokens.add(vocabulary[token_id])
    if vocabulary is not None and tokenizer_model == "llama" and len(byte_tokens & _BYTE_TOKENS) < 256:
        # A text with a character the vocabulary lacks falls back to these by name; llama.cpp
        # throws through its C interface where one is missing, which aborts the process.
        raise Invalid(f"its SentencePiece vocabulary lacks {256 - len(byte_tokens & _BYTE_TOKENS)} of the 256 "
                       "byte tokens <0x00>…<0xFF> (llama.cpp stops on text that needs them)")

    def token(key: str) -> Token | None:
        # Out of range is llama.cpp's "bad special token" warning, not an error: it ignores it.
        token_id = meta.integer(key, 0, U64_MAX, what="a token number")
        if token_id is None or vocabulary is None or token_id >= len(vocabulary):
            return None
        if vocabulary.byte_length(token_id) > MAX_TOKEN_BYTES:
            raise Invalid(f"its {shown_key(key)} names a token {vocabulary.byte_length(token_id):,} bytes long "
                           f"(expected at most {MAX_TOKEN_BYTES})")
        return Token(token_id, vocabulary[token_id])

    bos, eos = token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")
    end_of_turn: dict[int, Token] = {}
    for candidate in (token("tokenizer.ggml.eot_token_id"), token("tokenizer.ggml.eom_token_id"), eos):
        if candidate is not None:
            end_of_turn[candidate.id] = candidate
    for text in END_OF_TURN_TEXTS:
        if text in special and special[text] not in end_of_turn:
            # A BOS that doubles as end-of-text (Phi-4's <|endoftext|>) still ends a turn.
            end_of_turn[special[text]] = Token(special[text], text)

    named_templates = {
        key.removeprefix(_CHAT_TEMPLATE + "."): meta.text(key, MAX_TEMPLATE_BYTES)
        for key in meta.keys()
        if key.startswith(_CHAT_TEMPLATE + ".")
    }
    sampling_defaults, sampling_ignored = read_sampling_defaults(meta, printable(path.name))
    return ModelInfo(
        path=path,
        file_size=file_size,
        gguf_version=version,
        architecture=arch,
        name=printable(meta.text("general.name") or path.stem, limit=None),
        size_label=meta.text("general.size_label") or None,
        parameter_count=meta.integer("general.parameter_count", 0, U64_MAX) or parameter_count,
        quantization=_quantization(meta),
        context_length=meta.integer(f"{arch}.context_length", 0, MAX_CONTEXT),
        block_count=meta.integer(f"{arch}.block_count", 0, LLAMA_MAX_LAYERS),
        chat_template=meta.text(_CHAT_TEMPLATE, MAX_TEMPLATE_BYTES) or None,
        named_chat_templates=named_templates,
        tokenizer_model=tokenizer_model,
        tokenizer_pre=meta.text("tokenizer.ggml.pre"),
        add_bos_token=meta.flag("tokenizer.ggml.add_bos_token"),
        # llama.cpp's default for SentencePiece ("llama") vocabularies when the key is absent.
        add_space_prefix=tokenizer_model == "llama" and meta.flag("tokenizer.ggml.add_space_prefix") is not False,
        bos=bos,
        eos=eos,
        special_tokens=special,
        end_of_turn=tuple(end_of_turn.values()),
        sampling_defaults=sampling_defaults,
        sampling_ignored=sampling_ignored,
    )


def _quantization(meta: Metadata) -> str:
    """The file type llama.cpp's quantizer recorded, e.g. 'Q4_K_M'; a newer one is 'unknown'."""
    file_type = meta.integer("general.file_type", 0, U32_MAX)
    if file_type is not None:
        try:
            return LlamaFileType(file_type).name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            pass
    return "unknown"
