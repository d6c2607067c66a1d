"""Where Hearth keeps things, in one place.

User data follows Qt's per-user standard locations. Models and the database go in the
*local* (non-roaming) data location because models are gigabytes. Setting HEARTH_HOME puts
everything under one folder instead: the self-test and the test suite use it so they never
touch a user's real conversations or settings.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QStandardPaths

from ..library.homes import ModelHomes

APP_NAME = "Hearth"
QCoreApplication.setApplicationName(APP_NAME)


def _home_override() -> Path | None:
    value = os.environ.get("HEARTH_HOME")
    return Path(value) if value else None


def _standard(location: QStandardPaths.StandardLocation) -> Path:
    return Path(QStandardPaths.writableLocation(location))


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    home = _home_override()
    return _ensure(home / "data" if home else _standard(QStandardPaths.AppLocalDataLocation))


def config_dir() -> Path:
    home = _home_override()
    return _ensure(home / "config" if home else _standard(QStandardPaths.AppConfigLocation))


def log_dir() -> Path:
    home = _home_override()
    return _ensure(home / "logs" if home else _standard(QStandardPaths.StateLocation) / "logs")


def cache_dir() -> Path:
    """Things Hearth can rebuild, and that the system may clear."""
    home = _home_override()
    return _ensure(home / "cache" if home else _standard(QStandardPaths.CacheLocation))


def user_models_dir() -> Path:
    return _ensure(data_dir() / "models")


def database_path() -> Path:
    return data_dir() / "conversations.sqlite3"


def served_responses_path() -> Path:
    """Where `hearth serve` keeps the responses /v1/responses may continue: a conversation
    database of its own beside the window's, because an agent that sends its whole history
    every turn would otherwise add a conversation to the user's list at every request (OpenAI
    keeps API responses apart from its chat history for the same reason)."""
    return data_dir() / "served-responses.sqlite3"


def documents_index_path() -> Path:
    """The user's documents, chunked and embedded (documents/index.py): a file of its own,
    which can always be rebuilt from the documents, apart from the conversations."""
    return data_dir() / "documents.sqlite3"


def embedding_models_dir() -> Path:
    """Where the default embedding model is converted to GGUF on first use (it can be again);
    in a bundle, the folder it ships in, converted at build time: a bundle has no package to
    convert from (engine/embedding/default_model.py)."""
    if getattr(sys, "frozen", False):
        return app_embedding_models_dir()
    return _ensure(cache_dir() / "embedding-models")


def app_embedding_models_dir() -> Path:
    """`embedding-models/` beside a bundled `hearth`, where `make bundle` puts the default embedding
    model's GGUF: not in `models/`, whose every GGUF the model picker lists as a model to chat with."""
    return Path(sys.executable).resolve().parent / "embedding-models"


# The file a running Hearth locks in its data folder (ui/app/single_instance.py); the command line's
# conversation commands test it before touching the database.
INSTANCE_LOCK_FILE = "hearth.lock"


def app_models_dir() -> Path:
    """The `models/` folder that ships with Hearth: beside the bundle, or in the source tree."""
    if getattr(sys, "frozen", False):
        return Path(sys.executable).resolve().parent / "models"
    return Path(__file__).resolve().parents[2] / "models"


def model_homes() -> ModelHomes:
    """Hearth's own models folders, for the library (which takes them as arguments)."""
    return ModelHomes(shipped=app_models_dir(), user=user_models_dir())


def default_model() -> Path | None:
    """The embedded default model, assembled into Hearth's own folders on first use (None: its
    package is not installed and no bundle ships it)."""
    from ..library.default_model import ensure_default_model

    return ensure_default_model(model_homes())
