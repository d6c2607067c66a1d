"""A whole turn of the agent loop in the window, driven as a user drives it: the real llama.cpp
on a scripted model (support/model_files/scripted_models.py: its greedy reply is always the
call `get_weather {"city": "Paris"}` in Qwen3's syntax) and a real MCP server written with the
SDK (support/mcp_servers/weather.py) as the application starts it.

The user ticks the server on the tools button, sends, and answers each card from the keyboard:
Allow once, then Deny, then the step limit ends the turn; Always allow then runs later calls
without a card asking; Stop during a slow call cancels it. Each time the store keeps the whole
exchange, and the window shows it from the store once the turn ends."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import keyring
import pytest
from PySide6.QtCore import QElapsedTimer, Qt, QTimer
from PySide6.QtTest import QTest
from support.memory_keyring import MemoryKeyring
from support.model_files.scripted_models import scripted_models
from support.window_stack import ModelStack, Shown, WindowStack

from app.tool_servers.approval import DENIED_TEXT, STOPPED_TEXT
from app.tool_servers.types import ServerConfig, Transport
from app.ui.chat.tool_card import CardState

WEATHER = Path(__file__).resolve().parents[1] / "support" / "mcp_servers" / "weather.py"
WAIT_MS = 30_000


@pytest.fixture(autouse=True)
def memory_keyring():
    """No test reads or writes the machine's keyring."""
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    yield
    keyring.set_keyring(previous)


class StallMeter:
    """The GUI event loop's longest gap between 10 ms ticks: how long the window froze."""

    def __init__(self):
        self.longest_ms = 0
        self._clock = QElapsedTimer()
        self._timer = QTimer(interval=10)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.longest_ms = 0
        self._clock.start()
        self._timer.start()

    def stop(self) -> int:
        self._timer.stop()
        return self.longest_ms

    def _tick(self) -> None:
        self.longest_ms = max(self.longest_ms, self._clock.restart() - 10)


def weather(delay_s: float = 0.0) -> ServerConfig:
    return ServerConfig("weather", Transport.STDIO, sys.executable, (str(WEATHER),),
                        env=(("WEATHER_DELAY_S", str(delay_s)),), enabled=True)


@pytest.fixture
def window(qtbot, tmp_path, request):
    delay_s = getattr(request, "param", 0.0)
    stack = ModelStack.start(tmp_path)
    stack.settings.tools.set_servers([weather(delay_s)])
    stack.settings.tools.step_limit = 3
    stack.load(qtbot, scripted_models()["qwen3"].path, WAIT_MS)
    opened = WindowStack.open(qtbot, stack, tmp_path, shown=Shown.ACTIVE, size=(1024, 720), tools=True)
    yield opened
    opened.close_tools()
    opened.window.close()
    stack.shutdown()


def tick_weather(qtbot, opened: WindowStack) -> None:
    """Tick the server in the tools button's menu, as a click on its row does."""
    picker = opened.window.tool_calls.picker
    row = next(action for action in picker.server_menu.actions() if action.text().startswith("weather"))
    row.trigger()
    qtbot.waitUntil(lambda: "Tools · 1" in picker.text(), timeout=WAIT_MS)  # started, its one tool listed


def card_asking(qtbot, opened: WindowStack, count: int):
    """The `count`th card, once it asks (earlier ones have been answered)."""
    chat = opened.window.chat

    def asking():
        cards = chat._cards.cards()
        return len(cards) >= count and cards[count - 1].state is CardState.AWAITING

    qtbot.waitUntil(asking, timeout=WAIT_MS)
    return chat._cards.cards()[count - 1]


def turn_over(qtbot, opened: WindowStack) -> None:
    qtbot.waitUntil(lambda: not opened.session.busy, timeout=WAIT_MS)


def exchange(opened: WindowStack) -> list[tuple[str, str]]:
    """The branch shown as (role, what it holds): a reply's call names, a result's text."""
    return [(m.role, ",".join(c.name for c in m.tool_calls) if m.role == "assistant" else m.content)
            for m in opened.store.messages(opened.session.conversation_id) if m.role != "system"]


def test_allow_once_then_deny_then_the_step_limit_by_keyboard(qtbot, window):
    opened = window
    tick_weather(qtbot, opened)
    opened.type_and_send("What is the weather in Paris?")
    first = card_asking(qtbot, opened, 1)
    assert first.hasFocus() or first.isAncestorOf(opened.window.focusWidget())  # the keyboard is on the card
    QTest.keyClick(first, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)  # Allow once
    qtbot.waitUntil(lambda: first.state is CardState.DONE, timeout=WAIT_MS)

    second = card_asking(qtbot, opened, 2)  # the model went on: it calls again
    QTest.keyClick(second, Qt.Key.Key_D, Qt.KeyboardModifier.AltModifier)  # Deny
    turn_over(qtbot, opened)  # the third reply's call meets the step limit (3)
    assert exchange(opened) == [
        ("user", "What is the weather in Paris?"),
        ("assistant", "get_weather"), ("tool", "Sunny in Paris, 21 °C."),
        ("assistant", "get_weather"), ("tool", DENIED_TEXT),
        ("assistant", "get_weather"),
        ("tool", "Not run: this turn reached its limit of 3 tool steps. Answer with what you have."),
    ]
    chat = opened.window.chat
    assert not chat.has_tool_cards()  # shown from the store now
    text = chat._browser.toPlainText()
    assert "get_weather" in text and "Sunny in Paris" in text and DENIED_TEXT in text
    assert "tool steps" in opened.window.statusBar().currentMessage()


def test_always_allow_runs_the_next_calls_without_asking(qtbot, window):
    opened = window
    tick_weather(qtbot, opened)
    opened.type_and_send("Weather?")
    first = card_asking(qtbot, opened, 1)
    QTest.keyClick(first, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)  # Always allow this tool
    turn_over(qtbot, opened)
    results = [content for role, content in exchange(opened) if role == "tool"]
    assert results[:2] == ["Sunny in Paris, 21 °C."] * 2  # the second ran without a card asking
    identity = weather().identity
    assert (identity, "get_weather") in opened.model_stack.settings.tools.always_allowed


@pytest.mark.parametrize("window", [30.0], indirect=True)
def test_stop_during_a_call_cancels_it_and_the_window_never_stalls(qtbot, window):
    opened = window
    tick_weather(qtbot, opened)
    opened.type_and_send("Weather?")
    card = card_asking(qtbot, opened, 1)
    meter = StallMeter()
    meter.start()
    QTest.keyClick(card, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: card.state is CardState.RUNNING, timeout=WAIT_MS)
    qtbot.wait(300)  # the call is with the server, which takes 30 s
    began = time.monotonic()
    QTest.keyClick(card, Qt.Key.Key_S, Qt.KeyboardModifier.AltModifier)  # Stop
    turn_over(qtbot, opened)
    assert time.monotonic() - began < 2
    assert meter.stop() <= 100
    assert exchange(opened)[-2:] == [("assistant", "get_weather"), ("tool", STOPPED_TEXT)]
