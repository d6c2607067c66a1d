"""What an embedder is, for everything above the engine: texts in, unit vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """A loaded embedding model. `dims`: the length of its vectors; `max_tokens`: the most tokens
    one text may have (longer ones are cut by the model's own rule, and chunking keeps under it)."""

    dims: int
    max_tokens: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in order: shape (len(texts), dims)."""
        ...

    def count_tokens(self, text: str) -> int:
        """The tokens the model would read for `text` (without its special tokens)."""
        ...

    def close(self) -> None:
        ...


def model_name(path: Path) -> str:
    """What a collection records of the model its vectors come from: the file's name and size, so
    another model that happens to share a file name is not taken for the same one."""
    return f"{path.stem}-{path.stat().st_size}"
