"""`hearth --self-test`: prove the real GUI end to end, headless, and exit 0 or 1.

It drives the window the way a user would (type, send, stop) in a throwaway profile, kills the
model's own process mid-reply as a crash in llama.cpp would (the window must keep the reply, load
the model again and answer the next message), then opens the database afresh to check that every
reply was kept. The packaged app runs the same code, which is how a bundle proves itself on a
machine with no Python and no network.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
from PySide6.QtCore import QEventLoop, QTimer

from ...engine.process import CHILD_FLAG
from ...engine.types import StopReason
from ...owners import paths
from ...store import ConversationStore

LOAD_TIMEOUT_S = 180
REPLY_TIMEOUT_S = 180


class SelfTestFailed(Exception):
    pass


def wait_for(signal, timeout_s: float, what: str, trigger=None, accept=lambda *args: True):
    """Run the event loop until `signal` fires with arguments `accept` likes, or fail."""
    loop = QEventLoop()
    received = []

    def on_signal(*args):
        if accept(*args):
            received.append(args)
            loop.quit()

    signal.connect(on_signal)
    timer = QTimer(singleShot=True, interval=int(timeout_s * 1000))
    timer.timeout.connect(loop.quit)
    timer.start()
    try:
        if trigger is not None:
            trigger()
        if not received:
            loop.exec()
    finally:
        signal.disconnect(on_signal)
        timer.stop()
    if not received:
        raise SelfTestFailed(f"timed out after {timeout_s:g} s waiting for {what}")
    return received[0]


def set_sampling(models, **changes) -> None:
    """Change the current model's sampling as the parameters panel would."""
    settings = models.settings
    models.update_settings(settings.with_changes(sampling=settings.sampling.with_changes(**changes)))


class SelfTest:
    def __init__(self, window, screenshot: str | None):
        self.window = window
        self.screenshot = screenshot

    def run(self) -> int:
        started = time.monotonic()
        try:
            summary = self._steps()
        except SelfTestFailed as exc:
            print(f"self-test failed: {exc}", flush=True)
            return 1
        print(f"self-test passed in {time.monotonic() - started:.1f} s: {summary}", flush=True)
        return 0

    def _steps(self) -> str:
        window, models, session = self.window, self.window.models, self.window.session
        # 1. The window is open on the default model.
        if models.current is None:
            outcome = wait_for(models.loadFinished, LOAD_TIMEOUT_S, "the default model to load")
            if models.current is None:
                raise SelfTestFailed(f"the model did not load: {outcome[0]}")
        loaded = models.current
        set_sampling(models, max_tokens=48, seed=7)

        # 2. A real reply streams into the view.
        chunks = []
        session.replyChunk.connect(chunks.append)
        window.composer.edit.setPlainText("Write one friendly sentence about a warm fireplace.")
        (first,) = wait_for(session.replyFinished, REPLY_TIMEOUT_S, "the first reply", trigger=window.composer._submit)
        first_text, first_stats, first_status = first.text, first.stats, first.status
        session.replyChunk.disconnect(chunks.append)
        if first_status != "complete" or not first_text.strip():
            raise SelfTestFailed(f"the first reply ended as {first_status!r} with {len(first_text)} characters")
        if len(chunks) < 2:
            raise SelfTestFailed("the reply did not stream (it arrived in one piece)")
        if window.chat.text_of_reply().strip() != first_text.strip():
            raise SelfTestFailed("the reply is not shown in the chat view")

        # 3. A second reply is stopped mid-stream.
        set_sampling(models, max_tokens=400)
        window.composer.edit.setPlainText("Now tell me a very long story about the sea.")
        stop = lambda _text: session.stop()  # noqa: E731 - connected for this reply alone
        session.replyChunk.connect(stop)
        try:
            (second,) = wait_for(
                session.replyFinished, REPLY_TIMEOUT_S, "the stopped reply", trigger=window.composer._submit)
        finally:
            session.replyChunk.disconnect(stop)
        second_text, second_stats, second_status = second.text, second.stats, second.status
        if second_status != "cancelled" or second_stats.stop_reason != "cancelled":
            raise SelfTestFailed(f"the second reply was not stopped (status {second_status!r})")
        if not 0 < second_stats.completion_tokens < 400:
            raise SelfTestFailed("the stopped reply kept no text")

        # 4. The model's own process dies mid-reply; the window keeps the reply and the model comes back.
        cut_text, after_text = self._crash_mid_reply()

        # 5. Every reply is in the database when it is opened afresh.
        reopened = ConversationStore(paths.database_path())
        try:
            messages = reopened.messages(session.conversation_id)
        finally:
            reopened.close()
        replies = [m for m in messages if m.role == "assistant"]
        if [m.status for m in replies] != ["complete", "cancelled", "cancelled", "complete"]:
            raise SelfTestFailed(f"the database holds replies {[m.status for m in replies]}")
        if [m.content for m in replies] != [first_text, second_text, cut_text, after_text]:
            raise SelfTestFailed("the saved replies differ from what was shown")

        # 6. A screenshot.
        if self.screenshot:
            if not window.grab().save(self.screenshot):
                raise SelfTestFailed(f"could not save the screenshot to {self.screenshot}")
        return (
            f"{loaded.name} on {loaded.device.describe()}, reply of {first_stats.completion_tokens} tokens "
            f"at {first_stats.tokens_per_s:.1f} tok/s, stopped reply kept {second_stats.completion_tokens} tokens, "
            "the model's process killed mid-reply and the model loaded again"
        )

    def _crash_mid_reply(self) -> tuple[str, str]:
        """Kill the model's process at the first text of a reply; the texts of the reply cut
        short (kept, interrupted) and of the next one (complete, after the model came back)."""
        window, models, session = self.window, self.window.models, self.window.session
        children = [child for child in psutil.Process().children() if CHILD_FLAG in _command_line(child)]
        if len(children) != 1:
            raise SelfTestFailed(f"the model does not run in a process of its own ({len(children)} found)")
        if _maps_llama("self"):
            raise SelfTestFailed("the window's process loaded llama.cpp itself")
        engine = children[0]

        def kill(_text: str) -> None:
            if engine.is_running():
                engine.send_signal(signal.SIGKILL)

        session.replyChunk.connect(kill)
        window.composer.edit.setPlainText("Tell me about the lighthouse at the end of the pier.")
        try:
            (cut,) = wait_for(session.replyFinished, REPLY_TIMEOUT_S, "the reply cut by the crash",
                              trigger=window.composer._submit)
        finally:
            session.replyChunk.disconnect(kill)
        if cut.stats.stop_reason is not StopReason.INTERRUPTED or "SIGKILL" not in (cut.stats.error or ""):
            raise SelfTestFailed(f"the reply cut by the crash ended as {cut.stats.stop_reason!r}: {cut.stats.error}")
        if models.current is None or models.loading is not None:
            wait_for(models.loadFinished, LOAD_TIMEOUT_S, "the model to load again")
        if models.current is None:
            raise SelfTestFailed("the model did not come back after its process was killed")
        set_sampling(models, max_tokens=24)
        window.composer.edit.setPlainText("Are you back?")
        (after,) = wait_for(session.replyFinished, REPLY_TIMEOUT_S, "the reply after the crash",
                            trigger=window.composer._submit)
        if after.status != "complete" or not after.text.strip():
            raise SelfTestFailed(f"the reply after the crash ended as {after.status!r}")
        return cut.text, after.text


def _command_line(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _maps_llama(pid: str) -> bool:
    """Whether the process has llama.cpp's library mapped (Linux; elsewhere, False)."""
    maps = Path(f"/proc/{pid}/maps")
    try:
        return "libllama" in maps.read_text(errors="replace") if os.name == "posix" and maps.exists() else False
    except OSError:
        return False

