"""What the remote-model tests of the owner objects and the window share: a keyring that keeps
secrets in memory, and an opener that loads files from a script and servers' models for real.

Files are scripted (tests/support/scripted_backend.py: no llama.cpp, answers at once) because the
local side is not what these tests are about; a remote model goes through Hearth's real
`open_backend`, so it talks HTTP to a real server (llama_cpp.server or the stand-in,
tests/support/remote_servers.py).
"""

from __future__ import annotations

import keyring
import keyring.backends.fail
import pytest

from app.engine.opening import open_backend
from app.engine.types import RemoteModel
from app.library import secrets
from support.memory_keyring import MemoryKeyring
from support.scripted_backend import Script


@pytest.fixture
def memory_keyring(monkeypatch) -> MemoryKeyring:
    """A keyring that works, for the test; this session's keys start empty."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    monkeypatch.setattr(secrets, "_session", {})
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture
def no_keyring(monkeypatch):
    """No keyring at all (a headless Linux): keys live in memory for this session."""
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    monkeypatch.setattr(secrets, "_session", {})
    yield
    keyring.set_keyring(previous)


def mixed_opener(script: Script):
    """A BackendOpener: a server's model for real, a file from `script`."""

    def open_source(source, options, progress=None, cancel=None):
        if isinstance(source, RemoteModel):
            return open_backend(source, options, progress, cancel)
        return script.open(source, options, progress, cancel)

    return open_source
