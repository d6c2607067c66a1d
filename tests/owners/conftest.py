"""The owner objects' tests keep secrets in a keyring in memory, never the user's."""

from __future__ import annotations

import pytest
from support.memory_keyring import in_memory_keyring


@pytest.fixture(autouse=True)
def memory_keyring():
    with in_memory_keyring() as backend:
        yield backend
