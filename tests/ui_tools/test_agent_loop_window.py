"""A whole turn of the agent loop in the window, driven as a user drives it: the real llama.cpp
on a scripted model (support/model_files/scripted_models.py: its greedy reply is always the
call `get_weather {"city": "Paris"}` in Qwen3's syntax) and a real MCP server written with the
SDK (support/mcp_servers/weather.py) as the application starts it.

The user ticks the server on the tools button, sends, and answers each card from the keyboard:
Allow once, then Deny, then the step limit ends the turn; Always allow then runs later calls
without a card asking; Stop during a slow call cancels it. Each time the store keeps the whole
exchange, and the window shows it from the store once the turn ends."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from support.menus import in_menu
from support.stall import STALL_LIMIT_MS, StallMeter
from support.tool_window import WAIT_MS, card_asking, exchange, tick, turn_over, weather, window_with_tools

from app.tool_servers.approval import DENIED_TEXT, STOPPED_TEXT
from app.tool_servers.types import ServerConfig
from app.ui.chat.tool_card import CardState


@pytest.fixture
def window(qtbot, tmp_path, request):
    server = weather(getattr(request, "param", 0.0), stamps=tmp_path / "stamps")
    with window_with_tools(qtbot, tmp_path, [server], step_limit=2) as opened:
        yield opened


def test_allow_once_then_deny_then_the_step_limit_by_keyboard(qtbot, window, tmp_path):
    opened = window
    tick(qtbot, opened, "weather")
    opened.type_and_send("What is the weather in Paris?")
    first = card_asking(qtbot, opened, 1)
    assert first.hasFocus() or first.isAncestorOf(opened.window.focusWidget())  # the keyboard is on the card
    QTest.keyClick(first, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)  # Allow once
    qtbot.waitUntil(lambda: first.state is CardState.DONE, timeout=WAIT_MS)

    second = card_asking(qtbot, opened, 2)  # the model went on: it calls again
    QTest.keyClick(second, Qt.Key.Key_D, Qt.KeyboardModifier.AltModifier)  # Deny
    turn_over(qtbot, opened)  # the third reply is asked with no call allowed (the step limit, 2)
    assert exchange(opened) == [
        ("user", "What is the weather in Paris?"),
        ("assistant", "get_weather"), ("tool", "Sunny in Paris, 21 °C."),
        ("assistant", "get_weather"), ("tool", DENIED_TEXT),
        ("assistant", ""),  # asked to answer: no call allowed (this scripted model writes its call as text)
    ]
    chat = opened.window.chat
    assert not chat.has_tool_cards()  # shown from the store now
    text = chat._browser.toPlainText()
    assert "get_weather" in text and "Sunny in Paris" in text and DENIED_TEXT in text
    assert "2 tool steps" in opened.window.statusBar().currentMessage()
    assert len((tmp_path / "stamps").read_text().splitlines()) == 1  # the denied call never reached the server
    assert opened.window.composer.edit.hasFocus()  # the keyboard is back where the next message goes


def test_always_allow_runs_the_next_calls_without_asking(qtbot, window):
    opened = window
    tick(qtbot, opened, "weather")
    opened.type_and_send("Weather?")
    first = card_asking(qtbot, opened, 1)
    QTest.keyClick(first, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)  # Always allow this tool
    turn_over(qtbot, opened)
    results = [content for role, content in exchange(opened) if role == "tool"]
    assert results == ["Sunny in Paris, 21 °C."] * 2  # the second ran without a card asking
    identity = opened.tool_servers.config("weather").identity
    assert (identity, "get_weather") in opened.model_stack.settings.tools.always_allowed


@pytest.mark.parametrize("window", [30.0], indirect=True)
def test_stop_during_a_call_cancels_it_and_the_window_never_stalls(qtbot, window):
    opened = window
    tick(qtbot, opened, "weather")
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
    assert meter.stop() <= STALL_LIMIT_MS
    assert exchange(opened)[-2:] == [("assistant", "get_weather"), ("tool", STOPPED_TEXT)]


def test_the_tools_button_is_reached_and_worked_from_the_keyboard(qtbot, window):
    """Tab from the message box reaches the Tools button; Space opens its menu; Down and Space
    tick the server; Escape closes it, and the conversation's model may now call its tool."""
    opened = window
    composer = opened.window.composer
    composer.edit.setFocus()
    QTest.keyClick(composer.edit, Qt.Key.Key_Tab)
    picker = opened.window.tool_calls.picker
    assert picker.hasFocus()

    in_menu(qtbot, picker, [Qt.Key.Key_Down, Qt.Key.Key_Space, Qt.Key.Key_Escape])
    qtbot.waitUntil(lambda: "Tools · 1" in picker.text(), timeout=WAIT_MS)
    assert opened.session.tools.chosen == ("weather",)
    assert "1 tool" in picker.accessibleDescription()


def test_a_server_switched_on_from_the_tools_button_by_keyboard(qtbot, tmp_path):
    """A server configured but switched off: the tools button's "Manage tool servers…" (M)
    opens Settings at its Tools tab, Space on the server's row switches it on, Esc closes
    Settings, and the button then offers it; all from the keyboard."""
    with window_with_tools(qtbot, tmp_path, [ServerConfig(**{**weather().__dict__, "enabled": False})]) as opened:
        picker = opened.window.tool_calls.picker

        in_menu(qtbot, picker, [Qt.Key.Key_M])  # Manage tool servers…
        qtbot.waitUntil(lambda: opened.window._settings_dialog is not None
                        and opened.window._settings_dialog.isVisible(), timeout=WAIT_MS)
        dialog = opened.window._settings_dialog
        assert dialog.tabs.currentWidget() is dialog.tools
        table = dialog.tools.page.table
        table.setFocus()
        table.selectRow(0)
        QTest.keyClick(table, Qt.Key.Key_Space)  # switched on
        assert opened.tool_servers.config("weather").enabled
        QTest.keyClick(dialog, Qt.Key.Key_Escape)
        assert not dialog.isVisible()
        in_menu(qtbot, picker, [Qt.Key.Key_Down, Qt.Key.Key_Space, Qt.Key.Key_Escape])
        qtbot.waitUntil(lambda: "Tools · 1" in picker.text(), timeout=WAIT_MS)
