"""No reply is lost by any sequence of Send / Regenerate / Edit / Stop / Show a version /
Delete a version / Undo / Branch from here: random sequences of them, driven through ChatSession
over a real SQLite file and the engine thread (scripted replies), are checked after every step
against a pure-Python model of the tree (tests/support/version_tree_model.py).

After every step, for every conversation: export_json's tree equals the model's live messages
(role, content, status, parent, the message shown last); messages() equals the model's branch
shown (ids, parents, versions); every reply that ever finished is live in the store or inside
a deleted version not undone, with its text kept. A stopped reply is kept as its own version,
cancelled, with what it had said. At the end the file is opened again and checked the same way.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.version_tree_model import Deletion, TreeModel

from app.owners.chat_session import ChatSession
from app.owners.replies import FinishedReply
from app.store import ConversationStore, DeletedVersion

WAIT_MS = 5_000
STEPS = 60
WORDS = ("river", "sea", "delta", "stone", "lamp", "owl", "map", "bread", "salt", "rain")


class Hold:
    """Script.hold for a reply to be stopped: true, and the scripted backend reads it right after
    its first word, so it also says when that word was said (the bridge passes text on in
    coalesced chunks, so no chunk arrives before the stop)."""

    def __init__(self) -> None:
        self.reached = threading.Event()

    def __bool__(self) -> bool:
        self.reached.set()
        return True


@dataclass(frozen=True)
class Finished:
    """A reply as it ended: the text and status the store must keep for it."""

    message_id: int
    content: str
    status: str


class Walk:
    """One random walk: the session, the model it is checked against, and what was finished."""

    def __init__(self, qtbot, session: ChatSession, script, seed: int):
        self.qtbot, self.session, self.script = qtbot, session, script
        self.random = random.Random(seed)
        self.model = TreeModel()
        self.finished: list[Finished] = []
        # The last deletion, as a window's Undo holds it (one at a time).
        self.pending_undo: tuple[DeletedVersion, Deletion] | None = None
        self.conversations: list[int] = []
        self.counter = 0
        self.log: list[str] = []

    # --- steps ---------------------------------------------------------------------------------

    def step(self) -> None:
        branch = self.model.branch(self.session.conversation_id) if self.session.conversation_id else []
        users = [n for n in branch if n.role == "user"]
        versioned = [n for n in branch if self.model.version(n.id)[1] > 1]
        choices: list[tuple[float, Callable[[], None]]] = [(3, self.send)]
        if self.session.conversation_id is not None:
            choices.append((2, self.regenerate))
        if branch:
            choices += [(1.5, lambda: self.delete(self.random.choice(branch))),
                        (0.4, lambda: self.branch_from(self.random.choice(branch)))]
        if users:
            choices.append((2, lambda: self.edit(self.random.choice(users))))
        if versioned:
            choices.append((2, lambda: self.show_other(self.random.choice(versioned))))
        if self.pending_undo is not None:
            choices.append((1.2, self.undo))
        if len(self.conversations) > 1:
            choices.append((0.5, self.open_another))
        weights, actions = zip(*choices)
        self.random.choices(actions, weights)[0]()

    def send(self) -> None:
        text = self.text("u")
        new = self.session.conversation_id is None
        self.log.append(f"send {text!r}")

        def start() -> bool:
            started = self.session.send(f"  {text} ")
            if new:
                self.conversations.append(self.session.conversation_id)
                self.model.create_conversation(self.session.conversation_id)
            self.model.add_message(self.session.conversation_id, "user", text)
            return started

        self.reply(start, lambda: self.model.add_message(self.session.conversation_id, "assistant", "", "streaming"))

    def regenerate(self) -> None:
        cid = self.session.conversation_id
        leaf = self.model.leaf(cid)
        self.log.append(f"regenerate after {leaf.id if leaf else None}")
        if leaf is None:
            assert not self.session.regenerate()
        elif leaf.role == "assistant":
            self.reply(self.session.regenerate, lambda: self.model.add_version(leaf.id, "", "streaming"),
                       before=leaf.position)
        else:  # the reply to it was deleted: a new one is appended
            self.reply(self.session.regenerate, lambda: self.model.add_message(cid, "assistant", "", "streaming"))

    def edit(self, message) -> None:
        text = self.text("e")
        self.log.append(f"edit {message.id} to {text!r}")

        def start() -> bool:
            self.model.add_version(message.id, text)
            return self.session.edit(message.id, f" {text}  ")

        self.reply(start, lambda: self.model.add_message(self.session.conversation_id, "assistant", "", "streaming"))

    def show_other(self, message) -> None:
        step = self.random.choice([-1, 1])
        target = self.model.sibling(message.id, step)
        self.log.append(f"show {step:+d} from {message.id}: {target}")
        assert self.session.store.sibling(message.id, step) == target
        if target is not None:
            assert self.session.show_version(target)
            self.model.show_version(target)

    def delete(self, message) -> None:
        self.log.append(f"delete {message.id}")
        deleted = self.session.delete_version(message.id)
        deletion = self.model.delete_version(message.id)
        assert (deleted.message_id, deleted.leaf_id, deleted.messages) == (
            message.id, deletion.leaf_before, len(deletion.hidden))
        self.pending_undo = (deleted, deletion)

    def undo(self) -> None:
        deleted, deletion = self.pending_undo
        self.pending_undo = None
        self.log.append(f"undo delete of {deleted.message_id}")
        self.session.restore_version(deleted)
        self.model.restore_version(deletion)

    def branch_from(self, message) -> None:
        self.log.append(f"branch from {message.id}")
        conversation_id = self.session.branch_from(message.id)
        assert conversation_id not in self.conversations and self.session.conversation_id == conversation_id
        self.conversations.append(conversation_id)
        self.model.branch_from(message.id, conversation_id)

    def open_another(self) -> None:
        conversation_id = self.random.choice([c for c in self.conversations if c != self.session.conversation_id])
        self.log.append(f"open {conversation_id}")
        self.session.open(conversation_id)

    def reply(self, start: Callable[[], bool], add_reply: Callable[[], int], before: int | None = None) -> None:
        """Start a reply (some are stopped after their first word) and follow it in the model:
        it reads the branch shown (above `before` when it replaces a reply) and is kept as it ended."""
        text = self.text("r") + " " + " ".join(self.random.choices(WORDS, k=3))
        stopped = self.random.random() < 0.3
        hold = Hold()
        self.script.replies, self.script.hold = [text], hold if stopped else False
        self.log[-1] += " (stopped)" if stopped else ""
        with self.qtbot.waitSignal(self.session.replyFinished, timeout=WAIT_MS) as finished:
            assert start()
            expected_history = self.model.history(self.session.conversation_id, before)
            reply_id = add_reply()
            if stopped:
                self.qtbot.waitUntil(hold.reached.is_set, timeout=WAIT_MS)
                self.refused_while_streaming(reply_id)
                self.session.stop()
        reply: FinishedReply = finished.args[0]
        content, status = (text.split(" ")[0], "cancelled") if stopped else (text, "complete")
        assert (reply.message_id, reply.text, reply.status.value) == (reply_id, content, status)
        assert self.script.requests[-1][0] == expected_history
        self.model.finish(reply_id, content, status)
        self.finished.append(Finished(reply_id, content, status))

    def refused_while_streaming(self, reply_id: int) -> None:
        """While the open conversation's reply is written, its branch cannot change."""
        session = self.session
        assert not session.show_version(reply_id) and session.delete_version(reply_id) is None
        assert not session.send("more") and not session.regenerate()

    def text(self, kind: str) -> str:
        self.counter += 1
        return f"{kind}{self.counter} " + " ".join(self.random.choices(WORDS, k=2))

    # --- checks --------------------------------------------------------------------------------

    def check(self, store: ConversationStore) -> None:
        """The store against the model, for every conversation; and every finished reply kept."""
        model = self.model
        kept: dict[int, set[str]] = {}
        for conversation_id in self.conversations:
            live = model.live(conversation_id)
            index = {node.id: number for number, node in enumerate(live)}
            exported = store.export_json(conversation_id)
            kept[conversation_id] = {m["content"] for m in exported["messages"]}
            assert [(m["parent"], m["role"], m["content"], m["status"]) for m in exported["messages"]] == [
                (index.get(n.parent_id), n.role, n.content, n.status) for n in live]
            leaf = model.leaf(conversation_id)
            assert exported["conversation"]["current"] == (index[leaf.id] if leaf else None)
            assert [(m.id, m.parent_id, m.position, m.role, m.content, m.status.value, m.version, m.versions)
                    for m in store.messages(conversation_id)] == [
                (n.id, n.parent_id, n.position, n.role, n.content, n.status, *model.version(n.id))
                for n in model.branch(conversation_id)]
        for reply in self.finished:
            node = model.nodes[reply.message_id]
            stored = store.message(reply.message_id)
            assert (stored.content, stored.status.value) == (reply.content, reply.status)
            if node.deleted_by is None:
                assert reply.content in kept[node.conversation_id]
            else:
                assert not model.deletions[node.deleted_by].undone


@pytest.fixture
def database(tmp_path) -> Path:
    return tmp_path / "conversations.sqlite3"


@pytest.fixture
def session(qtbot, scripted_models, database):
    store = ConversationStore(database)
    with qtbot.waitSignal(scripted_models.modelLoaded, timeout=WAIT_MS):
        scripted_models.load(Path("/models/gemma.gguf"))
    yield ChatSession(store, scripted_models._bridge, scripted_models)
    store.close()


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_no_reply_is_lost_by_any_sequence_of_version_actions(qtbot, session, script, database, seed):
    walk = Walk(qtbot, session, script, seed)
    for _ in range(STEPS):
        walk.step()
        try:
            walk.check(session.store)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}, after: " + " | ".join(walk.log)) from exc
    session.store.close()
    with ConversationStore(database) as reopened:
        walk.check(reopened)
    kinds = {entry.split(" ")[0] for entry in walk.log}
    assert {"send", "regenerate", "edit", "delete", "undo", "show"} <= kinds  # the walk did walk
    assert any(entry.endswith("(stopped)") for entry in walk.log)
