"""Which projector (mmproj GGUF) goes with a model file, and whether the two fit together.

A vision model is a language model plus a projector that turns an image into embeddings as
wide as the model's own (engine/gguf/projector.py reads one). llama.cpp's multimodal library
refuses to start a pair whose widths differ, and what it does with a damaged projector is its
own; so a pair is checked here before any load, and a pair that would fail is refused with
both files and both numbers named, in an ImageError (images/image.py): the one way any room
says a model cannot read images.

Where the projector comes from (`projector_for`):

1. The user's choice (LoadOptions.mmproj, `--mmproj`) wins, and is checked like any other.
2. Otherwise the projectors beside the model: the GGUFs in its folder whose names contain
   "mmproj" (any case), and in the Hugging Face cache those at the root of the model's snapshot
   too (a repository may keep its models in folders and its projector at the top). They are
   ranked: the model's own folder before the snapshot's root; then the name sharing the most
   leading words with the model's (quants.name_words, which leaves out "mmproj" and the
   quantizations); then f16, Q8_0, BF16, F32 and the others; then by name
   (quants.projector_order), so the choice never depends on the order a folder lists its files.
   A projector whose words are the model's ("mmproj-gemma-3-4b-it-f16" beside
   "gemma-3-4b-it-Q4_K_M", as repositories and Hearth's downloads name them) is named for it.
   Where any is, the first of those that reads as a vision projector and fits the model is its
   projector, and where none does, why the first cannot is raised: the user meant the model to
   read images with it, and another model's projector is not put in its place. Where none is
   named for it, the first of the others that fits is its projector, or it has none. A folder
   holding several models' projectors thus gives each model its own, and a text model beside
   them none.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from ..common.text import printable
from ..engine.gguf.modelfile import ModelFileError
from ..engine.gguf.projector import ARCHITECTURE, ProjectorInfo, inspect_projector
from ..engine.gguf.reading import inspect_model, model_shape
from ..engine.options import LoadOptions
from ..images.image import ImageError
from .quants import is_projector_name, name_words, projector_order

_SNAPSHOTS = "snapshots"  # the Hugging Face cache: models--org--name/snapshots/<commit>/...
_HF_REPO_PREFIX = "models--"


def is_projector(path: Path) -> bool:
    """Whether the file at `path` is a projector rather than a chat model: its name says mmproj
    (a damaged projector is still one), or its header says it is a clip file."""
    if is_projector_name(path.name):
        return True
    try:
        return inspect_model(path).architecture == ARCHITECTURE
    except ModelFileError:
        return False


def projector_for(model_path: Path, chosen: str | None = None) -> Path | None:
    """The projector to load with the model at `model_path` (the first part of a split model),
    checked to fit it; None where it has none (a text model). `chosen`: the user's choice (a
    path, `~` expanded), which wins. Raises ImageError when the chosen projector, or one named
    for this model beside it, cannot be used (missing, damaged, not a vision projector, made for
    another model), and ModelFileError when the model itself cannot be read."""
    if chosen is not None:
        path = Path(chosen).expanduser()
        if not os.path.lexists(path):
            raise ImageError(f"The projector {printable(str(path), limit=200)} was not found.")
        check_pair(model_path, path)
        return path
    width = _embedding_length(model_path)
    candidates = _beside(model_path)
    named = [path for path in candidates if _names(path, model_path)]
    problem: ImageError | None = None
    for candidate in named or candidates:
        try:
            _check_fits(model_path, _projector(candidate), width)
        except ImageError as exc:
            problem = problem or exc
            continue
        return candidate
    if named:
        raise problem
    return None


def with_projector(model_path: Path, options: LoadOptions) -> LoadOptions:
    """The options with the model's projector as `mmproj`, the file the engine loads with it: the
    one chosen (--mmproj, or the window's setting for the model), else the one found beside it;
    None where it has none, and reads no images. The window, `hearth chat` (with or without
    --conversation) and `hearth serve` all load a file through here. Raises as projector_for."""
    projector = projector_for(model_path, options.mmproj)
    return replace(options, mmproj=str(projector) if projector is not None else None)


def check_pair(model_path: Path, projector_path: Path) -> ProjectorInfo:
    """The projector's header, once it is known to fit the model; ImageError otherwise."""
    info = _projector(projector_path)
    _check_fits(model_path, info, _embedding_length(model_path))
    return info


def _projector(path: Path) -> ProjectorInfo:
    try:
        return inspect_projector(path)
    except ModelFileError as exc:
        raise ImageError(f"The projector can't be used: {exc}") from None


def _embedding_length(model_path: Path) -> int:
    """The model's embedding length from its header (0 where it does not say)."""
    return model_shape(model_path).n_embd


def _check_fits(model_path: Path, projector: ProjectorInfo, width: int) -> None:
    if projector.output_width != width:
        model, file = printable(model_path.name), printable(projector.path.name)
        reads = f"the model's embedding length is {width:,}" if width else "the model does not say its embedding length"
        raise ImageError(
            f"{file} is not the projector of {model}: the projector makes image tokens "
            f"{projector.output_width:,} values wide, and {reads}. "
            "Choose the projector (mmproj file) made for this model.")


def _names(projector: Path, model_path: Path) -> bool:
    """Whether a projector's name says it is the model's: the same words, less "mmproj" and
    the quantizations."""
    return name_words(projector.name) == name_words(model_path.name)


def _beside(model_path: Path) -> list[Path]:
    """The projectors beside the model, best first (the module's docstring says the order)."""
    found: list[tuple[tuple, Path]] = []
    for tier, folder in enumerate(_search_folders(model_path)):
        try:
            names = sorted(entry.name for entry in os.scandir(folder) if entry.is_file())
        except OSError:
            continue
        for name in names:
            if name.lower().endswith(".gguf") and is_projector_name(name):
                found.append(((tier, *projector_order(model_path.name, name)), folder / name))
    return [path for _, path in sorted(found)]


def _search_folders(model_path: Path) -> list[Path]:
    """The model's folder, and in the Hugging Face cache its snapshot's root where that is
    another folder."""
    folders = [model_path.parent]
    for folder in model_path.parents:
        if folder.parent.name == _SNAPSHOTS and folder.parent.parent.name.startswith(_HF_REPO_PREFIX):
            if folder != model_path.parent:
                folders.append(folder)
            break
    return folders
