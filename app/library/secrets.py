"""Secrets Hearth keeps for the user (the Hugging Face token, servers' API keys): the system
keyring, or this session's memory where there is none.

`keyring` stores a secret in the platform's secret store (macOS Keychain, Windows Credential
Locker, the Secret Service on Linux desktops), under the service "Hearth" and an account per
secret; never in Hearth's settings files. Where there is no keyring (a headless Linux, or
keyring's fail/null backends), a secret is held in memory until Hearth quits, and `keep` says
so, so the GUI can tell the user it will be asked for again.
"""

from __future__ import annotations

import threading

import keyring
from keyring.errors import KeyringError

SERVICE = "Hearth"

_lock = threading.Lock()
_session: dict[str, str] = {}  # account -> a secret the keyring could not keep


def keep(account: str, secret: str) -> bool:
    """Store the secret in the keyring if there is one, else for this session only; whether
    the keyring kept it."""
    try:
        keyring.set_password(SERVICE, account, secret)
        stored = keyring.get_password(SERVICE, account) == secret  # the null backend drops it
    except KeyringError:
        stored = False
    with _lock:
        if stored:
            _session.pop(account, None)
        else:
            _session[account] = secret
    return stored


def read(account: str) -> str | None:
    """This session's secret, else the keyring's, else None."""
    with _lock:
        if account in _session:
            return _session[account]
    try:
        return keyring.get_password(SERVICE, account)
    except KeyringError:
        return None


def forget(account: str) -> None:
    """Remove the secret from the keyring and from memory."""
    with _lock:
        _session.pop(account, None)
    try:
        keyring.delete_password(SERVICE, account)
    except KeyringError:
        pass  # nothing stored, or no keyring to store it in
