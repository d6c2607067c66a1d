"""Where the user's Hugging Face access token is kept: the system keyring, or nowhere.

A token opens the user's gated and private repositories, so it never goes into Hearth's
settings files. `keyring` stores it in the platform's secret store (macOS Keychain, Windows
Credential Locker, the Secret Service on Linux desktops). Where there is none (a headless
Linux, or keyring's fail/null backends), the token is held in memory for this session only,
and `save_token` says so, so the GUI can tell the user it will be asked for again
(`secrets.py` keeps it, as it keeps servers' API keys).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import secrets

ACCOUNT = "huggingface-token"


@dataclass(frozen=True)
class TokenSaved:
    persistent: bool  # False: kept in memory until Hearth quits
    message: str


def save_token(token: str) -> TokenSaved:
    """Store the token in the keyring if there is one, else for this session only."""
    if secrets.keep(ACCOUNT, token.strip()):
        return TokenSaved(True, "The access token is saved in the system keyring.")
    return TokenSaved(
        False,
        "No system keyring is available, so the access token is kept only until Hearth quits; "
        "you will be asked for it again next time.",
    )


def load_token() -> str | None:
    """This session's token, else the keyring's, else None."""
    return secrets.read(ACCOUNT)


def forget_token() -> None:
    """Remove the token from the keyring and from memory."""
    secrets.forget(ACCOUNT)
