"""Instant resume where users meet it: the real window over the real Gemma 3 270M, its engine
thread and a saved-state folder, driven as a user drives it (typing and Enter, clicking a
conversation in the list, New chat, quitting).

A conversation left (another one opened, Hearth quit, a request served to another program)
and come back to evaluates only its new turn. Before issue #24 none of these did: the window's
worker stops reading a reply at its ReplyStats, and the engine recorded the exchange it saves
only after that, so no state was ever saved in the window. The time to first token this buys
is measured in bench/resume.py, through the same bridge.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from support.window_stack import WINDOW_SIZE, ModelStack, Shown, WindowStack

from app.engine.kv.cache import StateCache
from app.engine.sampling import SamplingParams
from app.engine.types import ReplyStats
from app.owners.settings import ModelSettings
from app.serve.completions import Job
from app.store import ConversationStore

WAIT_MS = 60_000
N_CTX = 1024
NEW_TURN_MOST = 40  # tokens: the new question and the turn markers around it, no more
SHORT = dict(temperature=0.0, repeat_penalty=1.0, max_tokens=6, seed=1)


def state_file(folder: Path, conversation_id: int) -> Path:
    return folder / f"conversation-{conversation_id}.kvstate"


class Hearth:
    """One run of Hearth: the owner objects (bridge with its saved-state folder, model session)
    and the window, over a database and settings file that outlive it; `quit` ends the run as
    the application does (the window closed, the engine shut down, the model closed)."""

    def __init__(self, qtbot, gemma_path: Path, folder: Path):
        self.qtbot, self.folder = qtbot, folder
        model_stack = ModelStack.start(folder, states=StateCache(folder / "kv-state"),
                                       model_settings={gemma_path.name: ModelSettings(n_ctx=N_CTX)})
        self.bridge, self.models = model_stack.bridge, model_stack.models
        self.stack = WindowStack.open(qtbot, model_stack, folder, shown=Shown.EXPOSED, size=WINDOW_SIZE)
        self.store, self.session, self.downloads, self.window = (
            self.stack.store, self.stack.session, self.stack.downloads, self.stack.window)
        model_stack.load(qtbot, gemma_path, WAIT_MS)
        sampling = self.models.settings.sampling.with_changes(**SHORT)
        self.models.update_settings(self.models.settings.with_changes(sampling=sampling))

    @property
    def states(self) -> Path:
        return self.folder / "kv-state"

    def send(self, text: str) -> ReplyStats:
        """Type into the message box and press Enter; the finished reply's statistics."""
        with self.qtbot.waitSignal(self.session.replyFinished, timeout=WAIT_MS) as finished:
            self.stack.type_and_send(text)
        return finished.args[0].stats

    def click_conversation(self, conversation_id: int) -> None:
        self.stack.click_conversation(conversation_id)

    def answer_a_long_conversation(self) -> tuple[int, ReplyStats]:
        """A long conversation stored (as an import stores it), opened from the list and asked
        one more question, which is read cold: its id and that reply's statistics."""
        conversation_id = long_conversation(self.store)
        self.session.conversationsChanged.emit()  # the list shows it, as after an import
        self.click_conversation(conversation_id)
        return conversation_id, self.send("Which river has the most towns?")

    def new_chat(self) -> int:
        QTest.keyClick(self.window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        return self.session.conversation_id

    def wait_for_state(self, conversation_id: int) -> None:
        """The engine thread saves a conversation's state when the user leaves it: after the
        queued request that says so, so the test waits for the file, not for a time."""
        self.qtbot.waitUntil(lambda: state_file(self.states, conversation_id).exists(), timeout=WAIT_MS)

    def serve(self, text: str) -> list:
        """Another program's request, as the local server submits it (from its own thread),
        answered while the window waits; its events."""
        heard, ended = [], threading.Event()

        def deliver(event) -> None:
            heard.append(event)
            if not isinstance(event, str):
                ended.set()

        job = Job(SamplingParams(**SHORT), messages=[{"role": "user", "content": text}])
        thread = threading.Thread(target=lambda: self.bridge.serve(job, deliver))
        thread.start()
        thread.join()
        self.qtbot.waitUntil(ended.is_set, timeout=WAIT_MS)
        return heard

    def quit(self) -> None:
        self.stack.close()  # the model closes with the engine: the conversation it holds is saved


def long_conversation(store: ConversationStore) -> int:
    """A stored conversation of about 300 tokens, ending with a reply, as an imported one is."""
    conversation_id = store.create_conversation(title="Rivers")
    for i in range(6):
        store.add_message(conversation_id, "user", f"Question {i}: what do you know about river {i}?")
        store.add_message(conversation_id, "assistant", f"River {i} runs through {i + 2} towns, known for "
                                                        "their bridges, markets, mills and orchards.")
    return conversation_id


@pytest.fixture
def hearth(qtbot, gemma_path, tmp_path):
    runs: list[Hearth] = []

    def start() -> Hearth:
        if runs and runs[-1].window.isVisible():
            runs[-1].quit()
        runs.append(Hearth(qtbot, gemma_path, tmp_path))
        return runs[-1]

    yield start
    if runs[-1].window.isVisible():
        runs[-1].quit()


def test_a_long_conversation_reopened_after_a_restart_evaluates_only_the_new_turn(hearth):
    first = hearth()
    rivers, cold = first.answer_a_long_conversation()
    assert cold.evaluated_prompt_tokens == cold.prompt_tokens > 5 * NEW_TURN_MOST
    first.quit()
    assert state_file(first.states, rivers).exists(), "quitting saves the open conversation's state"

    again = hearth()
    again.click_conversation(rivers)
    warm = again.send("And which has the fewest?")
    assert warm.prompt_tokens > cold.prompt_tokens
    assert 0 < warm.evaluated_prompt_tokens <= NEW_TURN_MOST


def test_switching_a_to_b_and_back_to_a_evaluates_only_a_new_turn(hearth):
    run = hearth()
    a, cold = run.answer_a_long_conversation()
    b = run.new_chat()
    run.wait_for_state(a)  # leaving A saved it
    run.send("Hello there")
    run.click_conversation(a)
    run.wait_for_state(b)  # and leaving B saved B
    warm = run.send("And which has the fewest?")
    assert warm.prompt_tokens > cold.prompt_tokens
    assert 0 < warm.evaluated_prompt_tokens <= NEW_TURN_MOST


def test_a_request_served_between_two_window_replies_costs_the_conversation_nothing(hearth):
    run = hearth()
    a, cold = run.answer_a_long_conversation()
    heard = run.serve("Say something about the sea.")
    assert isinstance(heard[-1], ReplyStats) and heard[-1].completion_tokens > 0
    assert state_file(run.states, a).exists(), "the served job saved the window's conversation first"
    warm = run.send("And which has the fewest?")
    assert warm.prompt_tokens > cold.prompt_tokens
    assert 0 < warm.evaluated_prompt_tokens <= NEW_TURN_MOST
