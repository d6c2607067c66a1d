"""Where the API keys of remote servers are kept: the system keyring, or nowhere.

A server's key is a secret like the Hugging Face token (`credentials.py`), kept the same way:
in the platform's secret store under the service "Hearth" and the account "server:<address>",
never in Hearth's settings file (which keeps only the server's name and address). Where there
is no keyring (a headless Linux, keyring's fail/null backends), a key is held in memory for
this session only, and `save_key` says so, so the GUI can tell the user.

One key per server address, so renaming a server keeps its key, and a key is looked up by the
normalised address `ServerConfig` gives.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import secrets


@dataclass(frozen=True)
class KeySaved:
    persistent: bool  # False: kept in memory until Hearth quits
    message: str


def account(base_url: str) -> str:
    """The keyring account a server's key is kept under."""
    return f"server:{base_url}"


def save_key(base_url: str, key: str) -> KeySaved:
    """Keep the server's key in the keyring if there is one, else for this session only."""
    if secrets.keep(account(base_url), key.strip()):
        return KeySaved(True, "The API key is saved in the system keyring.")
    return KeySaved(False, "No system keyring is available, so the API key is kept only until Hearth quits; "
                    "you will need to add the server again with its key next time.")


def load_key(base_url: str) -> str | None:
    """This session's key for the server, else the keyring's, else None (no key)."""
    return secrets.read(account(base_url))


def forget_key(base_url: str) -> None:
    """Remove the server's key from the keyring and from memory."""
    secrets.forget(account(base_url))
