"""The tools button beside the message box: its count, its menu of servers worked from the
keyboard (ticking stays in the menu), failed servers greyed with their reason, names inert."""

from __future__ import annotations

from PySide6.QtCore import Qt
from support.menus import in_menu
from support.widget_walk import unnamed_widgets
from tool_helpers import active_window

from app.tool_servers.types import ListedTool, ServerState, ServerStatus
from app.ui.chat.tools_picker import ToolsPicker


def tools(server: str, count: int) -> tuple[ListedTool, ...]:
    return tuple(ListedTool(server, f"tool_{i}") for i in range(count))


STATUSES = [
    ServerStatus("files", ServerState.READY, tools("files", 3)),
    ServerStatus("weather", ServerState.READY, tools("weather", 2)),
    ServerStatus("slow", ServerState.STARTING),
    ServerStatus("broken", ServerState.FAILED, reason="command not found: mcp-broken"),
    ServerStatus("spare", ServerState.OFF),
]


def picker_in_window(qtbot) -> ToolsPicker:
    picker = ToolsPicker()
    picker.holder = active_window(qtbot, picker, 300, 80)
    picker.set_statuses(STATUSES)
    return picker


def rows(picker: ToolsPicker) -> list[tuple[str, bool, bool]]:
    """(text, enabled, checked) of each server row."""
    return [(a.text(), a.isEnabled(), a.isChecked()) for a in picker.server_menu.actions()
            if a.isCheckable()]


def test_the_count_says_how_many_tools_the_chosen_servers_offer(qtbot):
    picker = picker_in_window(qtbot)
    assert picker.text() == "No tools ▾" and "No tools" in picker.accessibleDescription()
    picker.set_chosen(frozenset({"files", "weather", "broken"}))
    assert picker.text() == "Tools · 5 ▾" and picker.tool_count() == 5
    description = picker.accessibleDescription()
    assert description.startswith("5 tools from 3 servers") and "broken failed: command not found" in description
    picker.set_chosen(frozenset({"slow"}))
    assert picker.text() == "Tools · … ▾" and "1 server not started yet" in picker.accessibleDescription()
    assert picker.accessibleName() == "Tools for this conversation"
    assert unnamed_widgets(picker.window()) == []


def test_failed_and_switched_off_servers_are_greyed_with_their_reason(qtbot):
    picker = picker_in_window(qtbot)
    assert rows(picker) == [("files · 3 tools", True, False), ("weather · 2 tools", True, False),
                            ("slow · starting…", True, False),
                            ("broken · failed: command not found: mcp-broken", False, False),
                            ("spare · switched off in Settings → Tools", False, False)]
    broken = next(a for a in picker.server_menu.actions() if a.text().startswith("broken"))
    assert "command not found: mcp-broken" in broken.toolTip()


def test_the_menu_by_keyboard_ticks_several_servers_then_closes_on_escape(qtbot):
    picker = picker_in_window(qtbot)
    picker.setFocus()
    chosen: list[frozenset[str]] = []
    picker.chosenChanged.connect(chosen.append)
    steps = []
    in_menu(qtbot, picker, [Qt.Key.Key_Down, Qt.Key.Key_Space, Qt.Key.Key_Down, Qt.Key.Key_Return], steps)
    assert steps == [True]  # still open after two ticks; Esc closed it
    assert chosen == [frozenset({"files"}), frozenset({"files", "weather"})]
    assert picker.text() == "Tools · 5 ▾" and picker.chosen() == frozenset({"files", "weather"})


def test_manage_tool_servers_from_the_menu(qtbot):
    picker = picker_in_window(qtbot)
    asked = []
    picker.manageRequested.connect(lambda: asked.append(True))
    in_menu(qtbot, picker, [Qt.Key.Key_M])  # its mnemonic
    qtbot.waitUntil(lambda: asked == [True])


def test_names_are_inert_and_no_mnemonic(qtbot):
    picker = picker_in_window(qtbot)
    picker.set_statuses([ServerStatus("<b>R&D</b>\u202e\x07", ServerState.FAILED, reason="<i>boom</i>\nline 2")])
    (text, enabled, _checked), = rows(picker)
    assert text == "<b>R&&D</b>\ufffd\ufffd · failed: <i>boom</i> line 2" and not enabled
    picker.set_chosen(frozenset({"<b>R&D</b>\u202e\x07"}))
    assert "\u202e" not in picker.accessibleDescription() and "&lt;i&gt;" in picker.toolTip()
