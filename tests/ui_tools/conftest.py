"""Fixtures for the tool widgets' tests: cards that take decisions at once (the arming delay
has a test of its own), announcements heard, shown, active windows for the keyboard, and a
keyring in memory (tool servers' secrets go to the keyring: never the user's)."""

from __future__ import annotations

import pytest
from support.memory_keyring import in_memory_keyring

from app.ui.chat import tool_card


@pytest.fixture(autouse=True)
def memory_keyring():
    with in_memory_keyring() as backend:
        yield backend


@pytest.fixture(autouse=True)
def armed_at_once(monkeypatch):
    """A decision counts as soon as the card shows (tests press keys right after showing)."""
    monkeypatch.setattr(tool_card, "ARM_MS", 0)


@pytest.fixture
def heard(monkeypatch) -> list[str]:
    """What the cards announce to a screen reader."""
    said: list[str] = []
    monkeypatch.setattr(tool_card, "announce", lambda _widget, text, urgent=False: said.append(text))
    return said
