"""Token storage: the keyring where one exists, this session's memory where none does."""

from __future__ import annotations

import keyring
import keyring.backends.fail
import keyring.backends.null
import pytest
from support.memory_keyring import MemoryKeyring

from app.library import credentials, secrets


@pytest.fixture
def use_backend():
    previous = keyring.get_keyring()

    def install(backend):
        keyring.set_keyring(backend)
        return backend

    yield install
    credentials.forget_token()
    keyring.set_keyring(previous)


def test_a_keyring_keeps_the_token_across_sessions(use_backend, monkeypatch):
    backend = use_backend(MemoryKeyring())

    saved = credentials.save_token(" hf_secret \n")

    assert saved.persistent and "keyring" in saved.message
    assert backend.secrets == {(secrets.SERVICE, credentials.ACCOUNT): "hf_secret"}
    monkeypatch.setattr(secrets, "_session", {})  # as after a restart
    assert credentials.load_token() == "hf_secret"
    credentials.forget_token()
    assert credentials.load_token() is None and backend.secrets == {}


@pytest.mark.parametrize("backend", [keyring.backends.fail.Keyring, keyring.backends.null.Keyring])
def test_without_a_keyring_the_token_lives_for_this_session_only(use_backend, backend, monkeypatch):
    use_backend(backend())

    saved = credentials.save_token("hf_secret")

    assert not saved.persistent
    assert "No system keyring" in saved.message and "until Hearth quits" in saved.message
    assert credentials.load_token() == "hf_secret"
    monkeypatch.setattr(secrets, "_session", {})  # as after a restart
    assert credentials.load_token() is None
