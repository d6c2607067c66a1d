"""The real main window over scripted backends (tests/support/scripted_backend.py) whose replies can be
held piece by piece, for tests of the window's flow: sending, waiting, switching conversations
while a reply streams, deleting and undoing. Nothing here is about generation itself."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.owners.engine_worker import CHUNK_INTERVAL_S
from app.ui.chat.inline_editor import InlineEditor
from support.chat_helpers import click_anchor
from support.scripted_backend import Script, ScriptedBackend
from support.window_stack import WINDOW_SIZE, ModelStack, Shown, WindowStack

WAIT_MS = 5_000
MODEL = Path("/models/gemma-3-270m-it.gguf")  # scripted: no file is read


class GatedScript(Script):
    """A Script whose replies, while `gated`, wait before each piece until the test lets one
    through (`release()`): a reply that is still streaming when the test looks. The test then
    waits for what the piece changes (qtbot.waitUntil, waitSignal), never for a time."""

    def __init__(self, info):
        super().__init__(info)
        self.gated = False
        self._gate = threading.Semaphore(0)

    def release(self) -> None:
        """Let the next piece through."""
        self._gate.release()

    def open(self, source, options, progress=None, cancel=None):
        backend = super().open(source, options, progress, cancel)
        return GatedBackend(self, backend.describe())


class GatedBackend(ScriptedBackend):
    """Each piece let through comes no sooner than the interval the window takes text at after
    the one before it, as a model's tokens take their time: it is passed on at once instead of
    held, unsent, for the piece after it (engine/backend.py's `paced`, at the engine worker's
    CHUNK_INTERVAL_S)."""

    def _reply(self, text: str, cancel: threading.Event):
        previous = time.perf_counter()  # the first piece goes at once; each after it, an interval on
        for piece in super()._reply(text, cancel):
            if self._script.gated and isinstance(piece, str):
                while not (self._script._gate.acquire(timeout=0.01) or cancel.is_set()):
                    pass
                cancel.wait(max(0.0, previous + CHUNK_INTERVAL_S * 1.5 - time.perf_counter()))
            previous = time.perf_counter()
            yield piece


class FlowWindow:
    """The window at 1024×640 with a scripted model loaded; closes everything it opened."""

    def __init__(self, qtbot, script: GatedScript, folder: Path):
        self.qtbot, self.script = qtbot, script
        model_stack = ModelStack.start(folder, opener=script.open)
        self.bridge, self.models = model_stack.bridge, model_stack.models
        model_stack.load(qtbot, MODEL, WAIT_MS)
        self.stack = WindowStack.open(qtbot, model_stack, folder, shown=Shown.ACTIVATED, size=WINDOW_SIZE)
        self.store, self.session, self.downloads, self.window = (
            self.stack.store, self.stack.session, self.stack.downloads, self.stack.window)

    def type_and_send(self, text: str) -> None:
        self.stack.type_and_send(text)

    def send_and_wait(self, text: str):
        with self.qtbot.waitSignal(self.session.replyFinished, timeout=WAIT_MS) as finished:
            self.type_and_send(text)
        return finished.args[0]

    def click_conversation(self, conversation_id: int) -> None:
        self.stack.click_conversation(conversation_id)

    def streaming_elsewhere(self) -> tuple[int, int]:
        """Conversation B answered; A's reply held streaming while B is open again, as a user
        leaves a long reply to write. Returns (a, b)."""
        self.send_and_wait("B")
        b = self.session.conversation_id
        self.window.new_chat()
        self.script.gated = True
        self.type_and_send("A")
        a = self.session.conversation_id
        self.click_conversation(b)
        return a, b

    def close(self) -> None:
        self.script.gated = False
        self.stack.close()


def regenerate(flow: FlowWindow) -> None:
    """Regenerate the last reply (the window's action); wait until the new version is written."""
    with flow.qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS):
        flow.window.regenerate_action.trigger()


def edit(flow: FlowWindow, message_id: int, text: str) -> None:
    """Edit under the message, type the new text, Enter: as a user edits in the transcript."""
    click_anchor(flow.qtbot, flow.window.chat, f"hearth:edit/{message_id}")
    editor = flow.window.chat.findChild(InlineEditor)
    editor.box.selectAll()
    QTest.keyClicks(editor.box, text)
    with flow.qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS):
        QTest.keyClick(editor.box, Qt.Key.Key_Return)


def shown(flow: FlowWindow) -> list[str]:
    """The branch shown, as the messages' texts."""
    return [message.content for message in flow.session.messages()]
