"""Tool servers that misbehave, met in the window as a user meets them: each ends with a clear
message in the card and in what the model reads next, nothing of the conversation is lost, and
the window never waits on the server while it happens (support/stall.py's heartbeat; the
≤ 100 ms figure is bench/tool_stalls.py's).

The servers are support/mcp_servers/misbehaving.py's, whose crash, hang and huge modes also
offer `get_weather`, the call the scripted model writes, so the model's call meets them."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from support.mcp_servers.configs import misbehaving
from support.stall import STALL_LIMIT_MS, StallMeter
from support.tool_window import WAIT_MS, card_asking, exchange, tick, turn_over, weather, window_with_tools

from app.tool_servers.limits import RESULT_CAP_BYTES
from app.tool_servers.types import ServerState
from app.ui.chat.tool_card import CardState


@pytest.mark.parametrize(("mode", "timeout_s", "said"), [
    ("crash", 60.0, "crash"),  # the server's process ended mid-call
    ("hang", 1.5, "did not answer"),  # the per-server call timeout
    ("huge", 60.0, "result cut"),  # 12 MB: capped before the model sees it
])
def test_a_call_that_misbehaves_ends_with_a_message_and_the_window_keeps_going(qtbot, tmp_path, mode, timeout_s,
                                                                              said):
    server = misbehaving(mode, name=mode, enabled=True, call_timeout_s=timeout_s)
    with window_with_tools(qtbot, tmp_path, [server], step_limit=1) as opened:
        assert opened.tool_servers.warmed.wait(30)
        tick(qtbot, opened, mode, tools=None)
        qtbot.waitUntil(lambda: opened.tool_servers.status(mode).state is ServerState.READY, timeout=WAIT_MS)
        opened.type_and_send("Weather?")
        card = card_asking(qtbot, opened, 1)
        meter = StallMeter()
        meter.start()
        QTest.keyClick(card, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)
        qtbot.waitUntil(lambda: card.state is CardState.DONE, timeout=WAIT_MS)
        longest = meter.stop()
        assert longest <= STALL_LIMIT_MS, f"the window stalled {longest} ms"
        turn_over(qtbot, opened)  # the model went on after the message, asked to answer (step limit 1)
        stored = [m for m in opened.store.messages(opened.session.conversation_id) if m.role == "tool"]
        first = stored[0].tool_result
        assert said in first.content.lower(), first.content
        assert len(first.content.encode()) <= RESULT_CAP_BYTES + 200  # never the 12 MB
        assert first.error is (mode != "huge")
        if mode == "huge":  # 32 KB of "x" is more than this model's context holds: said, not crashed
            assert "tool's result is too long" in opened.window.statusBar().currentMessage()
        else:
            assert [role for role, _ in exchange(opened)] == ["user", "assistant", "tool", "assistant"]


def test_a_broken_server_is_its_own_row_and_the_others_work(qtbot, tmp_path):
    servers = [misbehaving("garbage", enabled=True), misbehaving("many", enabled=True), weather()]
    with window_with_tools(qtbot, tmp_path, servers) as opened:
        managers = opened.tool_servers
        assert managers.warmed.wait(30)  # the SDK's import, as Hearth starts (owners/tool_servers.py)
        meter = StallMeter()
        meter.start()
        for name in ("garbage", "many", "weather"):
            tick(qtbot, opened, name, tools=None)
        qtbot.waitUntil(lambda: managers.status("garbage").state is ServerState.FAILED
                        and managers.status("many").state is ServerState.READY
                        and managers.status("weather").state is ServerState.READY, timeout=WAIT_MS)
        assert meter.stop() <= STALL_LIMIT_MS
        picker = opened.window.tool_calls.picker
        rows = {action.text().split(" · ")[0]: action for action in picker.server_menu.actions() if action.isCheckable()}
        assert not rows["garbage"].isEnabled() and "speaks garbage" in rows["garbage"].text()
        many = managers.status("many")
        assert len(many.tools) == 391 and len(many.skipped) == 9
        assert all("<" not in tool.name and "\u202e" not in tool.name for tool in many.tools)

        opened.type_and_send("Weather?")  # 392 tools do not fit this model's 4,096 tokens: said so
        turn_over(qtbot, opened)
        said = opened.window.statusBar().currentMessage()
        assert "392 tools offered" in said and "Tools button" in said

        tick(qtbot, opened, "many", tools=1)  # unticked: weather's one tool is left
        opened.type_and_send("Weather?")
        card = card_asking(qtbot, opened, 1)
        assert card.pending.server == "weather"
        QTest.keyClick(card, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)
        qtbot.waitUntil(lambda: card.state is CardState.DONE, timeout=WAIT_MS)
        opened.session.stop()
        turn_over(qtbot, opened)
        assert ("tool", "Sunny in Paris, 21 °C.") in exchange(opened)
