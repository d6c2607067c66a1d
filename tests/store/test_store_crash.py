"""A process killed mid-reply must leave the conversation and the partial reply intact."""

import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from app.store import ConversationStore

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import os, signal, sys
from app.store import ConversationStore

store = ConversationStore(sys.argv[1])
cid = store.create_conversation(model="tiny.gguf")
store.add_message(cid, "user", "Tell me a story about a lighthouse")
mid = store.add_message(cid, "assistant", "", model="tiny.gguf", params={"seed": 7}, status="streaming")
for text in ("Once", "Once upon", "Once upon a time, a keeper"):
    store.update_partial(mid, text)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_mid_reply_keeps_the_partial_reply(db_path):
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(db_path)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert child.returncode == -signal.SIGKILL, child.stderr

    # What the killed process left: the reply as far as it got, still marked as streaming.
    with closing(sqlite3.connect(db_path)) as raw:
        assert raw.execute("SELECT content, status FROM messages WHERE role = 'assistant'").fetchall() == [
            ("Once upon a time, a keeper", "streaming")
        ]

    with ConversationStore(db_path) as store:
        (conversation,) = store.list_conversations()
        assert conversation.title == "Tell me a story about a lighthouse"
        user, reply = store.messages(conversation.id)
    assert user.content == "Tell me a story about a lighthouse"
    assert (reply.content, reply.status) == ("Once upon a time, a keeper", "cancelled")
    assert reply.stats.stop_reason == "interrupted"
    assert (reply.model, reply.params) == ("tiny.gguf", {"seed": 7})
