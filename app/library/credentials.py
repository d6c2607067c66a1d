"""Where the user's Hugging Face access token is kept: the system keyring, or nowhere.

A token opens the user's gated and private repositories, so it never goes into Hearth's
settings files. `keyring` stores it in the platform's secret store (macOS Keychain, Windows
Credential Locker, the Secret Service on Linux desktops). Where there is none (a headless
Linux, or keyring's fail/null backends), the token is held in memory for this session only,
and `save_token` says so, so the GUI can tell the user it will be asked for again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import keyring
from keyring.errors import KeyringError

SERVICE = "Hearth"
ACCOUNT = "huggingface-token"

_session_lock = threading.Lock()
_session_token: str | None = None


@dataclass(frozen=True)
class TokenSaved:
    persistent: bool  # False: kept in memory until Hearth quits
    message: str


def save_token(token: str) -> TokenSaved:
    """Store the token in the keyring if there is one, else for this session only."""
    global _session_token
    token = token.strip()
    try:
        keyring.set_password(SERVICE, ACCOUNT, token)
        stored = keyring.get_password(SERVICE, ACCOUNT) == token  # the null backend drops it
    except KeyringError:
        stored = False
    with _session_lock:
        _session_token = None if stored else token
    if stored:
        return TokenSaved(True, "The access token is saved in the system keyring.")
    return TokenSaved(
        False,
        "No system keyring is available, so the access token is kept only until Hearth quits; "
        "you will be asked for it again next time.",
    )


def load_token() -> str | None:
    """This session's token, else the keyring's, else None."""
    with _session_lock:
        if _session_token is not None:
            return _session_token
    try:
        return keyring.get_password(SERVICE, ACCOUNT)
    except KeyringError:
        return None


def forget_token() -> None:
    """Remove the token from the keyring and from memory."""
    global _session_token
    with _session_lock:
        _session_token = None
    try:
        keyring.delete_password(SERVICE, ACCOUNT)
    except KeyringError:
        pass  # nothing stored, or no keyring to store it in
