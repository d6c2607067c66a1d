"""The real window, offscreen, with the real Gemma model in its own process (#29): kill that
process as llama.cpp aborting or the system's OOM killer would, mid-reply, mid-prompt and
mid-load, and the window lives, keeps the reply as far as it got (interrupted, with the cause),
loads the model again by itself and answers the next message."""

from __future__ import annotations

import os
import shutil
import signal

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support.chat_helpers import plain_text
from support.engine_children import our_engine_children
from support.focus_round import go_round
from support.window_stack import ModelStack, WindowStack

from app.engine.types import ModelSettings, ReplyStatus, StopReason
from app.owners.settings import Appearance
from app.ui.window import appearance

LONG = dict(temperature=0.0, repeat_penalty=1.0, max_tokens=400, seed=1)
SHORT = dict(temperature=0.0, repeat_penalty=1.0, max_tokens=8, seed=1)
SAID = {signal.SIGKILL: "llama.cpp was killed (SIGKILL", signal.SIGABRT: "llama.cpp crashed (SIGABRT)",
        signal.SIGBUS: "llama.cpp crashed (SIGBUS)"}


class CrashWindow:
    """A window over its own database and settings, `model` loaded in its own process."""

    def __init__(self, root, qtbot, model):
        self.qtbot = qtbot
        self.others = set(our_engine_children())  # another test's, in this process: never killed here
        self.model_stack = ModelStack.start(root, model_settings={model.name: ModelSettings(n_ctx=2048)})
        self.models = self.model_stack.models
        self.stack = WindowStack.open(qtbot, self.model_stack, root)
        self.window, self.session = self.stack.window, self.stack.window.session
        self.model_stack.load(qtbot, model, 60_000)
        self.sampling(**SHORT)

    def sampling(self, **changes):
        settings = self.models.settings
        self.models.update_settings(settings.with_changes(sampling=settings.sampling.with_changes(**changes)))

    def type_and_send(self, text: str) -> None:
        self.window.composer.edit.setPlainText(text)
        QTest.keyClick(self.window.composer.edit, Qt.Key.Key_Return)

    def send_and_wait(self, text: str):
        with self.qtbot.waitSignal(self.session.replyFinished, timeout=60_000) as finished:
            self.type_and_send(text)
        return finished.args[0]

    def children(self) -> set[int]:
        return set(our_engine_children()) - self.others

    def kill_engine(self, sig=signal.SIGKILL) -> None:
        [child] = self.children()
        os.kill(child, sig)

    def close(self):
        self.stack.close()


@pytest.fixture
def crash_window(tmp_path, qtbot, gemma_path):
    window = CrashWindow(tmp_path, qtbot, gemma_path)
    yield window
    window.close()
    appearance.apply(QApplication.instance(), Appearance.SYSTEM)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGABRT], ids=["SIGKILL", "SIGABRT"])
def test_a_reply_cut_by_a_crash_is_kept_and_the_model_comes_back_for_the_next_message(crash_window, qtbot, sig):
    window = crash_window
    window.sampling(**LONG)
    window.session.replyChunk.connect(lambda _text: window.children() and window.kill_engine(sig))
    with qtbot.waitSignal(window.models.modelLoaded, timeout=60_000):  # loaded again, by itself
        reply = window.send_and_wait("Tell me a long story about a lighthouse.")
        window.session.replyChunk.disconnect()
        window.window.composer.edit.setPlainText("a draft the crash must not take")
    assert reply.status is ReplyStatus.CANCELLED and reply.stats.stop_reason is StopReason.INTERRUPTED
    assert reply.text and reply.stats.error.startswith(SAID[sig])
    stored = window.session.store.message(reply.message_id)  # kept as far as it got, with the cause
    assert stored.content == reply.text and stored.stats.stop_reason is StopReason.INTERRUPTED
    assert f"interrupted: {SAID[sig]}" in plain_text(window.window.chat)
    said = window.window.statusBar().currentMessage()
    assert said.startswith(SAID[sig]) and said.endswith("Gemma 3 270m was loaded again.")
    assert window.window.composer.text() == "a draft the crash must not take"

    window.sampling(**SHORT)
    after = window.send_and_wait("And now?")
    assert after.status is ReplyStatus.COMPLETE and after.text


def test_a_message_sent_while_the_model_comes_back_waits_for_it(crash_window, qtbot):
    window = crash_window
    with qtbot.waitSignal(window.models.engineCrashed, timeout=10_000) as crashed:
        window.kill_engine()  # while idle: the window hears of it at once, not at the next Send
    assert crashed.args[1] is True and window.models.loading is not None
    status = window.window.model_display.engine_status
    assert status.label.text().endswith("Loading Gemma 3 270m again…") and status.label.text().startswith(
        "llama.cpp was killed (SIGKILL") and not status.reload_button.isVisible()
    with qtbot.waitSignal(window.session.replyFinished, timeout=60_000) as finished:
        window.type_and_send("Are you there?")
        assert window.window.composer.waiting  # "Will send when … has loaded."
    assert finished.args[0].status is ReplyStatus.COMPLETE and finished.args[0].text


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGABRT], ids=["SIGKILL", "SIGABRT"])
def test_killed_while_reading_a_long_prompt_the_reply_is_interrupted_empty(crash_window, qtbot, sig):
    window = crash_window
    window.session.promptProgress.connect(lambda done, total: window.children() and window.kill_engine(sig))
    with qtbot.waitSignal(window.models.modelLoaded, timeout=60_000):
        reply = window.send_and_wait("Summarise this. " + "The tide came in over the rocks. " * 180)
    assert reply.stats.stop_reason is StopReason.INTERRUPTED and reply.text == ""
    assert reply.stats.error.startswith(SAID[sig])
    window.session.promptProgress.disconnect()
    assert window.send_and_wait("Short one.").status is ReplyStatus.COMPLETE


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGABRT], ids=["SIGKILL", "SIGABRT"])
def test_killed_while_loading_the_load_fails_and_the_next_load_works(tmp_path, qtbot, gemma_path, sig):
    others = set(our_engine_children())
    model_stack = ModelStack.start(tmp_path, model_settings={gemma_path.name: ModelSettings(n_ctx=2048)})
    stack = WindowStack.open(qtbot, model_stack, tmp_path)
    try:
        models = model_stack.models
        models.loadProgress.connect(lambda share: share > 0.1 and [os.kill(pid, sig)
                                                                    for pid in set(our_engine_children()) - others])
        with qtbot.waitSignal(models.loadFailed, timeout=60_000) as failed:
            models.load(gemma_path)
        assert failed.args[0].startswith(f"Loading {gemma_path.name} failed: {SAID[sig]}")
        assert models.current is None and stack.window.isVisible()
        models.loadProgress.disconnect()
        model_stack.load(qtbot, gemma_path, 60_000)
        assert models.current is not None
    finally:
        stack.close()


def test_a_file_that_makes_llama_cpp_crash_at_its_first_reply_is_given_up_on_and_offered_again(
        tmp_path, qtbot, gemma_path):
    """The model file is cut short on disk while loaded (a download or copy over it): llama.cpp
    reads its weights through the mapping at the first reply and dies of SIGBUS. The reload
    finds the file damaged and says so; the window stops trying and offers Reload, which works
    once the file is whole again."""
    model = tmp_path / "models" / gemma_path.name
    model.parent.mkdir()
    shutil.copyfile(gemma_path, model)
    window = CrashWindow(tmp_path, qtbot, model)
    try:
        size = model.stat().st_size
        os.truncate(model, size // 2)
        with qtbot.waitSignal(window.models.engineCrashed, timeout=60_000,
                              check_params_cb=lambda why, reloading: not reloading) as gave_up:
            reply = window.send_and_wait("Hello")
        assert reply.stats.stop_reason is StopReason.INTERRUPTED and reply.stats.error.startswith(SAID[signal.SIGBUS])
        assert window.models.current is None and not window.children()
        status = window.window.model_display.engine_status
        assert status.reload_button.isVisible() and gave_up.args[0] in status.label.text()

        shutil.copyfile(gemma_path, model)  # whole again
        with qtbot.waitSignal(window.models.modelLoaded, timeout=60_000):
            QTest.mouseClick(status.reload_button, Qt.MouseButton.LeftButton)
        assert not status.widget.isVisible()
        assert window.send_and_wait("Hello again").status is ReplyStatus.COMPLETE
    finally:
        window.close()


@pytest.mark.parametrize("choice", [Appearance.LIGHT, Appearance.DARK])
def test_two_crashes_in_a_row_stop_the_retries_and_reload_brings_the_model_back(crash_window, qtbot, tmp_path,
                                                                                  choice):
    """Reached and pressed from the keyboard, in light and in dark (a screenshot of each)."""
    appearance.apply(QApplication.instance(), choice)
    window = crash_window
    with qtbot.waitSignal(window.models.modelLoaded, timeout=60_000):
        window.kill_engine()
    with qtbot.waitSignal(window.models.engineCrashed, timeout=10_000) as crashed:
        window.kill_engine()  # again, before any reply got through
    assert crashed.args[1] is False and window.models.current is None and window.models.loading is None
    status = window.window.model_display.engine_status
    assert status.reload_button.isVisible() and status.label.text().startswith("The model was not loaded again")
    # From the keyboard: Tab from the message box reaches Reload, and Space presses it.
    assert status.reload_button in go_round(window.window, Qt.Key.Key_Tab)
    status.reload_button.setFocus()
    shot = window.window.grab()
    shot.save(str(tmp_path / f"engine-stopped-{choice.value}.png"))
    background = shot.toImage().pixelColor(shot.width() // 2, shot.height() // 2)
    assert (background.lightness() > 128) == (choice is Appearance.LIGHT)
    with qtbot.waitSignal(window.models.modelLoaded, timeout=60_000):
        QTest.keyClick(status.reload_button, Qt.Key.Key_Space)
    assert window.send_and_wait("Back?").status is ReplyStatus.COMPLETE
