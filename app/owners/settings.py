"""Every key Hearth keeps in its settings file, in one place, read and written as typed values.

The file is an INI file in the config location (so a HEARTH_HOME profile is self-contained).
Nothing else in Hearth names a key: widgets and owner objects ask this class for a
`ModelSettings`, a path or a list of paths. Values are checked on the way in, because the file
is the user's to edit by hand: anything unreadable falls back to its default and is logged.

The per-model load options are read and written as engine/options.py's table declares them,
in the spellings that predate the typed values, so old files still read: the context length
and thread count store 0 for "automatic", GPU layers store -1 for "all" (None in
`ModelSettings`); flash attention and the K and V cache types their words ("auto", "q8_0"),
mmap and mlock true / false. A number Hearth cannot load with (a context under 64 tokens) is
ignored and logged like any unreadable value.

Remote servers are kept by name and address only: an API key is a secret, kept in the system
keyring (`library/server_keys.py`), never in this file. Likewise "Serve the loaded model" keeps
the host, port and web pages' origins it last served with, never its API key (asked for each
time it is needed).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from ..engine.kv.cache import DEFAULT_DISK_BUDGET
from ..engine.options import LOAD_OPTIONS, LoadOption, StoredSettings, resolve
from ..engine.sampling import ModelDefaults, SamplingParams
from ..engine.types import (
    LocalModel,
    ModelSettings,
    ModelSource,
    RemoteModel,
    ServerConfig,
)
from ..serve.origins import check_origin
from . import paths
from .document_settings import DocumentSettings
from .tool_settings import ToolSettings

log = logging.getLogger(__name__)

LAST_MODEL = "models/last"  # a file's path, or a remote model's settings_key ("remote:URL#ID")
SERVERS = "servers/saved"  # JSON: [{"name", "base_url"}], in the order they were added
EXTRA_FOLDERS = "models/extra_folders"
EXTRA_FILES = "models/extra_files"
WINDOW_GEOMETRY = "window/geometry"
WINDOW_SPLITTER = "window/splitter"
APPEARANCE = "window/appearance"
SERVE_HOST = "serve/host"
SERVE_PORT = "serve/port"
SERVE_ORIGINS = "serve/cors_origins"  # the origins whose web pages may call it, as check_origin gives them
MODEL_SETTINGS = "model_settings"
SAVED_STATE_BUDGET = "cache/saved_state_budget_mb"  # megabytes of disk for conversations' KV states
MB = 1024**2


class Appearance(StrEnum):
    """The window's colours: as the system is set, or always light, or always dark."""

    SYSTEM = "system"
    LIGHT = "light"
    DARK = "dark"


@dataclass(frozen=True)
class ServeAddress:
    """Where "Serve the loaded model" listens: this machine only, on 8080, unless the user
    chose otherwise (port 0: any free port)."""

    host: str = "127.0.0.1"
    port: int = 8080


class Settings:
    """Hearth's settings file. One per profile; `sync()` writes it out."""

    def __init__(self, store: QSettings):
        self._store = store
        self.tools = ToolSettings(store)  # tool servers (secrets in the keyring), the step limit, approvals
        self.documents = DocumentSettings(store)  # the embedding model, sources per reply, default collections

    @classmethod
    def for_profile(cls) -> "Settings":
        return cls(QSettings(str(paths.config_dir() / "hearth.ini"), QSettings.IniFormat))

    def sync(self) -> None:
        self._store.sync()

    # --- per-model settings ----------------------------------------------------------------------

    def stored_settings(self, key: str) -> StoredSettings:
        """What is stored for one model (key: its file name), with defaults for whatever is not,
        and whether sampling was ever saved for it (options.resolve decides what it samples
        with until then)."""
        store = self._store
        store.beginGroup(_model_group(key))
        try:
            sampling, saved = SamplingParams(), False
            stored = store.value("sampling")
            if stored:
                try:
                    sampling, saved = SamplingParams.from_dict(json.loads(stored)), True
                except (ValueError, TypeError, AttributeError) as exc:  # hand-edited or older: defaults
                    log.warning("ignoring stored sampling parameters for %s: %s", key, exc)
            load = {option.setting: _read_option(store, option, key) for option in LOAD_OPTIONS}
            settings = ModelSettings(sampling=sampling, system_prompt=str(store.value("system_prompt", "") or ""), **load)
            return StoredSettings(settings, saved)
        finally:
            store.endGroup()

    def model_settings(self, key: str, model_defaults: ModelDefaults = ModelDefaults()) -> ModelSettings:
        """The settings one model runs with, as options.resolve merges what is stored with
        its author's sampling defaults (`model_defaults`; Hearth's where it gives none)."""
        return resolve(self.stored_settings(key), model_defaults)

    def save_model_settings(self, key: str, settings: ModelSettings) -> None:
        store = self._store
        store.beginGroup(_model_group(key))
        try:
            store.setValue("sampling", json.dumps(settings.sampling.to_dict()))
            store.setValue("system_prompt", settings.system_prompt)
            for option in LOAD_OPTIONS:
                _write_option(store, option, getattr(settings, option.setting))
        finally:
            store.endGroup()

    # --- models --------------------------------------------------------------------------------

    @property
    def last_source(self) -> ModelSource | None:
        """The model loaded last: a file, or a saved server's model, without its API key (the
        keyring has it). None when nothing was loaded yet, or the server was removed since."""
        value = str(self._store.value(LAST_MODEL) or "")
        if not value.startswith(_REMOTE):
            return LocalModel(Path(value)) if value else None
        base_url, _, model_id = value.removeprefix(_REMOTE).partition("#")  # an address has no "#"
        server = next((server for server in self.servers if server.base_url == base_url), None)
        return RemoteModel(server, model_id) if server is not None and model_id else None

    @last_source.setter
    def last_source(self, source: ModelSource) -> None:
        self._store.setValue(LAST_MODEL, source.settings_key if isinstance(source, RemoteModel) else str(source.path))

    # --- remote servers --------------------------------------------------------------------------

    @property
    def servers(self) -> list[ServerConfig]:
        """The OpenAI-compatible servers the user added, without their API keys. An entry that
        is not a server's name and address (a hand edit) is skipped and logged."""
        stored = self._store.value(SERVERS)
        try:
            entries = json.loads(stored) if stored else []
        except (TypeError, ValueError) as exc:
            log.warning("ignoring the stored servers: %s", exc)
            return []
        servers: list[ServerConfig] = []
        for entry in entries if isinstance(entries, list) else []:
            try:
                server = ServerConfig(str(entry["base_url"]), str(entry.get("name") or ""))
            except (TypeError, KeyError, AttributeError, ValueError) as exc:
                log.warning("ignoring a stored server %r: %s", entry, exc)
                continue
            if all(known.base_url != server.base_url for known in servers):
                servers.append(server)
        return servers

    @servers.setter
    def servers(self, servers: list[ServerConfig]) -> None:
        self._store.setValue(SERVERS, json.dumps([{"name": server.name, "base_url": server.base_url}
                                                  for server in servers]))

    @property
    def extra_folders(self) -> list[Path]:
        """Folders the user added to the model list."""
        return [Path(p) for p in self._strings(EXTRA_FOLDERS)]

    @extra_folders.setter
    def extra_folders(self, folders: list[Path]) -> None:
        self._store.setValue(EXTRA_FOLDERS, [str(p) for p in folders])

    @property
    def extra_files(self) -> list[Path]:
        """Single model files the user added to the model list."""
        return [Path(p) for p in self._strings(EXTRA_FILES)]

    @extra_files.setter
    def extra_files(self, files: list[Path]) -> None:
        self._store.setValue(EXTRA_FILES, [str(p) for p in files])

    def _strings(self, key: str) -> list[str]:
        """A list setting; INI files hand back one item as a plain string and none as nothing."""
        value = self._store.value(key, [])
        if isinstance(value, str):
            return [value] if value else []
        return [str(item) for item in value or []]

    # --- the window ----------------------------------------------------------------------------

    def window_state(self) -> tuple[QByteArray | None, QByteArray | None]:
        """The main window's saved geometry and splitter state, where there are any."""
        return self._store.value(WINDOW_GEOMETRY), self._store.value(WINDOW_SPLITTER)

    def save_window_state(self, geometry: QByteArray, splitter: QByteArray) -> None:
        self._store.setValue(WINDOW_GEOMETRY, geometry)
        self._store.setValue(WINDOW_SPLITTER, splitter)

    @property
    def appearance(self) -> Appearance:
        """Light, dark or the system's (View → Appearance); System when unset or unreadable."""
        value = str(self._store.value(APPEARANCE, Appearance.SYSTEM.value) or "")
        try:
            return Appearance(value.lower())
        except ValueError:
            log.warning("ignoring stored appearance %r", value)
            return Appearance.SYSTEM

    @appearance.setter
    def appearance(self, choice: Appearance) -> None:
        self._store.setValue(APPEARANCE, choice.value)

    # --- conversations' saved KV states ----------------------------------------------------------

    @property
    def saved_state_budget(self) -> int:
        """Bytes of disk the saved KV states may take (0: none are kept on disk); the default
        when unset or unreadable."""
        default_mb = DEFAULT_DISK_BUDGET // MB
        megabytes = _int(self._store.value(SAVED_STATE_BUDGET), default_mb)
        if megabytes < 0:
            log.warning("ignoring stored saved-state budget %r", megabytes)
            megabytes = default_mb
        return megabytes * MB

    @saved_state_budget.setter
    def saved_state_budget(self, budget: int) -> None:
        self._store.setValue(SAVED_STATE_BUDGET, budget // MB)

    # --- serving the loaded model ----------------------------------------------------------------

    @property
    def serve_address(self) -> ServeAddress:
        """The host and port Hearth last served at; the defaults when unset or unreadable."""
        default = ServeAddress()
        host = str(self._store.value(SERVE_HOST, "") or "").strip() or default.host
        port = _int(self._store.value(SERVE_PORT), default.port)
        if not 0 <= port <= 65_535:
            log.warning("ignoring stored serve port %r", port)
            port = default.port
        return ServeAddress(host, port)

    @serve_address.setter
    def serve_address(self, address: ServeAddress) -> None:
        self._store.setValue(SERVE_HOST, address.host)
        self._store.setValue(SERVE_PORT, address.port)

    @property
    def serve_origins(self) -> tuple[str, ...]:
        """The web pages' origins it last let call it (none by default: no page of any site).
        Not secret, unlike its API key. One that is not an origin (a hand edit) is skipped and
        logged: offered again, it would only stop Serve until the user deleted it."""
        origins = []
        for stored in self._strings(SERVE_ORIGINS):
            try:
                origins.append(check_origin(stored))
            except ValueError as exc:
                log.warning("ignoring a stored CORS origin: %s", exc)
        return tuple(dict.fromkeys(origins))

    @serve_origins.setter
    def serve_origins(self, origins: tuple[str, ...]) -> None:
        self._store.setValue(SERVE_ORIGINS, list(origins))


_REMOTE = "remote:"  # how a RemoteModel's settings_key starts


def _model_group(key: str) -> str:
    # QSettings treats "/" and "\" as group separators; a file name has neither on its own.
    return f"{MODEL_SETTINGS}/" + key.replace("/", "_").replace("\\", "_")


def _read_option(store: QSettings, option: LoadOption, key: str):
    """The stored value of one load option as its kind makes it, or its default where it is
    unset or unreadable (logged). A whole number's `unset` spelling reads as None."""
    value = store.value(option.setting)
    if value is None or (option.kind is str and not value):
        return option.default
    try:
        if option.kind is str:
            return str(value)
        if option.kind is bool:
            return _bool(value)
        if option.kind is int:
            number = int(value)
            if number == option.unset:
                return None
            if option.least is not None and number < option.least:
                raise ValueError(f"below {option.least}")
            return number
        return option.kind(str(value).lower())
    except (TypeError, ValueError):
        log.warning("ignoring stored %s %r for %s", option.setting, value, key)
        return option.default


def _write_option(store: QSettings, option: LoadOption, value) -> None:
    """One load option as the file has always spelled it: None as the `unset` number, a word
    as its text, a switch as true / false; an unset text (a template override) not at all."""
    if option.kind is str:
        if value:
            store.setValue(option.setting, value)
        else:
            store.remove(option.setting)
    elif option.kind is int:
        store.setValue(option.setting, option.unset if value is None else value)
    elif option.kind is bool:
        store.setValue(option.setting, value)
    else:
        store.setValue(option.setting, value.value)


def _bool(value) -> bool:
    """A stored switch: an INI file hands back "true" / "false" as text; ValueError otherwise."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"not a switch: {value!r}")


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
