"""Remote models in the window, driven as a user drives it: Add server (typing into the dialog,
Test connection, Save), the server's model in the model list and the selector, loading it with
Enter, a conversation typed and sent with Enter, Stop mid-reply; an unreachable server's row;
the parameters a server decides.

The conversation runs against llama-cpp-python's own OpenAI-compatible server on the real
Gemma (tests/support/remote_servers.py, started once per test session); failures and odd listings
come from the misbehaving stand-in. Model files are scripted (tests/support/scripted_backend.py):
the local side is not what is tested here, only that it keeps working beside servers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox, QTextBrowser
from support.modal_answers import answering
from support.remote_gui import memory_keyring, mixed_opener  # noqa: F401 - a fixture
from support.remote_servers import free_port, llama_server, stand_in  # noqa: F401 - fixtures
from support.scripted_window import find_action
from support.window_stack import SETTINGS_FILE, WINDOW_SIZE, ModelStack, Shown, WindowStack

from app.engine.types import ServerConfig
from app.ui.models.add_server_dialog import AddServerDialog
from app.ui.models.table import FILE_ROLE, REMOTE_ROLE, UNUSABLE_ROLE, Column
from app.ui.widgets.colors import MIN_CONTRAST, worst_contrast

WAIT_MS = 10_000
REPLY_MS = 30_000  # the real Gemma on llama_cpp.server: well under a second for a short reply


class RemoteWindow:
    """The main window over a bridge that loads files from a script and servers' models for
    real, with a settings file in `folder`; closes what it opened."""

    def __init__(self, qtbot, script, folder: Path, servers: list[ServerConfig] = ()):
        self.qtbot = qtbot
        self.ini = folder / SETTINGS_FILE
        model_stack = ModelStack.start(folder, opener=mixed_opener(script), servers=servers)
        self.settings, self.bridge, self.models = model_stack.settings, model_stack.bridge, model_stack.models
        self.stack = WindowStack.open(qtbot, model_stack, folder, shown=Shown.ACTIVE, size=WINDOW_SIZE, servers=True,
                                      wait_ms=WAIT_MS)
        self.servers, self.store, self.downloads, self.window = (
            self.stack.servers, self.stack.store, self.stack.downloads, self.stack.window)
        self.picker = self.window.picker

    def remote_row(self, predicate=lambda entry: True) -> int:
        """The model row (in the table's own order) of the first server row `predicate` likes,
        once the server has answered."""
        def found():
            return next((row for row in range(self.picker.model.rowCount())
                         if hasattr(entry := self.picker.model.entry(row), "server") and predicate(entry)), None)

        self.qtbot.waitUntil(lambda: found() is not None, timeout=WAIT_MS)
        return found()

    def cell(self, row: int, column: Column, role=Qt.ItemDataRole.DisplayRole):
        return self.picker.model.index(row, column).data(role)

    def select(self, row: int) -> None:
        """Select a row with the keyboard's focus on the table, as a click would leave it."""
        view = self.picker.view
        index = self.picker.proxy.mapFromSource(self.picker.model.index(row, Column.NAME))
        view.setFocus()
        view.setCurrentIndex(index)
        view.selectRow(index.row())

    def type_and_send(self, text: str) -> None:
        edit = self.window.composer.edit
        edit.setFocus()
        QTest.keyClicks(edit, text)
        QTest.keyClick(edit, Qt.Key.Key_Return)

    def set_spin(self, spin, value: int) -> None:
        """Type a number into a spin box and press Enter, as a user does."""
        spin.setFocus()
        spin.lineEdit().selectAll()
        QTest.keyClicks(spin, str(value))
        QTest.keyClick(spin, Qt.Key.Key_Enter)
        assert spin.value() == value

    def close(self) -> None:
        self.stack.close()


@pytest.fixture
def opened(qtbot, script, tmp_path, memory_keyring):  # noqa: F811 - the fixture imported above
    windows = []

    def open_window(servers: list[ServerConfig] = ()) -> RemoteWindow:
        windows.append(RemoteWindow(qtbot, script, tmp_path, servers))
        return windows[-1]

    yield open_window
    for window in windows:
        window.close()


def test_a_conversation_with_a_model_on_a_server_added_through_the_dialog(
        opened, qtbot, llama_server, memory_keyring):  # noqa: F811
    remote = opened()
    window = remote.window
    find_action(window, "Add server").trigger()
    dialog = window.findChild(AddServerDialog)
    assert dialog is not None and dialog.isVisible() and not dialog.save_button.isEnabled()
    QTest.keyClicks(dialog.address_edit, llama_server.base_url)
    QTest.keyClicks(dialog.name_edit, "Lab box")
    QTest.keyClicks(dialog.key_edit, "sk-secret")
    assert dialog.key_edit.displayText() != "sk-secret"  # echoed as dots
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.result_label.text().startswith("Connected"), timeout=WAIT_MS)
    assert "offers 1 model" in dialog.result_label.text()
    QTest.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    window.activateWindow()  # the window's shortcuts (Esc: Stop) need it active again
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)

    # The key is in the keyring, never in the settings file.
    remote.settings.sync()
    assert "sk-secret" not in remote.ini.read_text(encoding="utf-8")
    assert memory_keyring.secrets == {("Hearth", f"server:{llama_server.base_url}"): "sk-secret"}

    # The server's model in the list, marked remote, its context "—" (llama_cpp.server does not say).
    row = remote.remote_row()
    assert remote.cell(row, Column.NAME, FILE_ROLE) == "remote · Lab box" and remote.cell(row, Column.NAME, REMOTE_ROLE)
    assert remote.cell(row, Column.CONTEXT) == "—" and remote.cell(row, Column.TEMPLATE) == "server"
    assert "remote model on Lab box" in remote.cell(row, Column.NAME, Qt.ItemDataRole.AccessibleTextRole)
    assert any("remote · Lab box" in window.chat_header.combo.itemText(i) for i in range(window.chat_header.combo.count()))

    remote.select(row)
    assert remote.picker.details.text().startswith("Remote model on Lab box")
    with qtbot.waitSignal(remote.models.modelLoaded, timeout=WAIT_MS) as loaded:
        QTest.keyClick(remote.picker.view, Qt.Key.Key_Return)
    description = loaded.args[0]
    assert description.is_remote and description.source.server.api_key == "sk-secret"  # from the keyring
    assert window.model_label.text().endswith("· Lab box (remote)")
    assert window.context_label.text() == "Context 0"  # no limit: the server did not say it
    assert "remote · Lab box" in window.chat_header.combo.currentText()
    assert remote.settings.last_source.settings_key == description.source.settings_key

    remote.set_spin(window.parameters.max_tokens, 12)
    window.parameters.fixed_seed.click()  # a fixed seed: the same reply every run
    chunks = []
    window.session.replyChunk.connect(chunks.append)
    with qtbot.waitSignal(window.session.replyFinished, timeout=REPLY_MS) as finished:
        remote.type_and_send("Name a colour.")
    reply = finished.args[0]
    assert reply.text and chunks and "".join(chunks) == reply.text  # streamed, then the whole
    stored = window.session.messages()[-1]
    assert stored.role == "assistant" and stored.content == reply.text and stored.status == "complete"
    assert stored.model == description.record_name and stored.model.endswith(" @ Lab box")
    assert stored.stats.stop_reason in ("length", "end_of_turn") and stored.stats.tokens_per_s > 0
    assert stored.stats.ttft_s > 0 and stored.params["max_tokens"] == 12
    assert window.speed_label.text().endswith(" s") and "tok/s" in window.speed_label.text()
    # llama_cpp.server sends no usage: the footer says the count is the server's to give.
    assert stored.stats.completion_tokens is None
    assert "token count not reported by the server" in window.chat.findChild(QTextBrowser).toPlainText()

    # Stop mid-reply: the text so far is kept, as stopped.
    remote.set_spin(window.parameters.max_tokens, 400)
    chunks.clear()
    with qtbot.waitSignal(window.session.replyFinished, timeout=REPLY_MS) as finished:
        remote.type_and_send("Tell me a long story about a lighthouse keeper.")
        qtbot.waitUntil(lambda: bool(chunks), timeout=REPLY_MS)
        QTest.keyClick(window.composer.edit, Qt.Key.Key_Escape)  # Esc: Stop
    stopped = finished.args[0]
    assert stopped.status == "cancelled" and stopped.stats.stop_reason == "cancelled"
    assert stopped.text.startswith(chunks[0]) and stopped.stats.completion_tokens is None  # no usage sent
    assert window.session.messages()[-1].content == stopped.text and window.session.messages()[-1].status == "cancelled"


def test_an_unreachable_server_shows_its_row_and_files_still_load(opened, qtbot, gemma_path):
    gone = ServerConfig(f"http://127.0.0.1:{free_port()}/v1", "Gone")
    remote = opened([gone])
    row = remote.remote_row()
    reason = remote.cell(row, Column.NAME, UNUSABLE_ROLE)
    assert remote.cell(row, Column.NAME) == "Gone" and "refused the connection" in reason
    assert remote.cell(row, Column.ARCHITECTURE) == "⚠ can't be used"
    assert remote.cell(row, Column.NAME, Qt.ItemDataRole.ForegroundRole) is not None  # muted, like a broken file
    assert "can't be used" in remote.cell(row, Column.NAME, Qt.ItemDataRole.AccessibleTextRole)
    assert "1 model, 1 that can't be used" in remote.picker.status_label.text()
    remote.select(row)
    assert not remote.picker.load_button.isEnabled() and remote.picker.details.text().startswith("⚠ Gone (")
    with qtbot.assertNotEmitted(remote.picker.modelChosen, wait=100):
        QTest.keyClick(remote.picker.view, Qt.Key.Key_Return)

    local = remote.picker.model.row_of(gemma_path)
    remote.select(local)
    with qtbot.waitSignal(remote.models.modelLoaded, timeout=WAIT_MS) as loaded:
        QTest.keyClick(remote.picker.view, Qt.Key.Key_Return)
    assert loaded.args[0].path == gemma_path

    # Remove forgets the server once the user says yes.
    remote.select(row)
    assert remote.picker.remove_button.isEnabled()
    with answering(answer=lambda box: box.button(QMessageBox.StandardButton.Yes).click()) as answered:
        QTest.mouseClick(remote.picker.remove_button, Qt.MouseButton.LeftButton)
    assert answered.titles == ["QMessageBox: Remove server"]
    assert remote.settings.servers == [] and remote.picker.model.remote_entries() == []


def test_a_servers_odd_listing_is_shown_as_text_and_rescan_lists_it_again(opened, qtbot, stand_in):  # noqa: F811
    remote = opened([ServerConfig(stand_in.url("hostile"), "Odd <b>box</b>")])
    row = remote.remote_row(lambda entry: entry.model is not None and entry.model.model_id == "fine")
    assert remote.cell(row, Column.CONTEXT) == "8,192"  # vLLM's max_model_len
    assert remote.cell(row, Column.NAME, FILE_ROLE) == "remote · Odd <b>box</b>"  # shown as text, not markup
    assert "&lt;b&gt;" in remote.cell(row, Column.NAME, Qt.ItemDataRole.ToolTipRole)
    evil = remote.remote_row(lambda entry: entry.model is not None and entry.model.model_id.startswith("evil"))
    assert remote.cell(evil, Column.NAME) == "evil�[31m�name"  # control characters made visible
    combo = remote.window.chat_header.combo
    shown = next(i for i in range(combo.count()) if combo.itemText(i).startswith("fine"))
    assert combo.itemText(shown) == "fine (remote · Odd <b>box</b>)"
    assert "&lt;b&gt;" in combo.itemData(shown, Qt.ItemDataRole.ToolTipRole)

    index = remote.picker.proxy.mapFromSource(remote.picker.model.index(row, Column.NAME))
    centre = remote.picker.view.visualRect(index).center()
    with qtbot.waitSignal(remote.models.modelLoaded, timeout=WAIT_MS):  # a click, then the double-click
        QTest.mouseClick(remote.picker.view.viewport(), Qt.MouseButton.LeftButton, pos=centre)
        QTest.mouseDClick(remote.picker.view.viewport(), Qt.MouseButton.LeftButton, pos=centre)
    label = remote.window.model_label
    assert label.text() == "fine · Odd <b>box</b> (remote)" and label.textFormat() == Qt.TextFormat.PlainText
    assert remote.window.parameters.model_name.text() == "fine @ Odd <b>box</b>"
    assert "&lt;b&gt;" in remote.window.parameters.model_name.toolTip()

    listed = len(stand_in.requests)
    remote.picker.rescan_button.click()
    qtbot.waitUntil(lambda: len(stand_in.requests) > listed and remote.servers.listing_count == 0, timeout=WAIT_MS)


def test_a_remote_model_chosen_in_the_selector_and_what_the_parameters_say(opened, qtbot, stand_in):  # noqa: F811
    remote = opened([ServerConfig(stand_in.url("strict"), "Strict")])
    window = remote.window
    remote.remote_row()
    combo = window.chat_header.combo
    qtbot.waitUntil(lambda: any("remote · Strict" in combo.itemText(i) for i in range(combo.count())), timeout=WAIT_MS)
    combo.setFocus()
    with qtbot.waitSignal(remote.models.modelLoaded, timeout=WAIT_MS) as loaded:
        while "remote · Strict" not in combo.currentText():  # the keyboard's way down the list
            QTest.keyClick(combo, Qt.Key.Key_Down)
    assert loaded.args[0].is_remote

    panel = window.parameters
    assert panel.system_prompt_edit.isEnabled() and panel.temperature.isEnabled() and panel.top_k.isEnabled()
    assert not (panel.n_ctx.isEnabled() or panel.gpu_layers.isEnabled() or panel.cpu_threads.isEnabled())
    assert not panel.template_button.isEnabled() and panel.template_label.text() == "The server applies its own chat template"
    assert not panel.server_note.isHidden() and "Chosen by the server" in panel.server_note.text()
    assert not panel.repeat_last_n.isEnabled()  # never sent to a server
    for note in (panel.server_note, panel.remote_note):  # muted, and still 4.5:1
        assert worst_contrast(note.palette().color(note.foregroundRole()), panel.palette()) >= MIN_CONTRAST
    assert panel.remote_note.text() == ("Top-k, Min-p and Repeat penalty are llama.cpp/vLLM extensions: other "
                                        "servers may ignore them. Not sent to this server: Penalty window.")
    assert panel.reload_notice.isHidden()

    with qtbot.waitSignal(remote.models.descriptionChanged, timeout=WAIT_MS):  # the server refuses top_k…
        remote.type_and_send("Hello")
    qtbot.waitUntil(lambda: not window.session.busy, timeout=WAIT_MS)
    assert window.session.messages()[-1].content == "Hello there."
    assert not panel.top_k.isEnabled() and not panel.min_p.isEnabled()  # …so they are not sent any more
    assert panel.remote_note.text() == "Not sent to this server: Penalty window, Top-k, Min-p and Repeat penalty."

    # Unloading the remote model leaves the local list and the panel as with no model.
    with qtbot.waitSignal(remote.models.modelUnloaded, timeout=WAIT_MS):
        remote.picker.unload_button.click()
    assert panel.remote_note.isHidden() and panel.server_note.isHidden() and panel.top_k.isEnabled()
    assert QApplication.focusWidget() is not None
