import pytest

from app.store import ConversationStore


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "conversations.sqlite3"


@pytest.fixture
def store(db_path):
    with ConversationStore(db_path) as opened:
        yield opened
