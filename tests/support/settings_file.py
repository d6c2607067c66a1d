"""Settings files as the tests keep them: an INI file of the test's own, read and written the
way Hearth keeps its profile's (Settings.for_profile), never the user's."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

from app.owners.settings import Settings


def ini_file(path: Path | str) -> QSettings:
    """The INI file at `path`, raw: for what a test writes or reads beside Settings, and for a
    second reader of a file that must see what the first wrote out."""
    return QSettings(str(path), QSettings.IniFormat)


def settings_at(path: Path | str) -> Settings:
    """Hearth's Settings over the INI file at `path`."""
    return Settings(ini_file(path))
