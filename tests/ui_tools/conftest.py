"""Fixtures for the tool widgets' tests: cards that take decisions at once (the arming delay
has a test of its own), announcements heard, and shown, active windows for the keyboard."""

from __future__ import annotations

import pytest

from app.ui.chat import tool_card


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
