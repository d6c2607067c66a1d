"""`hearth conversations list | export | import` and `hearth chat --conversation`, run as a user
runs them (`python -m app …` in a subprocess) on a real database under a HEARTH_HOME of their
own: with the real Gemma, and with the stand-in server where a reply must stall on cue (a
kill, a Ctrl+C) or the exact history sent must be read."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QLockFile
from support.remote_servers import stand_in  # noqa: F401 - a fixture
from support.settings_file import settings_at

from app.engine.sampling import PRESETS, SamplingParams
from app.engine.types import ModelSettings, ReplyStats, ReplyStatus, StopReason
from app.store import ConversationStore
from app.ui.app.single_instance import SingleInstance

ROOT = Path(__file__).resolve().parents[1]
GEMMA = "gemma-3-270m-q4_k_m.gguf"
IN_USE = "Hearth is running with this data folder"


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


def database(home: Path) -> Path:
    (home / "data").mkdir(parents=True, exist_ok=True)
    return home / "data" / "conversations.sqlite3"


def hearth(home: Path, *args, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, cwd=ROOT,
                            timeout=300, env={**os.environ, "HEARTH_HOME": str(home)})
    if check and result.returncode != 0:
        raise AssertionError(result.stderr.decode())
    return result


def start(home: Path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "app", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT, env={**os.environ, "HEARTH_HOME": str(home)})


def add_reply(store: ConversationStore, conversation_id: int, text: str, model: str = GEMMA) -> int:
    reply = store.add_message(conversation_id, "assistant", "", model=model, status=ReplyStatus.STREAMING)
    store.finish_message(reply, text, ReplyStats(prompt_tokens=9, completion_tokens=3, stop_reason=StopReason.END_OF_TURN))
    return reply


def build_tree(home: Path) -> tuple[int, list[int]]:
    """A conversation with versions at two levels: "Hi" answered twice, the second answer
    followed by a question asked in three versions, the last one answered; the branch shown
    runs Hi → Hey. → v3 → its answer. Returns its id and that branch's message ids."""
    with ConversationStore(database(home)) as store:
        cid = store.create_conversation(model=GEMMA, system_prompt="Be brief.")
        hi = store.add_message(cid, "user", "Hi")
        add_reply(store, cid, "Hello!")
        hey = store.add_version(store.leaf_message(cid).id, "Hey.", model=GEMMA)
        first = store.add_message(cid, "user", "Version one?")
        store.add_version(first, "Version two?")
        third = store.add_version(first, "Version three?")
        answer = add_reply(store, cid, "Three it is.")
        return cid, [hi, hey, third, answer]


def branch(home: Path, conversation_id: int) -> list:
    with ConversationStore(database(home)) as store:
        return store.messages(conversation_id)


def last_reply_row(home: Path, conversation_id: int) -> sqlite3.Row | None:
    """The conversation's newest reply as it is on disk, read without opening the store (which
    would recover it)."""
    conn = sqlite3.connect(f"{database(home).resolve().as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM messages WHERE role = 'assistant' AND conversation_id = ? ORDER BY id DESC LIMIT 1",
                            (conversation_id,)).fetchone()
    finally:
        conn.close()


def row_counts(home: Path) -> tuple[int, int]:
    """How many conversations and messages the database holds, the trash included."""
    conn = sqlite3.connect(f"{database(home).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT (SELECT COUNT(*) FROM conversations), (SELECT COUNT(*) FROM messages)").fetchone()
    finally:
        conn.close()


def wait_for_partial_save(home: Path, conversation_id: int, text: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        row = last_reply_row(home, conversation_id)
        if row is not None and row["content"] == text:
            assert row["status"] == "streaming"
            return
        time.sleep(0.05)
    raise AssertionError(f"no partial save of {text!r}: {process.poll()=}")


# --- list, export, import -------------------------------------------------------------------------


def test_list_is_a_table_or_one_json_array_counting_the_branch_shown(home):
    cid, _ = build_tree(home)
    with ConversationStore(database(home)) as store:
        other = store.create_conversation(title="Colours\x1b[31m", model="stand-in @ lab")
        store.add_message(other, "user", "Red?")
        trashed = store.create_conversation(title="Gone")
        store.delete(trashed)
        listed = store.list_conversations()
    data = json.loads(hearth(home, "conversations", "list", "--json").stdout)
    assert [row["id"] for row in data] == [other, cid]  # most recently active first, not the trash
    assert data[1] == {"id": cid, "title": "Hi", "created_at": listed[1].created_at,
                       "updated_at": listed[1].updated_at, "messages": 4, "model": GEMMA}
    assert data[0]["messages"] == 1 and data[0]["title"] == "Colours\x1b[31m"
    table = hearth(home, "conversations", "list").stdout.decode()
    header, newer, older = table.splitlines()
    assert header.split() == ["ID", "UPDATED", "(UTC)", "MESSAGES", "MODEL", "TITLE"]
    assert newer.split()[0] == str(other) and newer.endswith("Colours�[31m")
    assert "\x1b" not in table  # the title's escape does not reach the terminal
    assert older.split()[0] == str(cid) and older.split()[3:] == ["4", GEMMA, "Hi"]
    assert (newer.index("stand-in @ lab"), newer.index("Colours")) == (header.index("MODEL"), header.index("TITLE"))


def test_export_and_import_round_trip_the_whole_tree_and_the_branch_shown(home, tmp_path):
    cid, shown = build_tree(home)
    exported = hearth(home, "conversations", "export", cid).stdout
    out = tmp_path / "backup.json"
    assert hearth(home, "conversations", "export", cid, "--format", "json", "--out", out).stdout == b""
    assert out.read_bytes() == exported
    data = json.loads(exported)
    assert data["version"] == 5 and len(data["messages"]) == 7
    imported = hearth(home, "conversations", "import", out)
    new = int(imported.stdout)
    assert imported.stdout == f"{new}\n".encode() and new != cid and imported.stderr == b""
    assert json.loads(hearth(home, "conversations", "export", new).stdout) == data
    contents = [(m.role, m.content, m.version, m.versions) for m in branch(home, new)]
    assert contents == [(m.role, m.content, m.version, m.versions) for m in branch(home, cid)] == [
        ("user", "Hi", 1, 1), ("assistant", "Hey.", 2, 2), ("user", "Version three?", 3, 3),
        ("assistant", "Three it is.", 1, 1)]
    assert [m.id for m in branch(home, cid)] == shown


def test_export_markdown_writes_the_branch_shown(home, tmp_path):
    cid, _ = build_tree(home)
    text = hearth(home, "conversations", "export", cid, "--format", "md").stdout.decode()
    assert text.startswith("# Hi\n") and "Be brief." in text
    assert "Hey." in text and "Version three?" in text and "*version 3 of 3*" in text
    assert "Hello!" not in text and "Version one?" not in text
    assert "3 messages on other branches" in text
    out = tmp_path / "hi.md"
    hearth(home, "conversations", "export", cid, "--format", "md", "--out", out)
    assert out.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("command", [
    ["conversations", "export", "{id}"],
    ["conversations", "export", "{id}", "--format", "md", "--out", "{out}"],
    ["chat", "--conversation", "{id}", "Hello?"],
])
def test_a_missing_or_trashed_conversation_is_one_clear_line(home, tmp_path, command):
    with ConversationStore(database(home)) as store:
        trashed = store.create_conversation(title="Gone")
        store.delete(trashed)
    out = tmp_path / "never.md"
    for missing, said in ((trashed + 1, f"There is no conversation {trashed + 1}."),
                          (trashed, f"There is no conversation {trashed} (it is in the trash).")):
        result = hearth(home, *[a.format(id=missing, out=out) for a in command], check=False)
        assert result.returncode == 1 and result.stdout == b""
        assert result.stderr.decode().strip() == f"hearth: error: {said}"
    assert not out.exists()


def test_a_bad_import_adds_nothing(home, tmp_path):
    build_tree(home)
    before = row_counts(home)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "hearth.conversation", "version": 2, "conversation": {"title": "x"},
                               "messages": [{"parent": 5, "role": "user", "content": "?"}]}))
    result = hearth(home, "conversations", "import", bad, check=False)
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.decode().startswith("hearth: error:") and "Traceback" not in result.stderr.decode()
    assert row_counts(home) == before == (1, 7)


def test_beside_a_running_hearth_reading_and_importing_leave_its_reply_alone_and_chat_refuses(home, tmp_path):
    cid, _ = build_tree(home)
    with ConversationStore(database(home)) as store:
        writing = store.add_message(cid, "user", "And now?")
        reply = store.add_message(cid, "assistant", "So far", model=GEMMA, status=ReplyStatus.STREAMING)
    backup = tmp_path / "backup.json"
    lock = QLockFile(str(home / "data" / "hearth.lock"))  # as the window holds it
    assert lock.tryLock(0)
    try:
        assert json.loads(hearth(home, "conversations", "list", "--json").stdout)[0]["messages"] == 6
        backup.write_bytes(hearth(home, "conversations", "export", cid).stdout)
        assert json.loads(backup.read_bytes())["messages"][-1]["status"] == "streaming"
        imported = hearth(home, "conversations", "import", backup)
        assert "Hearth is running" in imported.stderr.decode()
        refused = hearth(home, "chat", "--conversation", cid, "--model", ROOT / "models" / GEMMA, "Hi", check=False)
        assert refused.returncode == 1 and refused.stdout == b""
        assert refused.stderr.decode().strip() == (
            f"hearth: error: {IN_USE} ({home / 'data'}, process {os.getpid()}); close it first, "
            "or continue the conversation in its window.")
        row = last_reply_row(home, cid)
        assert (row["id"], row["parent_id"], row["status"]) == (reply, writing, "streaming")
    finally:
        lock.unlock()
    # Nobody holds the folder: the reply was cut off, and reading finds it so, as the window would.
    hearth(home, "conversations", "list")
    row = last_reply_row(home, cid)
    assert (row["id"], row["status"], json.loads(row["stats_json"])["stop_reason"]) == (reply, "cancelled", "interrupted")
    with ConversationStore(database(home)) as store:  # the import's copy was never 'streaming'
        copy = store.messages(int(imported.stdout))[-1]
    assert (copy.content, copy.status) == ("So far", ReplyStatus.CANCELLED)


# --- chat --conversation ------------------------------------------------------------------------


def test_chat_continues_the_branch_shown_with_its_last_model_and_stores_it_as_the_window_does(home, gemma_path):
    cid, shown = build_tree(home)
    greedy = ["--preset", "Precise", "--max-tokens", "6", "--stats", "json"]
    first = hearth(home, "chat", "--conversation", cid, "What is the capital of France?", *greedy)
    stats = json.loads(first.stderr.decode().splitlines()[-1])
    after = branch(home, cid)
    assert [m.id for m in after[:4]] == shown and len(after) == 6  # below the branch shown
    question, reply = after[4:]
    assert (question.role, question.content, question.parent_id, question.model) == (
        "user", "What is the capital of France?", shown[-1], None)
    assert (reply.role, reply.model, reply.status, reply.parent_id) == ("assistant", GEMMA, ReplyStatus.COMPLETE, question.id)
    assert reply.params == PRESETS["Precise"].with_changes(max_tokens=6).to_dict()
    assert first.stdout.decode() == reply.content + "\n" and reply.content.strip()
    assert reply.stats.prompt_tokens == stats["prompt_tokens"] and stats["completion_tokens"] == 6
    again = hearth(home, "chat", "--conversation", cid, "And of Spain?", *greedy)
    later = json.loads(again.stderr.decode().splitlines()[-1])
    # The second prompt holds the first exchange: it grew by more than the new question. The
    # first call saved the conversation's KV state as it closed, so the second, a new process,
    # reads only the new question (and the turn markers around it).
    assert later["prompt_tokens"] > stats["prompt_tokens"] + stats["completion_tokens"] + 4
    assert stats["evaluated_prompt_tokens"] == stats["prompt_tokens"]
    assert 0 < later["evaluated_prompt_tokens"] < 30
    assert [m.content for m in branch(home, cid)[4:]] == [
        "What is the capital of France?", reply.content, "And of Spain?", again.stdout.decode()[:-1]]


def test_chat_without_a_model_file_to_continue_with_says_to_pass_one(home):
    with ConversationStore(database(home)) as store:
        cid = store.create_conversation(model="deleted-since.gguf")
        store.add_message(cid, "user", "Hi")
    result = hearth(home, "chat", "--conversation", cid, "Still there?", check=False)
    assert result.returncode == 1 and result.stdout == b""
    err = result.stderr.decode().strip()
    assert err == (f"hearth: error: conversation {cid} was last answered by deleted-since.gguf, which is not a "
                   "model file in Hearth's model folders: pass --model MODEL.gguf")
    assert len(branch(home, cid)) == 1  # nothing stored


def test_chat_arguments_say_which_form_they_take(home):
    two = hearth(home, "chat", "--conversation", "1", "model.gguf", "Hi", check=False)
    assert two.returncode == 2 and "the only argument is the message" in two.stderr.decode()
    none = hearth(home, "chat", check=False)
    assert none.returncode == 2 and "give a MODEL.gguf (or --model MODEL, or --conversation ID)" in none.stderr.decode()


def test_on_a_server_the_history_sent_is_the_branch_shown_with_the_windows_settings(home, stand_in):  # noqa: F811
    url = stand_in.url("ok")
    with ConversationStore(database(home)) as store:
        cid = store.create_conversation(system_prompt="Be brief.")
        store.add_message(cid, "user", "Hi")
        add_reply(store, cid, "Old answer.")
        store.add_version(store.leaf_message(cid).id, "Shown answer.")
    window_settings = settings_at(home / "config" / "hearth.ini")
    window_settings.save_model_settings(f"remote:{url}#stand-in", ModelSettings(sampling=SamplingParams(temperature=0.3)))
    window_settings.sync()
    chat = ["chat", "--conversation", cid, "--server", url, "--model", "stand-in"]
    assert hearth(home, *chat, "First?").stdout == b"Hello there.\n"
    assert hearth(home, *chat, "Second?", "--system", "Be kind.", "--preset", "Creative").stdout == b"Hello there.\n"
    first, second = (request.body for request in stand_in.requests if request.body)
    assert first["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                                 {"role": "assistant", "content": "Shown answer."}, {"role": "user", "content": "First?"}]
    assert second["messages"] == [{"role": "system", "content": "Be kind."}, *first["messages"][1:],
                                  {"role": "assistant", "content": "Hello there."}, {"role": "user", "content": "Second?"}]
    assert (first["temperature"], second["temperature"]) == (0.3, PRESETS["Creative"].temperature)
    replies = [m for m in branch(home, cid) if m.role == "assistant"][1:]
    assert [(m.model, m.params["temperature"], m.stats.prompt_tokens) for m in replies] == [
        (f"stand-in @ 127.0.0.1:{stand_in.port}", 0.3, 11), (f"stand-in @ 127.0.0.1:{stand_in.port}", 1.0, 11)]
    with ConversationStore(database(home)) as store:
        assert store.get_conversation(cid).system_prompt == "Be kind."  # kept, as the window keeps it


def test_a_killed_chat_leaves_its_partial_reply_found_interrupted(home, stand_in):  # noqa: F811
    with ConversationStore(database(home)) as store:
        cid = store.create_conversation()
    process = start(home, "chat", "--conversation", cid, "--server", stand_in.url("stall-mid"), "--model", "stand-in", "Hi")
    try:
        wait_for_partial_save(home, cid, "Hello there", process)  # the server has gone silent: saved on time
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    reply = branch(home, cid)[-1]  # this open recovers it
    assert (reply.content, reply.status, reply.stats.stop_reason) == (
        "Hello there", ReplyStatus.CANCELLED, StopReason.INTERRUPTED)
    after = hearth(home, "chat", "--conversation", cid, "--model", home / "missing.gguf", "Hi", check=False)
    assert after.returncode == 1 and IN_USE not in after.stderr.decode()  # its lock died with it


def test_ctrl_c_stops_the_reply_and_keeps_it_as_stopped(home, stand_in):  # noqa: F811
    with ConversationStore(database(home)) as store:
        cid = store.create_conversation()
    process = start(home, "chat", "--conversation", cid, "--server", stand_in.url("stall-mid"), "--model", "stand-in",
                    "Hi", "--stats", "json")
    try:
        wait_for_partial_save(home, cid, "Hello there", process)
        assert not SingleInstance(home / "data").acquire()  # a window started now finds Hearth running
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130 and out == b"Hello there\n"
    assert json.loads(err.decode().splitlines()[-1])["stop_reason"] == "cancelled"
    reply = last_reply_row(home, cid)
    assert (reply["content"], reply["status"]) == ("Hello there", "cancelled")
    assert json.loads(reply["stats_json"])["stop_reason"] == "cancelled"


def test_a_reader_that_goes_away_stops_the_printing_not_the_stored_reply(home, stand_in):  # noqa: F811
    with ConversationStore(database(home)) as store:
        cid = store.create_conversation()
    process = start(home, "chat", "--conversation", cid, "--server", stand_in.url("ok"), "--model", "stand-in", "Hi")
    process.stdout.close()  # like `| head` having read its fill
    _, err = process.communicate(timeout=60)
    assert process.returncode == 141 and err == b""
    reply = branch(home, cid)[-1]
    assert (reply.content, reply.status) == ("Hello there.", ReplyStatus.COMPLETE)
