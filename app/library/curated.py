"""Hearth's suggestions: a short list of small, well-known instruct models to start with.

A new user facing Hugging Face's hundreds of thousands of repositories needs a few good
answers to "which model?", and needs them offline too; so they are kept in a data file that
ships with Hearth (`resources/curated_models.json`) and read here into typed entries. The file
is data, not code: anything wrong in it (a missing field, a size that is not a number, a
repository id that is not owner/name) is a `CuratedListError` saying which entry and what,
which the window shows in place of the list.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, fields
from pathlib import Path

FILE_NAME = "curated_models.json"
_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


class CuratedListError(Exception):
    """The suggestions file is missing or malformed; the message says where, for people."""


@dataclass(frozen=True)
class CuratedModel:
    """One suggested model: where to get it, and what it needs and is."""

    name: str  # for people: "Qwen3 1.7B"
    repo_id: str  # owner/name of a public GGUF repository on Hugging Face
    file: str  # the recommended file in it
    quant: str  # its quantization, as in the file name: "Q4_K_M"
    size_bytes: int  # about how big the file is (the fit check needs no more)
    parameters_billions: float
    context_length: int  # tokens the model was trained for
    licence: str
    summary: str  # one line: what it is good for

    @property
    def parameters(self) -> str:
        """0.6 -> "0.6B", 4.0 -> "4B"."""
        return f"{self.parameters_billions:g}B"


_TYPES: dict[str, type] = {field.name: field.type for field in fields(CuratedModel)}
_PYTHON_TYPES = {"str": str, "int": int, "float": (int, float)}
_WORDS = {"str": "text", "int": "whole number", "float": "number"}


def resources_dir() -> Path:
    """`resources/` in the source tree, or inside a PyInstaller bundle."""
    bundled = getattr(sys, "_MEIPASS", None)
    return Path(bundled) / "resources" if bundled else Path(__file__).resolve().parents[2] / "resources"


def load_curated(path: Path | None = None) -> list[CuratedModel]:
    """The suggested models, in the file's order. Raises CuratedListError if the file is missing,
    is not JSON, or has an entry with a missing, extra or wrongly typed field."""
    path = path or resources_dir() / FILE_NAME
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CuratedListError(f"The list of suggested models ({path}) can't be read: {exc.strerror or exc}.") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CuratedListError(f"The list of suggested models ({path}) is not valid JSON: {exc}.") from exc
    entries = document.get("models") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise CuratedListError(f"The list of suggested models ({path}) has no \"models\" list.")
    return [_entry(number, raw, path) for number, raw in enumerate(entries, start=1)]


def _entry(number: int, raw: object, path: Path) -> CuratedModel:
    where = f"Suggested model {number} in {path}"
    if not isinstance(raw, dict):
        raise CuratedListError(f"{where} is not an object of named fields.")
    missing = sorted(set(_TYPES) - set(raw))
    unknown = sorted(set(raw) - set(_TYPES))
    if missing or unknown:
        problems = ([f"lacks {', '.join(missing)}"] if missing else []) + (
            [f"has unknown fields {', '.join(unknown)}"] if unknown else [])
        raise CuratedListError(f"{where} {' and '.join(problems)}.")
    for name, type_name in _TYPES.items():
        value = raw[name]
        wanted = _PYTHON_TYPES[type_name]
        if isinstance(value, bool) or not isinstance(value, wanted):
            raise CuratedListError(f"{where}: {name} should be a {_WORDS[type_name]}, not {value!r}.")
    model = CuratedModel(**raw)
    if not _REPO_ID.match(model.repo_id):
        raise CuratedListError(f"{where}: repo_id {model.repo_id!r} is not owner/name.")
    if not model.file.lower().endswith(".gguf") or "/" in model.file:
        raise CuratedListError(f"{where}: file {model.file!r} is not the name of a .gguf file.")
    if model.size_bytes <= 0 or model.context_length <= 0 or model.parameters_billions <= 0:
        raise CuratedListError(f"{where}: its size, parameters and context length must be above zero.")
    return model
