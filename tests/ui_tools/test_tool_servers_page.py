"""Settings → Tools, driven from the keyboard: the list of servers (switched on and off with
Space, edited with Enter, removed with Delete after asking), the editor for one server (stdio or
HTTP, arguments split as a shell splits them, secrets masked until shown), the import's file
chooser, and the step limit."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox
from support.widget_walk import unnamed_widgets
from tool_helpers import active_window

from app.tool_servers.limits import CALL_TIMEOUT_S, STEP_LIMIT
from app.tool_servers.types import ListedTool, ServerConfig, ServerState, ServerStatus, Transport
from app.ui.dialogs.tool_server_editor import ToolServerEditor
from app.ui.dialogs.tool_servers import ToolServersPage

TIME = ServerConfig("time", Transport.STDIO, command="uvx", args=("mcp-server-time", "--local-timezone", "Europe/Zurich"),
                    env=(("TZ_TOKEN", "s3cret"),))
REMOTE = ServerConfig("remote", Transport.HTTP, url="https://tools.example/mcp", headers=(("Authorization", "Bearer abc"),),
                      enabled=False)


@pytest.fixture
def page(qtbot):
    page = ToolServersPage()
    page.holder = active_window(qtbot, page, 640, 420)
    page.set_configs([TIME, REMOTE])
    page.set_statuses([ServerStatus("time", ServerState.READY, (ListedTool("time", "now"), ListedTool("time", "zone"))),
                       ServerStatus("remote", ServerState.FAILED, reason="401 <b>Unauthorized</b>")])
    return page


def edited(page) -> list[list[ServerConfig]]:
    got: list[list[ServerConfig]] = []
    page.configsEdited.connect(got.append)
    return got


def opened_editor(page, qtbot) -> ToolServerEditor:
    """The editor the page opened, active (as a window manager makes a new dialog)."""
    qtbot.waitUntil(lambda: page.editor is not None and page.editor.isVisible())
    editor = page.editor
    qtbot.waitExposed(editor)
    editor.activateWindow()
    qtbot.waitUntil(editor.isActiveWindow)
    return editor


def cells(page) -> list[list[str]]:
    table = page.table
    return [[table.item(row, column).text() for column in range(3)] for row in range(table.rowCount())]


def test_the_list_shows_each_server_its_kind_and_state(page):
    assert cells(page) == [["time", "Command", "Ready · 2 tools"], ["remote", "Address", "Off"]]
    assert page.table.item(0, 0).checkState() == Qt.CheckState.Checked
    page.set_configs([TIME, ServerConfig("remote", Transport.HTTP, url="https://tools.example/mcp")])
    assert cells(page)[1][2] == "Failed: 401 <b>Unauthorized</b>", "shown as item text, not rich text"
    assert "&lt;b&gt;" in page.table.item(1, 2).toolTip()
    assert unnamed_widgets(page.window()) == []


def test_space_switches_the_selected_server_on(page, qtbot):
    got = edited(page)
    page.table.setFocus()
    page.table.selectRow(1)
    page.table.setCurrentCell(1, 2)  # the keyboard on the state, not the tick
    qtbot.keyClick(page.table, Qt.Key.Key_Space)
    assert [c.enabled for c in got[-1]] == [True, True] and page.table.item(1, 0).checkState() == Qt.CheckState.Checked


def test_delete_asks_then_removes(page, qtbot, monkeypatch):
    got = edited(page)
    answers = iter([QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes])
    asked = []

    def answer(box):
        asked.append(box.textFormat())  # the name is the server's or a file's: never rendered as HTML
        return next(answers)

    monkeypatch.setattr(QMessageBox, "exec", answer)
    page.table.setFocus()
    page.table.selectRow(0)
    qtbot.keyClick(page.table, Qt.Key.Key_Delete)
    assert got == []
    qtbot.keyClick(page.table, Qt.Key.Key_Delete)
    assert got == [[REMOTE]] and cells(page) == [["remote", "Address", "Off"]]
    assert asked == [Qt.TextFormat.PlainText] * 2


def test_add_a_stdio_server_by_keyboard(page, qtbot):
    got = edited(page)
    qtbot.keyClick(page.add_button, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)
    editor = opened_editor(page, qtbot)
    assert QApplication.focusWidget() is editor.name_edit
    assert not editor.ok_button.isEnabled() and editor.problem.text() == "Give the server a name."
    qtbot.keyClicks(editor.name_edit, "time")
    assert editor.problem.text() == "Another server has this name."
    editor.name_edit.setText("files")
    qtbot.keyClick(editor, Qt.Key.Key_C, Qt.KeyboardModifier.AltModifier)
    assert QApplication.focusWidget() is editor.command_edit
    qtbot.keyClicks(editor.command_edit, "npx")
    qtbot.keyClicks(editor.args_edit, '-y @modelcontextprotocol/server-filesystem "/home/me/My Notes"')
    qtbot.keyClicks(editor.env.box, "API_KEY=abc=def")
    qtbot.keyClick(editor.env.box, Qt.Key.Key_Return)
    qtbot.keyClicks(editor.env.box, "bad line")
    assert editor.problem.text() == "Environment: Line 2 is not NAME=value." and not editor.ok_button.isEnabled()
    editor.env.box.setPlainText("API_KEY=abc=def")
    editor.timeout.setValue(90)
    qtbot.keyClick(editor.ok_button, Qt.Key.Key_Space)
    assert got[-1][-1] == ServerConfig("files", Transport.STDIO, command="npx",
                                       args=("-y", "@modelcontextprotocol/server-filesystem", "/home/me/My Notes"),
                                       env=(("API_KEY", "abc=def"),), call_timeout_s=90.0)
    qtbot.waitUntil(lambda: page.editor is None)


def test_edit_an_http_server_whose_headers_stay_masked_until_shown(page, qtbot):
    got = edited(page)
    page.table.setFocus()
    page.table.selectRow(1)
    qtbot.keyClick(page.table, Qt.Key.Key_Return)
    editor = opened_editor(page, qtbot)
    assert editor.pages.currentIndex() == 1 and editor.url_edit.text() == "https://tools.example/mcp"
    box = editor.headers.box
    assert box.toPlainText() == "Authorization: ••••••••" and box.isReadOnly()
    assert "abc" not in box.toPlainText()
    qtbot.keyClick(editor, Qt.Key.Key_V, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(editor.headers.show_values.isChecked)
    assert box.toPlainText() == "Authorization: Bearer abc" and not box.isReadOnly()
    box.setPlainText("Authorization: Bearer xyz\nX-Team: blue")
    editor.url_edit.setText("ftp://nope")
    assert editor.problem.text().startswith("The address must start with http")
    editor.url_edit.setText("https://tools.example/v2/mcp")
    editor.accept()
    assert got[-1][1] == ServerConfig("remote", Transport.HTTP, url="https://tools.example/v2/mcp", enabled=False,
                                      headers=(("Authorization", "Bearer xyz"), ("X-Team", "blue")))


def test_the_editor_splits_and_joins_arguments_as_a_shell(qtbot):
    editor = ToolServerEditor(TIME, set())
    editor.holder = active_window(qtbot, editor)
    assert editor.args_edit.text() == "mcp-server-time --local-timezone Europe/Zurich"
    assert editor.env.box.toPlainText() == "TZ_TOKEN=••••••••" and editor.timeout.value() == CALL_TIMEOUT_S
    editor.args_edit.setText('--flag "unclosed')
    assert "cannot be split" in editor.problem.text()
    editor.args_edit.setText("--root 'a b'")
    assert editor.config().args == ("--root", "a b") and editor.config().env == (("TZ_TOKEN", "s3cret"),)
    editor.kind.setCurrentIndex(1)
    assert editor.pages.currentIndex() == 1 and editor.config() is None
    assert unnamed_widgets(editor) == []


def test_import_and_the_step_limit(page, qtbot, monkeypatch):
    files = []
    page.importRequested.connect(files.append)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args: ("/home/me/mcp.json", "MCP configuration (*.json)"))
    qtbot.keyClick(page.import_button, Qt.Key.Key_I, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: files == ["/home/me/mcp.json"])
    steps = []
    page.stepLimitChanged.connect(steps.append)
    assert page.steps.value() == STEP_LIMIT
    page.set_step_limit(5)
    assert steps == [] and page.steps.value() == 5
    page.steps.setFocus()
    qtbot.keyClick(page.steps, Qt.Key.Key_Up)
    assert steps == [6]
