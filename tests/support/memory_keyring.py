"""A keyring that keeps secrets in memory, for tests of what goes to the system keyring (the
Hugging Face token, servers' API keys): keyring ships no such backend."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import keyring
import keyring.backend
from keyring.errors import PasswordDeleteError


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A working keyring backend whose secrets a test can read."""

    priority = 1

    def __init__(self):
        super().__init__()
        self.secrets: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.secrets.get((service, username))

    def set_password(self, service, username, password):
        self.secrets[(service, username)] = password

    def delete_password(self, service, username):
        if self.secrets.pop((service, username), None) is None:
            raise PasswordDeleteError("not stored")


@contextmanager
def in_memory_keyring() -> Iterator[MemoryKeyring]:
    """A MemoryKeyring in place of the machine's for the block: no test reads or writes the
    user's keyring."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)
