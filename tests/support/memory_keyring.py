"""A keyring that keeps secrets in memory, for tests of what goes to the system keyring (the
Hugging Face token, servers' API keys): keyring ships no such backend."""

from __future__ import annotations

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
